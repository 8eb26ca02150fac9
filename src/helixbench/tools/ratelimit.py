"""A request budget shared by every process on the machine: one small file per budget.

Each budget is a file holding the time of the next free slot. A caller takes the
file's lock, reserves the slot ``max(now, next)``, moves ``next`` one interval on,
releases the lock and sleeps until its slot. Requests so leave evenly spaced at
most once per interval, however many processes (8 Snakemake jobs, or cluster
jobs on a shared file system) draw on the budget. A process that dies after
reserving only wastes its slot.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
# A slot woken up for this much after its time is given up (at most LATE_RETRIES
# times a call): less than the 4% margin the executor keeps under a 3/s limit.
LATE_S = 0.02
LATE_RETRIES = 3


class RateLimiter:
    def __init__(self, path: Path, interval: float):
        if interval < 0:
            raise ValueError("interval must be >= 0")
        self.path = Path(path)
        self.interval = float(interval)

    @classmethod
    def for_budget(cls, state_dir: Path, name: str, interval: float) -> RateLimiter:
        return cls(Path(state_dir) / (_UNSAFE.sub("_", name) + ".next"), interval)

    def reserve(self) -> float:
        """Reserve the next slot; returns its time (``time.time()`` scale)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            try:
                next_free = float(raw)
            except ValueError:  # a new (empty) budget file
                next_free = 0.0
            slot = max(time.time(), next_free)
            data = repr(slot + self.interval).encode("ascii")
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        finally:
            os.close(fd)  # closing releases the lock
        return slot

    def acquire(self) -> float:
        """Wait for the next slot; returns the seconds waited.

        A caller that wakes up late (a busy machine, many threads) gives its slot up and
        takes the next: sent late beside callers sent on time, its request would bunch
        with theirs, and a server that counts requests per second would refuse one."""
        waited = 0.0
        for _ in range(LATE_RETRIES + 1):
            slot = self.reserve()
            wait = slot - time.time()
            if wait > 0:
                time.sleep(wait)
                waited += wait
            if time.time() - slot <= LATE_S:
                break
        return waited
