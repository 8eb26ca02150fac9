"""Methods (solvers): how a question becomes model and tool calls, selected by ``kind``.

Each kind's module says how a run job sets it up for one task (:func:`prepare`):
which method object (with its prompt header, its recorded answers or terms),
which model (the run's, or one per task where the backend answers from a
recording) and which tools; the runner only feeds it questions.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..models import call_fields
from ..transcripts import Event

GENESET_KINDS = ("closed-book", "geneagent", "gsea-top1")
# Methods of chat models on question-answering benchmarks.
CHAT_KINDS = ("function-calling", "no-tools")
# Methods that answer questions and name gene sets alike.
ANY_BENCHMARK_KINDS = ("brad", "agent")
KINDS = ("genegpt", "imported", *CHAT_KINDS, *GENESET_KINDS, *ANY_BENCHMARK_KINDS)
# Method kind -> the module that prepares it.
_MODULES = {
    "genegpt": "genegpt",
    "imported": "imported",
    **dict.fromkeys(CHAT_KINDS, "function_calling"),
    **dict.fromkeys(GENESET_KINDS, "genesets"),
    "brad": "brad",
    "agent": "agent",
}


@dataclass
class TaskContext:
    """What a run job knows when it sets up a method for one of its tasks."""

    run: dict  # the run's spec (model, method, model_spec, method_spec, tools, ...)
    task: dict  # the task's spec (benchmark, task, recording, snapshot, ...)
    questions: list  # the task's questions in this shard
    every: list  # every question of the table (a toy gene set finds its dataset's row)
    model: object  # the run's model, or None where each task makes its own
    recordings: object  # a helixbench.sources.recordings.RecordingReader
    embeddings: Path | None = None  # where texts' vectors are kept (the jobs' shared cache)

    @property
    def kind(self) -> str:
        return self.run["method_spec"]["kind"]

    @property
    def tools_mode(self) -> str:
        return self.run["tools"]["mode"]


@dataclass
class Prepared:
    """A task's method, model and tools, and what its records say of them."""

    method: object
    model: object
    tools: object = None
    snapshot_id: str | None = None
    info: dict = field(default_factory=dict)  # more of the run's record (loop, source file)


def prepare(context: TaskContext) -> Prepared:
    """The method, model and tools of one task of a run (the kind's module says how)."""
    kind = context.kind
    if kind not in _MODULES:
        raise ValueError(f"unknown method kind {kind!r}; available: {', '.join(KINDS)}")
    return importlib.import_module(f"{__name__}.{_MODULES[kind]}").prepare(context)


def model_event(request, prompt: dict, completion, started: float, error=None, **after) -> Event:
    """A model call's event, as every method records it: the method's own account of
    the prompt (``prompt``), the completion, anything ``after`` it (a chat model's
    tool calls), then the call's outcome (:func:`helixbench.models.call_fields`)."""
    data = {
        **prompt,
        "completion": None if completion is None else completion.text,
        **after,
        **call_fields(completion, error),
    }
    return Event("model", request.call_index, data, time.perf_counter() - started)
