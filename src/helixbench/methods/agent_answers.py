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
