"""The answer in an agent's output: a JSON object's ``answer`` (on stdout or in its
answer file, read as the regular file it left) or an ``Answer:`` line; what the
agent reports of itself; an answer past the size an answer can be.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from .. import secrets

# An answer is a name, a list or a sentence: past this it is the agent's output gone
# wrong, kept as that question's error (the record holds its start).
MAX_ANSWER_CHARS = 100_000
# An answer file's bytes: the longest answer, each character escaped in JSON, and the
# runner's report beside it. A larger file is not read (it could be mostly a hole).
MAX_ANSWER_FILE_BYTES = 6 * MAX_ANSWER_CHARS + (1 << 20)
# What an agent's answer object may say of itself: its own error's name, a runner's
# report (whose numbers the report sums); past these it says nothing.
MAX_ERROR_CHARS = 200
MAX_REPORT_BYTES = 64 * 1024


class AnswerFileTooLarge(Exception):
    """An answer file past :data:`MAX_ANSWER_FILE_BYTES`; ``size`` its size."""

    def __init__(self, size: int):
        super().__init__(f"an answer file of {size} bytes")
        self.size = size


def read_own_file(path: Path, limit: int = MAX_ANSWER_FILE_BYTES) -> str | None:
    """An answer file as the agent left it: a regular file, never through a link (one
    could point at a host file the run job can read and the agent cannot), of at most
    ``limit`` bytes (AnswerFileTooLarge past it, nothing of it read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # a fifo or a device: not an answer
            return None
        if info.st_size > limit:
            raise AnswerFileTooLarge(info.st_size)
        return f.read(limit).decode("utf-8", "replace")


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
    ``agent_no_answer`` where it holds no answer. What the agent says of itself is
    bounded: an error of one line (helixbench's own names, ``agent_...``, are not its to
    give), a report that is a JSON object of finite numbers within
    :data:`MAX_REPORT_BYTES`."""
    error = None if answer is not None else "agent_no_answer"
    if reply.get("error"):
        error = " ".join(str(reply["error"]).split())[:MAX_ERROR_CHARS] or error
        if error.startswith("agent_"):
            error = f"reported: {error}"
    return error, own_report(reply.get("runner"))


def own_report(report) -> dict | None:
    """A runner's report as a record may keep it, or None: a JSON object (secrets
    removed) of at most :data:`MAX_REPORT_BYTES`, with no number past what a float holds."""
    if not isinstance(report, dict):
        return None
    try:
        text = json.dumps(report, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return None
    if len(text) > MAX_REPORT_BYTES:
        return None
    kept = json.loads(secrets.redact(text))
    return kept if _finite(kept) else None


def _finite(value, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if isinstance(value, dict):
        return all(_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v, depth + 1) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) < 2**63
    return True


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
