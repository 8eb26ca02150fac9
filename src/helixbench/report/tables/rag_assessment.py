"""RAGAs per retrieval run (BRAD's evaluation): each run's configuration (vanilla,
standard RAG, RAG with contextual compression), its five RAGAs metrics with their
95% intervals, and the judge and encoder that produced them."""

from __future__ import annotations

import pandas as pd

from ...config.plan import Plan
from ...scoring.rag_assessment import SCORES
from ..text import fmt_interval

RAGAS_COLUMNS = [
    "run",
    "configuration",
    "benchmark",
    "questions",
    *(
        c
        for m in SCORES.values()
        for c in (m.removeprefix("ragas_"), f"{m.removeprefix('ragas_')}_ci")
    ),
    "scored_by",
]


def configuration(method_spec: dict) -> str:
    """BRAD's name of a method's configuration."""
    if method_spec.get("kind") != "brad":
        return "vanilla (no retrieval)"
    return "RAG with contextual compression" if method_spec.get("compression") else "standard RAG"


def ragas_table(plan: Plan, summary: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per run and benchmark RAGAs scored: each metric's macro (the mean of its task
    means, as every macro of the report) with its 95% interval; ranked by answer
    correctness."""
    sel = summary[summary.metric.isin(list(SCORES.values()))]
    rows = []
    for run in plan.runs:
        mine = sel[(sel.model == run.model) & (sel.method == run.method)]
        for benchmark, group in mine.groupby("benchmark", sort=False):
            tasks = group[group.task != "macro"]
            row = {
                "run": run.label,
                "configuration": configuration(run.first.method_spec),
                "benchmark": benchmark,
                "questions": int(tasks.groupby("task").n.max().sum()),
            }
            for metric in SCORES.values():
                name = metric.removeprefix("ragas_")
                # The benchmark's figure: its macro row (the mean of its task means).
                found = group[(group.metric == metric) & (group.task == "macro")]
                hit = found.iloc[0] if len(found) else None
                row[name] = None if hit is None else hit.score
                row[f"{name}_ci"] = "" if hit is None else fmt_interval(hit.ci_low, hit.ci_high)
            scored = scores[(scores.run == run.label) & scores.metric.isin(list(SCORES.values()))]
            row["scored_by"] = next(iter(scored.scored_by.dropna()), None)
            rows.append(row)
    table = pd.DataFrame(rows, columns=RAGAS_COLUMNS)
    return table.sort_values(
        "answer_correctness", ascending=False, kind="stable", na_position="last"
    )
