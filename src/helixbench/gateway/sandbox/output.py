"""A sandboxed process's output, read under its caps: the bytes it writes (stdout and
stderr together), the wall time and the CPU seconds its processes used (published
by the sandbox's first process). Past any of them the process is killed, and the
cap named. Agents (:mod:`helixbench.methods.agent`) and code tools
(:mod:`helixbench.gateway.code`) are read so.
"""

from __future__ import annotations

import os
import queue
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

TICK_S = 0.2
STDERR_KEPT = 64 * 1024  # of a question's stderr, the end is kept (its tail is recorded)


@dataclass
class Caps:
    """What one question may use of the process: bytes of output, seconds of wall
    time and of CPU (None: not watched)."""

    output_bytes: int
    wall_s: float
    cpu_s: float | None = None


def run_once(process: subprocess.Popen, stdin: bytes, caps: Caps, cpu_used) -> tuple:
    """Feed ``stdin`` to ``process`` and read its output until it ends or reaches a cap
    (``cpu_used()``: its CPU seconds so far, or None): (stdout, stderr's end, the cap
    that stopped it or None; "wall" for the time)."""
    deadline = time.monotonic() + caps.wall_s
    out, err = bytearray(), bytearray()
    total = 0
    streams = {process.stdout.fileno(): out, process.stderr.fileno(): err}
    stdin_fd = process.stdin.fileno()
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        pending = memoryview(stdin)
        os.set_blocking(stdin_fd, False)
        selector.register(stdin_fd, selectors.EVENT_WRITE)
        stopped = None
        while selector.get_map() and stopped is None:
            for key, _ in selector.select(timeout=TICK_S):
                if key.fd == stdin_fd:
                    pending = _feed(selector, process, pending)
                    continue
                chunk = _read(key.fd)
                if chunk is None:  # nothing after all
                    continue
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                total += len(chunk)
                kept = streams[key.fd]
                kept += chunk
                if kept is err and len(err) > STDERR_KEPT:
                    del err[: len(err) - STDERR_KEPT]
                if total > caps.output_bytes:
                    stopped = "output"
                    break
            stopped = stopped or _over(deadline, caps, cpu_used)
    while stopped is None and process.poll() is None:  # its pipes closed, it runs on
        try:
            process.wait(timeout=min(TICK_S, max(0.01, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            stopped = _over(deadline, caps, cpu_used)
    if stopped is not None:
        kill(process)
    process.wait()
    if stopped == "output":
        del out[caps.output_bytes :]
    return bytes(out), bytes(err), stopped


def _feed(selector, process, pending: memoryview) -> memoryview:
    """Write what the pipe takes of ``pending``; close stdin once all is written or
    the agent stopped reading."""
    try:
        pending = pending[os.write(process.stdin.fileno(), pending[:65536]) :]
    except BlockingIOError:
        return pending
    except OSError:  # it closed its stdin: the rest is not for it
        pending = pending[:0]
    if not pending:
        selector.unregister(process.stdin.fileno())
        process.stdin.close()
    return pending


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _over(deadline: float, caps: Caps, cpu_used) -> str | None:
    if time.monotonic() >= deadline:
        return "wall"
    if caps.cpu_s is not None:
        used = cpu_used()
        if used is not None and used > caps.cpu_s:
            return "cpu"
    return None


class LineReader:
    """A long-lived agent's stdout as lines (each and all of a question's capped), and
    the end of its stderr; both count against the question's output cap."""

    def __init__(self, process: subprocess.Popen, line_cap: int):
        self.lines: queue.Queue = queue.Queue()
        self.errors: list[str] = []
        self.written = 0  # bytes of output since the question began
        self._lock = threading.Lock()
        self._cap = line_cap
        threading.Thread(target=self._pump, args=(process.stdout,), daemon=True).start()
        threading.Thread(target=self._collect, args=(process.stderr,), daemon=True).start()

    def begin(self) -> None:
        with self._lock:
            self.written = 0

    def _count(self, text: str) -> None:
        with self._lock:
            self.written += len(text)

    def _pump(self, stream) -> None:
        while line := stream.readline(self._cap + 1):
            self._count(line)
            self.lines.put(line)
        self.lines.put(None)

    def _collect(self, stream) -> None:
        while line := stream.readline(STDERR_KEPT):
            self._count(line)
            self.errors.append(line)
            del self.errors[:-200]


def kill(process: subprocess.Popen) -> None:
    """The process and its group (an agent's children; in a sandbox, killing
    ``unshare`` ends every process of the sandbox)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
