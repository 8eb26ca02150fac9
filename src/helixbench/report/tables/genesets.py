"""Gene-set runs: metrics per dataset with intervals, and GeneAgent's verification."""

from __future__ import annotations

import pandas as pd

from ...config.plan import Plan, RunTask
from ...methods.genesets import VERDICTS
from ..text import fmt, fmt_interval

GENESET_METRICS = ("embedding", "rougeL", "rouge1", "rouge2", "percentile")

GENESET_COLUMNS = [
    "run",
    "dataset",
    "sets",
    *(c for m in GENESET_METRICS for c in (m, f"{m}_ci")),
    "parse_errors",
    "other_errors",
    "claims",
    *VERDICTS,
    "tool_calls",
    "tool_errors",
    "retrieval_recall",
]


def geneset_table(plan: Plan, summary: pd.DataFrame, facts: dict[RunTask, dict]) -> pd.DataFrame:
    """Gene sets (GeneAgent's datasets): per run and dataset, each metric's mean with
    its 95% bootstrap interval, the sets without a parsable name, and the verification
    statistics of the geneagent method (claims by verdict, tool calls and failures)."""
    sel = summary[summary.benchmark == "genesets"]
    lookup = {(r.model, r.method, r.task, r.metric): r for r in sel.itertuples()}
    rows = []
    for task in plan.tasks:
        if task.benchmark != "genesets":
            continue
        of_task = facts[task]
        row = {"run": task.label, "dataset": task.task, "sets": of_task["questions"]}
        for metric in GENESET_METRICS:
            hit = lookup.get((task.model, task.method, task.task, metric))
            row[metric] = hit.score if hit else None
            row[f"{metric}_ci"] = fmt_interval(hit.ci_low, hit.ci_high) if hit else ""
        errors = of_task["errors"]
        row["parse_errors"] = errors.get("parse_error", 0)
        row["other_errors"] = sum(n for kind, n in errors.items() if kind != "parse_error")
        row["claims"] = len(of_task["claims"])
        for verdict in VERDICTS:
            row[verdict] = of_task["claims"].count(verdict)
        row["tool_calls"] = of_task["tool_calls"]
        row["tool_errors"] = of_task["tool_failures"]
        # brad: the share of a set's genes whose summary was retrieved, over its sets.
        recalls = of_task["recalls"]
        row["retrieval_recall"] = round(sum(recalls) / len(recalls), 4) if recalls else None
        rows.append(row)
    return pd.DataFrame(rows, columns=GENESET_COLUMNS)


def geneset_percentiles(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """Every set's background percentile, per run and dataset (the distribution plot)."""
    sel = scores[(scores.benchmark == "genesets") & (scores.metric == "percentile")]
    return sel[["run", "task", "question_id", "score"]].rename(columns={"task": "dataset"})


def _genesets_markdown(genesets: pd.DataFrame) -> str:
    if genesets.empty:
        return "No gene-set run in this config."
    shown = genesets.assign(**{m: genesets[m].map(fmt) for m in GENESET_METRICS})
    return (
        "Per run and dataset: mean embedding similarity, ROUGE-L/1/2 (F-measure, Porter "
        "stemming, GeneAgent's name cleaning) and background percentile of the true name "
        "among the candidate names, each with its 95% bootstrap interval; sets whose reply "
        "had no `Process:` line score 0 (`parse_errors`). geneagent runs add their claims "
        "by verdict and their tool calls; brad runs the share of a set's genes whose summary "
        "they retrieved (`retrieval_recall`), which tells a retrieval failure from a "
        "generation failure. Distribution: `percentile.png`; per set: "
        "`index.html`.\n\n" + shown.to_markdown(index=False, disable_numparse=True)
    )
