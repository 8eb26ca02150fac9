"""What the originals' runners share (standard library only: they run in the
originals' own environments, where helixbench is not installed)."""

import contextlib
import json
import threading
import time


class ScaledSleep:
    """``time.sleep`` times ``scale`` while installed; it counts what upstream asked
    and what was slept, for the record."""

    def __init__(self, scale: float):
        self.scale = scale
        self.asked = self.slept = 0.0
        self.calls = 0
        self._sleep = time.sleep
        self._lock = threading.Lock()

    def __call__(self, seconds: float) -> None:
        seconds = max(float(seconds), 0.0)
        with self._lock:
            self.calls += 1
            self.asked += seconds
            self.slept += seconds * self.scale
        self._sleep(seconds * self.scale)

    @contextlib.contextmanager
    def installed(self):
        time.sleep = self
        try:
            yield self
        finally:
            time.sleep = self._sleep

    def report(self) -> dict:
        return {
            "scale": self.scale,
            "calls": self.calls,
            "asked_s": round(self.asked, 3),
            "slept_s": round(self.slept, 3),
        }


def write_answer(path: str, answer, error, report: dict) -> None:
    """The answer file the agent method reads: the answer, the system's own error
    (None: it answered) and what the runner reports of the run."""
    with open(path, "w") as f:
        json.dump({"answer": answer, "error": error, "runner": report}, f)
