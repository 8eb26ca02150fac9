"""The ``imported`` method: a published system's answers, read instead of computed.

Each question's record is built from the source's item: its final text as the
answer and, where the source logged them (GeneGPT's format), its model calls and
the tool replies the next prompt shows, as the same events our own runs record,
so the per-question view and the error taxonomy treat them alike. A question the
source does not answer is recorded as ``missing_in_source`` (scored, as a miss).

LABBench2's reports (:class:`LabBench2Answers`) are matched by the question's id in
LABBench2; a case keeps its published verdict in the record (``published``), a
failure is recorded as ``failed_in_source`` with the harness's error.
"""

from __future__ import annotations

from pathlib import Path

from ..digests import sha256_text
from ..sources import bixbench, labbench2
from ..sources.published import ImportedItem, load_items
from ..sources.recordings import LOOP_ERRORS, RecordedItem, infer_loop, recorded_tool_replies
from ..transcripts import Event, QuestionResult
from . import Prepared


class ImportedAnswers:
    def __init__(self, items: dict[str, ImportedItem]):
        self.items = items
        # A GeneGPT-format source's loop may be either of upstream's variants: read
        # which completions called a URL with the rule its transcripts show.
        logged = [RecordedItem(i.question, None, i.answer, i.steps) for i in items.values()]
        self.url_rule = infer_loop({"source": logged})["source"].url_rule

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        item = self.items.get(question)
        if item is None:
            return result.finish(answer=None, error="missing_in_source")
        result.events = transcript(item, self.url_rule)
        result.confidence = item.confidence
        error = item.answer if item.answer in LOOP_ERRORS else None
        return result.finish(answer=item.answer, error=error)


def transcript(item: ImportedItem, url_rule: str = "first") -> list[Event]:
    """The item's model calls and tool calls (read with ``url_rule``) as events."""
    if not item.steps:  # task_dict, geneagent, hu: the system's own account, no calls logged
        data = {
            "prompt_increment": None,
            "completion": item.answer,
            "thoughts": item.thoughts,
            **({"confidence": item.confidence} if item.confidence is not None else {}),
            "cache": "imported",
            "error": None,
        }
        return [Event("model", 0, data)]
    replies = recorded_tool_replies(
        RecordedItem(item.question, None, item.answer, item.steps), url_rule
    )
    events, previous = [], ""
    for index, (prompt, completion) in enumerate(item.steps):
        continued = bool(previous) and prompt.startswith(previous)
        data = {
            "prompt_sha256": sha256_text(prompt),
            "prompt_chars": len(prompt),
            # The first prompt is the source's header plus the question: log the question.
            "prompt_increment": prompt[len(previous) :] if continued else _tail(prompt),
            "continues_previous": continued,
            "completion": completion,
            "cache": "imported",
            "error": None,
        }
        events.append(Event("model", index, data))
        previous = prompt
        if index in replies:  # the completion asked for a URL
            url, rendered = replies[index]
            events.append(Event("tool", index, _tool_data(url, rendered)))
    return events


def _tail(prompt: str) -> str:
    at = prompt.rfind("Question: ")
    return prompt[at:] if at >= 0 else prompt


def _tool_data(url: str, rendered: str | None) -> dict:
    return {
        "url": url,
        "status": None,
        "bytes": len(rendered.encode()) if rendered is not None else 0,
        "cache": "imported",
        "error": None if rendered is not None else "the source does not show this reply",
        "fetched_at": None,
        "origin": "imported",
        "attempts": 0,
        "rendered": rendered,
    }


class LabBench2Answers:
    """A system's merged LABBench2 reports of one task, answering by LABBench2's ids."""

    def __init__(self, merged: dict, source_ids: dict[str, str]):
        self.cases = {c["id"]: c for c in merged["cases"]}
        self.failures = {f["id"]: f for f in merged["failures"]}
        self.source_ids = source_ids  # our question id -> LABBench2's
        self.reported = merged.get("model")

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        their_id = self.source_ids.get(question_id)
        if their_id in self.failures:
            failure = self.failures[their_id]
            message = str(failure.get("error_message") or "")[:2000]
            result.events = [Event("model", 0, _reported(None, message))]
            return result.finish(answer=None, error="failed_in_source")
        case = self.cases.get(their_id)
        if case is None:
            return result.finish(answer=None, error="missing_in_source")
        answer = case.get("llm_answer")
        data = _reported(answer, None)
        if isinstance(case.get("task_duration"), int | float):
            data["original_latency_s"] = case["task_duration"]
        result.events = [Event("model", 0, data)]
        result.published = labbench2.verdict(case)
        return result.finish(answer=answer or None)


class BixBenchAnswers:
    """A BixBench file's rows of one task, answering by BixBench's question ids; each
    keeps BixBench's grade (and, for multiple choice, the letters as the file showed
    them: its own key, the file's shuffle)."""

    def __init__(self, rows: dict, source_ids: dict[str, str], mcq: bool):
        self.rows, self.source_ids, self.mcq = rows, source_ids, mcq

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        row = self.rows.get(self.source_ids.get(question_id))
        if row is None:
            return result.finish(answer=None, error="missing_in_source")
        result.events = [Event("model", 0, _reported(row.reply or row.answer, None))]
        result.published = {"value": row.grade, "grader": bixbench.GRADER}
        if self.mcq:
            result.published["key"] = {"target": row.target, "refusal": row.refusal}
            result.published["refused"] = row.refused
        else:
            result.published["mode"] = row.evaluation_mode
        return result.finish(answer=row.answer)


def _reported(completion: str | None, error: str | None) -> dict:
    return {"prompt_increment": None, "completion": completion, "cache": "imported", "error": error}


def prepare(context) -> Prepared:
    """An imported task: the source's items for it, read from its pinned file; no tools."""
    task = context.task
    of_task = (task["benchmark"], task["task"])
    ids = {q.id: q.source_id for q in context.every if (q.benchmark, q.task) == of_task}
    if task["imported_format"] == "bixbench":  # (a pinned file, or the user's own)
        pinned = [[task["imported"], task["imported_sha256"]]]
        path, sha256 = task.get("imported_reports", pinned)[0]
        mcq = task["benchmark"] == "bixbench-mcq"
        rows = bixbench.read_rows(Path(path), sha256, mcq)
        info = {"imported_from": {"path": path, "sha256": sha256}}
        return Prepared(BixBenchAnswers(rows, ids, mcq), context.model, info=info)
    if task["imported_format"] == "labbench2":
        merged = labbench2.read_merged(task["imported_reports"])
        files = [{"path": p, "sha256": d} for p, d in task["imported_reports"]]
        info = {
            "imported_from": files,
            "reported_model": labbench2.maker(merged.get("model", "")),
            "reported_usage": merged["usage"],  # (the task's: every file's, retries too)
        }
        return Prepared(LabBench2Answers(merged, ids), context.model, info=info)
    ours = [q for q in context.every if (q.benchmark, q.task) == (task["benchmark"], task["task"])]
    items, _ = load_items(
        Path(task["imported"]),
        task["imported_format"],
        task["task"],
        task["imported_sha256"],
        [q.text for q in sorted(ours, key=lambda q: q.index)],
    )
    source = {"url": task["imported_url"], "sha256": task["imported_sha256"]}
    return Prepared(ImportedAnswers(items), context.model, info={"imported_from": source})
