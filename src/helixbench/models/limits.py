"""How many requests are in flight to one model server, from every job of the machine.

A run job keeps many questions going at once (:mod:`helixbench.run.shard`), each
asking the model through one :class:`RequestLimit` per server and process:

- **a ceiling shared by every process** (the model's ``concurrency``): one small
  lock file per slot in the lock directory beside the caches, so all run jobs on
  the machine together hold at most that many requests, as the NCBI budget is
  shared (a cluster's nodes each hold their own; the Snakemake resource
  ``endpoint_<host>_<port>`` caps the jobs there);
- **an adaptive window within it**, the way congestion control finds a link's
  capacity: a reply that says the server is full (429, llama.cpp's full context
  pool, vLLM's queue, a timeout) shrinks the window to just under what was in
  flight (at most once per round trip, so one burst of refusals counts once); each
  window's worth of good replies widens it by one, up to the ceiling. Against a
  server that serves 32 at once and refuses the 33rd this settles at 29-32 in
  flight, where halving (classic AIMD) would average 24 (measured:
  ``perf/throughput.py --capacity 32``).

The window only paces requests; how often one is retried stays the model's own
policy (:mod:`.openai_api`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import threading
import time
from contextlib import contextmanager
from pathlib import Path

# Below this the window's shrink is "what was in flight, less 10%".
SHRINK = 0.9


class SlotFiles:
    """``n`` slots shared by every process of the machine: slot ``i`` is held while a
    process holds the lock of its file. Threads of one process never share a slot."""

    def __init__(self, directory: Path, name: str, n: int):
        self.directory = Path(directory)
        self.name = name
        self.n = n
        self._fds: dict[int, int] = {}
        self._held: set[int] = set()
        self._lock = threading.Lock()

    def _fd(self, i: int) -> int:
        if i not in self._fds:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / f"{self.name}.slot-{i}"
            self._fds[i] = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fds[i]

    def acquire(self) -> int:
        """Wait for a free slot; returns its number."""
        delay = 0.002
        while True:
            with self._lock:
                start = random.randrange(self.n)
                for k in range(self.n):
                    i = (start + k) % self.n
                    if i in self._held:
                        continue
                    try:
                        fcntl.flock(self._fd(i), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue
                    self._held.add(i)
                    return i
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.05)

    def release(self, i: int) -> None:
        with self._lock:
            fcntl.flock(self._fds[i], fcntl.LOCK_UN)
            self._held.discard(i)


class RequestLimit:
    """Requests in flight to one server from this process: at most the adaptive
    ``window``, and each holds one of the machine's ``ceiling`` slots."""

    def __init__(self, name: str, ceiling: int, lock_dir: Path | None = None):
        self.ceiling = max(1, int(ceiling))
        self.window = float(self.ceiling)
        self.in_flight = 0
        self.peak = 0
        self.shrinks = 0
        self._cond = threading.Condition()
        self._round_trip_s = 1.0  # smoothed latency of good replies
        self._last_shrink = float("-inf")
        self._slots = SlotFiles(lock_dir, name, self.ceiling) if lock_dir else None

    @contextmanager
    def request(self):
        """Hold one request's place: wait for the window, then for a machine slot."""
        with self._cond:
            while self.in_flight >= max(1, int(self.window)):
                self._cond.wait()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        slot = self._slots.acquire() if self._slots else None
        try:
            yield
        finally:
            if slot is not None:
                self._slots.release(slot)
            with self._cond:
                self.in_flight -= 1
                self._cond.notify()

    def succeeded(self, latency_s: float) -> None:
        """A good reply: one window of them widens the window by one."""
        with self._cond:
            self._round_trip_s += 0.2 * (latency_s - self._round_trip_s)
            if self.window < self.ceiling:
                self.window = min(self.ceiling, self.window + 1.0 / self.window)
                self._cond.notify_all()

    def overloaded(self) -> None:
        """The server said it is full: shrink to just under what was in flight, once
        per round trip (a burst of refusals is one signal)."""
        with self._cond:
            now = time.monotonic()
            if now - self._last_shrink < max(0.05, self._round_trip_s):
                return
            self._last_shrink = now
            self.window = max(1.0, min(self.window, self.in_flight) * SHRINK)
            self.shrinks += 1


_LIMITS: dict[tuple[str, str | None], RequestLimit] = {}
_LIMITS_LOCK = threading.Lock()


def limit_for(server: str, ceiling: int, lock_dir: Path | None) -> RequestLimit:
    """The process's one :class:`RequestLimit` of ``server`` (its base URL)."""
    name = "endpoint-" + hashlib.sha256(server.encode()).hexdigest()[:16]
    key = (server, str(lock_dir) if lock_dir else None)
    with _LIMITS_LOCK:
        if key not in _LIMITS or _LIMITS[key].ceiling != max(1, int(ceiling)):
            _LIMITS[key] = RequestLimit(name, ceiling, lock_dir)
        return _LIMITS[key]
