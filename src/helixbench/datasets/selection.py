"""Which questions a run asks: its tasks' questions (a sample where it names one), a
question asked word for word by another of the run answered by it, and each shard's
share."""

from __future__ import annotations

from ..digests import sha256_text
from .overlap import ASKED_ONCE
from .questions import Question


def run_questions(questions: list[Question], spec: dict) -> list[tuple[dict, Question]]:
    """Every (task spec, question) the run asks, task by task in plan order, each task
    cut to its ``sample`` if the run names one. A question that repeats another of the
    run word for word (:data:`helixbench.datasets.overlap.ASKED_ONCE`) is not asked again: its
    counterpart's answer is scored for it (:func:`answered_by`)."""
    chosen = _covered(questions, spec)
    ids = {q.id for _, q in chosen}
    return [(t, q) for t, q in chosen if not _asked_as(q, ids)]


def answered_by(questions: list[Question], spec: dict) -> dict[str, str]:
    """Question id -> the id of the question of the same run whose answer it takes."""
    chosen = _covered(questions, spec)
    ids = {q.id for _, q in chosen}
    return {q.id: q.overlap_id for _, q in chosen if _asked_as(q, ids)}


def _asked_as(question: Question, ids: set[str]) -> bool:
    return question.overlap in ASKED_ONCE and question.overlap_id in ids


def _covered(questions: list[Question], spec: dict) -> list[tuple[dict, Question]]:
    by_task: dict[tuple[str, str], list[Question]] = {}
    for q in questions:
        by_task.setdefault((q.benchmark, q.task), []).append(q)
    chosen = []
    for task in spec["tasks"]:
        of_task = by_task.get((task["benchmark"], task["task"]))
        if not of_task:
            raise ValueError(f"no questions for {task['benchmark']} / {task['task']}")
        if task.get("imported_format") is None:  # (only its source asks for the hub's files)
            of_task = [q for q in of_task if q.askable]
        if spec.get("sample"):
            of_task = sample_questions(of_task, spec["sample"])
        chosen += [(task, q) for q in of_task]
    return chosen


def shard_questions(
    questions: list[Question], spec: dict, shard: int
) -> list[tuple[dict, Question]]:
    """The run's questions that fall in ``shard``: round robin over all its tasks, so
    every shard gets a like mix of tasks (and of slow and fast questions)."""
    chosen = run_questions(questions, spec)
    return [pair for i, pair in enumerate(chosen) if i % spec["shards"] == shard]


def sample_questions(questions: list[Question], n: int) -> list[Question]:
    """A fixed pseudo-random choice of ``n`` questions (by the digest of their ids), in
    question order: the same sample on every machine, for every model. An item shared
    with GeneTuring or GeneHop is drawn by its counterpart's id, so samples of two
    benchmarks take the same shared items (asked once, compared pairwise)."""
    chosen = sorted(questions, key=lambda q: sha256_text(q.overlap_id or q.id))[:n]
    return sorted(chosen, key=lambda q: q.index)
