"""Hu et al.'s gene sets: robustness to contamination, and their similarity ranks
beside ours.

Robustness (Hu et al., Nature Methods 2025, Fig. 3): each run on the sets at 0%,
50% and 100% contamination (half or all of a set's genes replaced at random): the
share of sets it names a process for (``named``; a model that calls random genes
"System of unrelated proteins" is right to) and its mean stated ``confidence``.

Ranks: Hu et al. ranked each real set's true GO name among their GO background by
SapBERT's similarity to the model's name (their ``simrank`` files); our
``percentile`` ranks it among ours by our encoder. Both are set side by side per
run, each with the encoder and background it used.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from ...benchmarks.genesets import HU_TASKS
from ...config.plan import Plan
from ...datasets.jsonfiles import read_text
from ...paths import upstream_path
from ..text import fmt_interval

ROBUSTNESS_COLUMNS = [
    "run",
    "task",
    "contamination",
    "sets",
    "named",
    "named_ci",
    "confidence",
    "confidence_ci",
]
RANK_COLUMNS = [
    "run",
    "task",
    "sets",
    "theirs_mean",
    "theirs_in_90th",
    "theirs_scored_by",
    "ours_mean",
    "ours_in_90th",
    "ours_scored_by",
]
# Hu et al.'s ranking (rank_GOterm_LLM_sim_rand.py at the pinned commit).
THEIR_ENCODER = (
    "cambridgeltl/SapBERT-from-PubMedBERT-fulltext (mean pooling), Hu et al.'s GO background"
)


def robustness_table(plan: Plan, summary: pd.DataFrame) -> pd.DataFrame:
    """Per run and Hu et al. task: the contamination level, the share of sets named
    and the mean stated confidence, each with its 95% bootstrap interval."""
    lookup = {
        (r.model, r.method, r.task, r.metric): r
        for r in summary[summary.metric.isin(["named", "confidence"])].itertuples()
    }
    rows = []
    for task in plan.tasks:
        if task.benchmark != "genesets" or task.task not in HU_TASKS:
            continue
        row = {"run": task.label, "task": task.task, "contamination": HU_TASKS[task.task][2]}
        for metric in ("named", "confidence"):
            hit = lookup.get((task.model, task.method, task.task, metric))
            row["sets"] = max(row.get("sets", 0), int(hit.n) if hit else 0)
            row[metric] = hit.score if hit else None
            row[f"{metric}_ci"] = fmt_interval(hit.ci_low, hit.ci_high) if hit else ""
        rows.append(row)
    return pd.DataFrame(rows, columns=ROBUSTNESS_COLUMNS)


def rank_table(plan: Plan, scores: pd.DataFrame, questions: dict) -> pd.DataFrame:
    """Per imported run with its source's own ranks: their mean percentile and count
    of sets at or above the 90th, beside ours on the same sets."""
    rows = []
    for run in plan.runs:
        for task, file in plan.references.get(run.model, {}).items():
            theirs = their_percentiles(Path(upstream_path(file)))
            ours = scores[
                (scores.run == run.label) & (scores.task == task) & (scores.metric == "percentile")
            ]
            ours = ours.assign(go=ours.question_id.map(lambda q: questions[q].source_id))
            shared = ours[ours.go.isin(theirs)]
            values = [theirs[go] for go in shared.go]
            rows.append(
                {
                    "run": run.label,
                    "task": task,
                    "sets": len(shared),
                    "theirs_mean": sum(values) / len(values) if values else None,
                    "theirs_in_90th": sum(v >= 0.9 for v in values),
                    "theirs_scored_by": THEIR_ENCODER,
                    "ours_mean": shared.score.mean() if len(shared) else None,
                    "ours_in_90th": int((shared.score >= 0.9).sum()),
                    "ours_scored_by": next(iter(shared.scored_by.dropna()), None),
                }
            )
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def their_percentiles(path: Path) -> dict[str, float]:
    """GO id -> Hu et al.'s percentile of the true name (``true_GO_term_sim_percentile``)."""
    rows = csv.DictReader(io.StringIO(read_text(path)), delimiter="\t")
    return {
        row["GO"]: float(row["true_GO_term_sim_percentile"])
        for row in rows
        if (row.get("true_GO_term_sim_percentile") or "").strip()
    }
