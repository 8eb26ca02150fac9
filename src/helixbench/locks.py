"""One process at a time across jobs: an advisory lock on a file (``flock``).

Jobs that would each compute the same thing (a prefix's keys and values, a
background's embeddings) or append to the same file (the upstream lock) take
turns: the first does the work, the others wait and find it done.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(path: Path) -> Iterator:
    """Hold the lock of ``path`` (created if missing); yields the open file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield fh
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
