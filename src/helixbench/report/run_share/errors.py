"""The error types of every wrong answer (``taxonomy.csv``), against the paper's Table 4."""

from __future__ import annotations

import pandas as pd

from ...benchmarks import get
from ...config.plan import Plan, RunTask
from ...methods.genegpt import PRESETS
from ...scoring import CORRECTNESS_SCORERS
from ..records import ScoreIndex, primary_metric
from ..tables.taxonomy import FORMAT_ERROR, TYPES, agreement, classify

SLIM = PRESETS["genegpt-slim"]  # the run whose errors the paper's Table 4 types

TAXONOMY_COLUMNS = [
    "model",
    "method",
    "benchmark",
    "task",
    "metric",
    "questions",
    "wrong",
    *TYPES,
    FORMAT_ERROR,
    "lengthError",
    "numError",
    "offline_misses",
]


# Method kinds whose wrong answers GeneGPT's taxonomy types: those that call (or, imported,
# may have called) NCBI's tools. A run without tools has no tool call to get wrong, and
# a multiple-choice answer no database to miss: E1 there would say nothing.
TYPED_KINDS = ("genegpt", "function-calling", "agent", "imported")


def typed(task: RunTask) -> bool:
    """Whether GeneGPT's taxonomy fits a task's wrong answers (:data:`TYPED_KINDS`, on
    a benchmark of NCBI questions, not multiple choice)."""
    if task.method_spec.get("kind") not in TYPED_KINDS:
        return False
    benchmark = get(task.benchmark)
    return not benchmark.multiple_choice and benchmark.name not in NOT_NCBI


# Benchmarks whose questions need no NCBI database: nothing for E1-E4 to name.
NOT_NCBI = ("labbench2", "bixbench-mcq", "bixbench-open")


def error_types(
    plan: Plan, records: dict[RunTask, list[dict]], scores: ScoreIndex, questions: dict
) -> tuple[pd.DataFrame, dict[tuple[str, str], str]]:
    """The error taxonomy (helixbench.report.tables.taxonomy) per run and task, and each wrong
    answer's type by (run, question id). Tasks whose primary metric is graded (ROUGE,
    embedding) have no right/wrong and are left out, and so are those the taxonomy does
    not fit (:func:`typed`). An answer wrong as given but
    right once extracted is typed ``F`` (a formatting error) before the rules run."""
    rows, labels = [], {}
    for task in plan.tasks:
        metric = primary_metric(plan, task.task)
        if metric not in CORRECTNESS_SCORERS or not typed(task):
            continue
        run = task.label
        score = scores.get((run, task.task, metric), {})
        extracted = scores.get((run, task.task, "extracted"), {})
        row = dict.fromkeys(TAXONOMY_COLUMNS, 0) | {
            "model": task.model,
            "method": task.method,
            "benchmark": task.benchmark,
            "task": task.task,
            "metric": metric,
        }
        for record in records[task]:
            qid = record["question_id"]
            row["questions"] += 1
            row["lengthError"] += record["error"] == "lengthError"
            row["numError"] += record["error"] == "numError"
            row["offline_misses"] += any(
                (e["data"].get("error") or "").startswith("offline")
                for e in record["events"]
                if e["type"] == "tool"
            )
            if qid not in score or score[qid] >= 1:
                continue
            if extracted.get(qid, 0) >= 1:
                kind = FORMAT_ERROR
            else:
                kind = classify(task.task, record, questions[qid].gold)
            labels[(run, qid)] = kind
            row["wrong"] += 1
            row[kind] += 1
        rows.append(row)
    return pd.DataFrame(rows, columns=TAXONOMY_COLUMNS), labels


def table4_agreement(plan: Plan, taxonomy: pd.DataFrame) -> dict | None:
    """Our error types against the paper's Table 4, for the replayed GeneGPT-slim run."""
    slim = [
        r
        for r in plan.runs
        if r.first.recorded
        and r.first.recorded.recording == "genegpt-2023"
        and r.first.method_spec.get("mask") == SLIM
        and any(t.benchmark == "geneturing" for t in r.tasks)
    ]
    if not slim:
        return None
    sel = taxonomy[(taxonomy.model == slim[0].model) & (taxonomy.method == slim[0].method)]
    counts = {row.task: {k: int(getattr(row, k)) for k in TYPES} for row in sel.itertuples()}
    return {"run": slim[0].label, **agreement(counts)}
