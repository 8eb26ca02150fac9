"""The record of one question's run, and the shard file that holds them.

A shard appends one JSON line per finished question to a ``.partial`` file (written
through at once, fsynced at least every second), so a killed job loses at most the
question it was on, and a power cut at most a second's work; on restart the
finished ids are skipped and a torn last line is dropped. Every record carries
the shard's ``run_key`` (a digest of everything that shapes its results): a
partial file left by another configuration is set aside as ``.partial.stale``,
never mixed in. The declared output is written (atomically) only when every
question of the shard is done, compressed with zstd (``.jsonl.zst``: about a tenth of
the lines' size); every reader of records inflates it
(:func:`helixbench.datasets.jsonfiles.read_text`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from . import secrets
from .datasets.jsonfiles import COMPRESSED, read_jsonl, stored_bytes

log = logging.getLogger("helixbench.transcripts")


@dataclass
class Event:
    """One step of a question's run: a model call, a tool call, or (geneagent) a claim
    and its verdict."""

    type: str  # "model", "tool" or "claim"
    index: int  # the model call it belongs to (0-based)
    data: dict
    latency_s: float = 0.0


@dataclass
class QuestionResult:
    """How one question's run ended, and every event on the way."""

    question_id: str
    header_sha256: str | None = None
    answer: str | None = None
    # None, or why there is no answer or only a stand-in for one: lengthError,
    # numError (GeneGPT's loop), model_error, model_miss (replay), parse_error,
    # tool_error, no_term (gene-set methods), missing_in_source and failed_in_source
    # (imported runs: the source has no answer, or says its run failed there).
    error: str | None = None
    events: list[Event] = field(default_factory=list)
    # A multiple-choice question's choices as shown, by their indices in the question's
    # own order (the answer is a letter of this order); kept in the record where set.
    presented: list[int] | None = None
    # The system's own confidence in its answer, where it states one (Hu et al.'s
    # prompt asks for it); kept in the record where set.
    confidence: float | None = None
    # The source's own verdict on an imported answer (LABBench2's: its value, its
    # grader's reason and the grader); kept in the record where set.
    published: dict | None = None

    def finish(self, answer: str | None, error: str | None = None) -> QuestionResult:
        self.answer, self.error = answer, error
        return self


# A power cut loses at most this much finished work (a process kill loses none).
FSYNC_INTERVAL_S = 1.0

# Fields that differ between two runs of the same inputs (wall-clock measurements).
TIMING_FIELDS = ("latency_s", "wall_s", "finished_at")


def to_record(result: QuestionResult, run: dict, wall_s: float) -> dict:
    # The record is serialised at once: a shallow copy of the result (not asdict's deep
    # one) is all it needs.
    record = {**run, **{f.name: getattr(result, f.name) for f in fields(result)}}
    for optional in ("presented", "confidence", "published"):
        if record[optional] is None:
            del record[optional]
    record["events"] = [vars(event) for event in result.events]
    record["wall_s"] = wall_s
    record["finished_at"] = time.time()
    return record


def without_timings(record: dict) -> dict:
    """A record with its wall-clock fields removed, for comparing runs."""
    out = {k: v for k, v in record.items() if k not in TIMING_FIELDS}
    out["events"] = [
        {k: v for k, v in e.items() if k not in TIMING_FIELDS} for e in record["events"]
    ]
    return out


def read_records(path: Path) -> list[dict]:
    return [sound_record(record) for record in read_jsonl(path)]


# The numbers of a record that the report sums or prints, where an event has them.
NUMBERS = (
    "count", "seconds", "cpu_s", "prompt_tokens", "completion_tokens", "bytes", "attempts",
    "prompt_chars", "latency_s",
)  # fmt: skip
MAX_NUMBER = 1e15


def sound_record(record: dict) -> dict:
    """``record``, or where a number the report reads is not one it can sum (a string, a
    NaN, past :data:`MAX_NUMBER`) or an event is not an event, the question's error
    (``record_invalid: ...``) with its events left out: one bad record is its
    question's error, never the run's."""
    problem = _record_problem(record)
    if problem is None:
        return record
    log.warning("question %s: %s", record.get("question_id"), problem)
    return {**record, "answer": None, "error": f"record_invalid: {problem}", "events": []}


def _record_problem(record: dict) -> str | None:
    if not _number(record.get("wall_s")):
        return "wall_s is not a number"
    events = record.get("events")
    if not isinstance(events, list):
        return "its events are not a list"
    for i, event in enumerate(events):
        data = event.get("data") if isinstance(event, dict) else None
        if not isinstance(data, dict) or not isinstance(event.get("type"), str):
            return f"event {i} is not an event"
        for key in NUMBERS:
            if key in data and not _number(data[key]):
                return f"event {i}: {key} is not a number the report can sum"
        if not _number(event.get("latency_s")):
            return f"event {i}: latency_s is not a number"
        routes = data.get("routes")
        if routes is not None and not (
            isinstance(routes, dict) and all(_number(n) for n in routes.values())
        ):
            return f"event {i}: routes are not counts"
    return None


def _number(value) -> bool:
    """None, or a finite int or float within :data:`MAX_NUMBER`."""
    if value is None:
        return True
    if type(value) is float or type(value) is int:  # (JSON's own: the common case, first)
        return -MAX_NUMBER <= value <= MAX_NUMBER
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return -MAX_NUMBER <= value <= MAX_NUMBER  # (False for NaN)


def complete_lines(data: bytes) -> tuple[list[dict], int]:
    """The records of a shard file's bytes, up to a last line torn by a kill or a
    corrupt line (what follows it is redone), and how many bytes they take."""
    complete = data[: data.rfind(b"\n") + 1]
    records, keep = [], 0
    for line in complete.splitlines(keepends=True):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
        keep += len(line)
    return records, keep


def first_of_each_question(records: list[dict]) -> list[dict]:
    """A duplicate line of a question is harmless: the first one counts."""
    seen, first = set(), []
    for record in records:
        if record["question_id"] not in seen:
            seen.add(record["question_id"])
            first.append(record)
    return first


def partial_path(output: Path) -> Path:
    """Where a shard's records are appended while it runs: JSON lines, never compressed
    (``shard-0-of-1.jsonl.partial`` for ``shard-0-of-1.jsonl.zst``)."""
    output = Path(output)
    return output.with_name(output.name.removesuffix(COMPRESSED) + ".partial")


def shard_output(path: Path) -> Path:
    """The declared output of the shard whose file (finished, partial, or an earlier
    version's uncompressed output) is ``path``: :func:`partial_path`'s inverse."""
    return path.with_name(path.name.split(".jsonl")[0] + ".jsonl" + COMPRESSED)


class ShardWriter:
    """Appends records to the shard's partial file (:func:`partial_path`), resumes
    from what it holds, and writes the finished output (compressed where it is named
    ``.zst``)."""

    def __init__(self, output: Path, run_key: str):
        self.output = Path(output)
        self.run_key = run_key
        self.partial = partial_path(self.output)
        self.output.parent.mkdir(parents=True, exist_ok=True)
        plain = self.output.with_name(self.output.name.removesuffix(COMPRESSED))
        if plain != self.output and plain.is_file() and not self.partial.exists():
            # An earlier version's finished shard (not compressed): its records resume
            # the shard as a partial file would, and the output is written compressed.
            plain.replace(self.partial)
        self.records: list[dict] = self._recover()
        self._synced = float("-inf")  # when the partial file was last fsynced

    def _recover(self) -> list[dict]:
        if not self.partial.exists():
            return []
        data = self.partial.read_bytes()
        lines, keep = complete_lines(data)
        if any(record.get("run_key") != self.run_key for record in lines):
            stale = self.partial.with_name(self.partial.name + ".stale")
            self.partial.replace(stale)
            log.warning("%s was written by another configuration; moved to %s", self.partial, stale)
            return []
        if keep != len(data):
            with open(self.partial, "r+b") as fh:
                fh.truncate(keep)
        return first_of_each_question(lines)

    @property
    def done(self) -> set[str]:
        return {r["question_id"] for r in self.records}

    def append(self, record: dict) -> None:
        record = {**record, "run_key": self.run_key}
        # A server may repeat a key back in an error or a reply: none is kept.
        raw = json.dumps(record, ensure_ascii=False)
        text = secrets.redact(raw)
        if text != raw:
            record = json.loads(text)  # in memory what the file holds
        line = (text + "\n").encode("utf-8")
        with open(self.partial, "ab") as fh:
            fh.write(line)
            fh.flush()  # in the kernel now: a killed process loses nothing it wrote
            if time.monotonic() - self._synced >= FSYNC_INTERVAL_S:
                os.fsync(fh.fileno())
                self._synced = time.monotonic()
        self.records.append(record)

    def finalize(self, order: list[str]) -> None:
        """Write the declared output in question order, then drop the partial file.

        Questions answered at once finish in any order; the output does not: records
        in question order, each prompt header on the first record that used it."""
        rank = {qid: i for i, qid in enumerate(order)}
        records = sorted(self.records, key=lambda r: rank[r["question_id"]])
        headers = {r["header_sha256"]: r["header"] for r in records if r.get("header") is not None}
        placed, moved = set(), []
        for record in records:
            sha = record.get("header_sha256")
            first = sha in headers and sha not in placed
            placed.add(sha)
            if first and "header" not in record:  # where a sequential run puts it
                record = {k: v for k, v in record.items() if k != "run_key"}
                record.update(header=headers[sha], run_key=self.run_key)
            elif not first and "header" in record:
                record = {k: v for k, v in record.items() if k != "header"}
            moved.append(record)
        records = moved
        text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        data = stored_bytes(self.output, text.encode("utf-8"))
        tmp = self.output.with_name(self.output.name + ".tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(self.output)
        self.partial.unlink(missing_ok=True)
