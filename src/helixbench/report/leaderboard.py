"""One row per run and benchmark, best first (``leaderboard.csv``)."""

from __future__ import annotations

import pandas as pd

from ..plan import Plan

LEADERBOARD_COLUMNS = [
    "run",
    "benchmark",
    "model",
    "imported",
    "extracted",
    "ci_low",
    "ci_high",
    "genegpt",
    "strict",
    "badly_formatted",
    "answers",
    "tasks",
    "source",
]


def leaderboard(plan: Plan, summary: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """One row per run and benchmark, best first: the macro score on extracted answers
    with its interval, upstream's strict scorer (``genegpt``) and ours (``strict``)
    beside it, and how many answers were right only once extracted (right but badly
    formatted). Imported runs are marked and name their source."""
    pairs = scores[scores.metric.isin(["genegpt", "extracted"])].pivot_table(
        index=["run", "benchmark", "question_id"], columns="metric", values="score"
    )
    if {"genegpt", "extracted"} <= set(pairs.columns):
        reformatted = (pairs.extracted >= 1) & (pairs.genegpt < 1)
        badly = reformatted.groupby(level=["run", "benchmark"]).sum()
        answers = pairs.genegpt.groupby(level=["run", "benchmark"]).size()
    else:
        badly = answers = pd.Series(dtype=int)
    rows = []
    for run in plan.runs:
        for benchmark in dict.fromkeys(t.benchmark for t in run.tasks):
            sel = summary[
                (summary.model == run.model)
                & (summary.method == run.method)
                & (summary.benchmark == benchmark)
                & (summary.task == "macro")
            ]
            source = plan.sources.get(run.model)
            row = {
                "run": run.label,
                "benchmark": benchmark,
                "model": run.model,
                "imported": run.imported,
                "source": source["name"] if source else None,
                "badly_formatted": int(badly.get((run.label, benchmark), 0)),
                "answers": int(answers.get((run.label, benchmark), 0)),
            }
            for metric in ("extracted", "genegpt", "strict"):
                hit = sel[sel.metric == metric]
                row[metric] = float(hit.score.iloc[0]) if not hit.empty else None
                if metric == "extracted":
                    row["ci_low"] = float(hit.ci_low.iloc[0]) if not hit.empty else None
                    row["ci_high"] = float(hit.ci_high.iloc[0]) if not hit.empty else None
                    row["tasks"] = int(hit.n.iloc[0]) if not hit.empty else 0
            rows.append(row)
    table = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    return table.sort_values(
        ["benchmark", "extracted", "genegpt"], ascending=[False, False, False], na_position="last"
    )
