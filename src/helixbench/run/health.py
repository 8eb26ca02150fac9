"""Warnings about runs whose questions ended in errors too often to be a score.

A run of a model whose server cannot fit the prompts records every question as
``lengthError`` and scores 0: correct, and useless without a word on why. Past a
share of its questions (:data:`THRESHOLDS`, documented in docs/report.md) a run
gets a warning naming the likely cause and the setting to change, in the job's log
(:func:`shard_warnings`) and in the report (:func:`run_warnings`). Recorded and
published runs are left out: their errors are the 2023 system's, facts to report.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..models import backend

# Error kind -> the share of a run's questions past which it is warned about.
THRESHOLDS = {"model_error": 0.0, "lengthError": 0.2, "numError": 0.2, "agent_error": 0.0}

_CAUSES = {
    "lengthError": (
        "the prompts did not fit the model's context{first}{longest}. A server's context "
        "is per slot (llama-server: -c divided by --parallel; vLLM: --max-model-len); a "
        "local model's is `context_window`. Give the model more context, or send less: "
        "the method's `cut_length` (genegpt) or `reply_cap`"
    ),
    "numError": (
        "the model was still calling tools when the cap stopped it: raise the method's "
        "`max_calls` (genegpt) or `max_tool_rounds` (function-calling, geneagent), or check "
        "that the model stops where the protocol expects (its stop strings, its chat template)"
    ),
    "model_error": "{first_error}",
    "agent_error": "{agent_said}",
}


def judged(model_spec: dict) -> bool:
    """Whether a model's errors are its own to warn about (not a recording's)."""
    facts = backend(model_spec.get("backend"))
    return facts.answers_prompts and not facts.recorded and not facts.published


def error_messages(records: list[dict]) -> list[tuple[str, str]]:
    """(kind, message) for each error kind whose share of ``records`` passes its
    threshold, with the likely cause and the setting to change."""
    out = []
    for kind, threshold in THRESHOLDS.items():
        failed = [r for r in records if r.get("error") == kind]
        if not failed or len(failed) / len(records) <= threshold:
            continue
        first = _first_error(failed)
        longest = max(
            (e["data"].get("prompt_chars") or 0 for r in failed for e in _model_events(r)),
            default=0,
        )
        cause = _CAUSES[kind].format(
            first=f" (the server said: {first})" if first else "",
            longest=f"; the longest prompt was {longest:,} characters" if longest else "",
            first_error=f"the first: {first}" if first else "no message recorded",
            agent_said=_agent_said(failed),
        )
        asked = f"{len(records)} question{'s' * (len(records) != 1)}"
        share = f"{len(failed)} of {asked} ended in {_named(kind)}"
        out.append((kind, f"{share}: {cause}"))
    return out


def run_warnings(tasks: Iterable, records: dict) -> list[dict]:
    """Report notes: per run and benchmark, each error kind past its threshold."""
    grouped: dict[tuple[str, str, str], list[dict]] = {}
    for task in tasks:
        if judged(task.model_spec):
            key = (task.model, task.method, task.benchmark)
            grouped.setdefault(key, []).extend(records[task])
    notes = []
    for (model, method, benchmark), of_run in grouped.items():
        for kind, message in error_messages(of_run):
            notes.append(
                {
                    "level": "warning",
                    "model": model,
                    "method": method,
                    "benchmark": benchmark,
                    "kind": kind,
                    "message": message,
                }
            )
    return notes


def shard_warnings(spec: dict, records: list[dict]) -> list[str]:
    """The same warnings for one finished shard, for the job's log."""
    if not records or not judged(spec["model_spec"]):
        return []
    return [message for _, message in error_messages(records)]


def _named(kind: str) -> str:
    return "a model error" if kind == "model_error" else kind


def _model_events(record: dict) -> list[dict]:
    return [e for e in record.get("events", []) if e["type"] == "model"]


def _agent_said(records: list[dict]) -> str:
    """Why an agent failed: the fix where helixbench knows it (a file beside its program
    that its sandbox does not show), else the last line it wrote to stderr."""
    events = [e["data"] for r in records for e in r.get("events", []) if e["type"] == "agent"]
    for data in events:
        if data.get("hint"):
            return data["hint"]
    for data in events:
        lines = (data.get("stderr_tail") or "").strip().splitlines()
        if lines:
            return f"the first said: {lines[-1][:300]}"
    return "it said nothing on stderr"


def _first_error(records: list[dict]) -> str | None:
    for record in records:
        for event in _model_events(record):
            if event["data"].get("error"):
                return event["data"]["error"]
    return None
