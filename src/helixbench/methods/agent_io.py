"""An agent process's output, read under its caps, and the answer in it.

The caps: the bytes it writes (stdout and stderr together, ``limits.output_mb``),
the wall time (``timeout_s``) and, in a sandbox, the CPU seconds its processes used
(published by the sandbox's first process). Past any of them the process is killed,
and the cap named. The answer: a JSON object's ``answer`` (on stdout or in its
answer file, read as the regular file it left) or an ``Answer:`` line.
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import secrets

TICK_S = 0.2
# An answer is a name, a list or a sentence: past this it is the agent's output gone
# wrong, kept as that question's error (the record holds its start).
MAX_ANSWER_CHARS = 100_000
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


def read_own_file(path: Path) -> str | None:
    """An answer file as the agent left it: a regular file, never through a link (one
    could point at a host file the run job can read and the agent cannot)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a fifo or a device: not an answer
            return None
        return f.read().decode("utf-8", "replace")


def read_answer(text: str | None) -> str | None:
    """An agent's answer: a JSON object's ``answer`` (its last such line), else its last
    line that starts with ``Answer:``; None where it holds neither."""
    if not text:
        return None
    whole = json_object(text)
    if whole is not None and "answer" in whole:
        return None if whole["answer"] is None else str(whole["answer"])
    lines = [line.strip() for line in text.strip().splitlines()]
    for line in reversed(lines):
        found = json_object(line)
        if found is not None and "answer" in found:
            return None if found["answer"] is None else str(found["answer"])
    for line in reversed(lines):
        if line.lower().startswith("answer:"):
            return line
    return None


def answer_object(text: str | None) -> dict | None:
    """The JSON object that holds an agent's answer: the whole text, else its last line
    that is an object with ``answer``."""
    whole = json_object(text or "")
    if whole is not None:
        return whole
    for line in reversed((text or "").strip().splitlines()):
        found = json_object(line.strip())
        if found is not None and "answer" in found:
            return found
    return None


def reported_outcome(reply: dict, answer: str | None) -> tuple[str | None, dict | None]:
    """The question's error and the runner's report (secrets removed) that an answer
    object states: its own ``error`` (GeneGPT's lengthError) if any, else
    ``agent_no_answer`` where it holds no answer."""
    error = None if answer is not None else "agent_no_answer"
    if reply.get("error"):
        error = str(reply["error"])
    report = reply.get("runner")
    if report is not None:
        report = json.loads(secrets.redact(json.dumps(report)))
    return error, report


def json_object(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError):  # nested past Python's limit: not one
        return None
    return value if isinstance(value, dict) else None


def capped_answer(answer: str | None, error: str | None) -> tuple[str | None, str | None]:
    """An answer longer than :data:`MAX_ANSWER_CHARS` is that question's recorded error
    (``agent_answer_too_long``), its start kept: no agent's output can swell a record."""
    if answer is None or len(answer) <= MAX_ANSWER_CHARS:
        return answer, error
    cut = f"{answer[:MAX_ANSWER_CHARS]} [... {len(answer) - MAX_ANSWER_CHARS} more characters]"
    return cut, "agent_answer_too_long"
