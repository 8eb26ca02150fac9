"""GeneAgent's paper (Wang et al., Nature Methods 2025) beside our scoring of the
paper's own generations (the ``geneagent/gpt-4`` and ``geneagent/cascade`` sources):
each dataset and metric, our figure and the paper's in their own columns.

The paper's ± is the standard error of the mean (the sample standard deviation over
the sets, divided by the square root of their number): GeneAgent's MSigDB files give
its stated 0.047 (ROUGE-L) and 0.044 (ROUGE-2) to 3 decimals. ``in_90th_percentile``
counts the sets whose true name is closer to the answer than 90% of the background
names are (the paper: 12,214 GO terms and the NeST and MSigDB names, 12,320 in all;
ours: the scorer's background, whose size the table states beside the paper's).
"""

from __future__ import annotations

import math
import re

import pandas as pd

from ...config.plan import Plan
from ...scoring.background import PAPER_BACKGROUND
from ..text import fmt_interval


def _stated(gpt4: tuple, cascade: tuple) -> dict:
    return {"geneagent/gpt-4": gpt4, "geneagent/cascade": cascade}


# (dataset, metric) -> {source: (the paper's value, its ±)}.
PAPER = {
    ("MSigDB", "rougeL"): _stated((0.239, 0.038), (0.310, 0.047)),
    ("MSigDB", "rouge1"): _stated((0.239, 0.038), (0.310, 0.047)),  # equal to ROUGE-L
    ("MSigDB", "rouge2"): _stated((0.074, 0.030), (0.155, 0.044)),
    ("GO", "embedding"): _stated((0.689, None), (0.705, None)),  # MedCPT
    ("NeST", "embedding"): _stated((0.708, None), (0.761, None)),
    ("MSigDB", "embedding"): _stated((0.722, None), (0.736, None)),
    ("NeST", "in_90th_percentile"): _stated((42, None), (46, None)),
    ("MSigDB", "in_90th_percentile"): _stated((40, None), (46, None)),
}
SYSTEM = {"geneagent/gpt-4": "GPT-4", "geneagent/cascade": "GeneAgent"}
PAPER_COLUMNS = [
    "dataset",
    "metric",
    "system",
    "run",
    "sets",
    "ours",
    "ours_sem",
    "ours_ci",
    "paper",
    "paper_pm",
    "scored_by",
    "background",
]
# The background's size, as the percentile scorer's label states it.
BACKGROUND_SIZE = re.compile(r"([\d,]+) background names")


def geneagent_paper_table(plan: Plan, scores: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, metric and system of the paper that a run imports: our mean with
    its standard error and 95% bootstrap interval, and the paper's value and ±; every
    (dataset, metric) the paper states, our other scores of those runs too."""
    runs = {
        run.label: plan.sources[run.model]["name"]
        for run in plan.runs
        if run.imported and plan.sources.get(run.model, {}).get("name") in SYSTEM
    }
    sel = scores[scores.run.isin(list(runs)) & (scores.benchmark == "genesets")]
    intervals = {
        (r.model, r.method, r.task, r.metric): r
        for r in summary[summary.benchmark == "genesets"].itertuples()
    }
    rows = []
    for (run, task, metric), group in sel.groupby(["run", "task", "metric"], sort=False):
        source = runs[run]
        values = group.score.astype(float)
        count = metric == "percentile"
        shown = "in_90th_percentile" if count else metric
        paper = PAPER.get((task, shown), {}).get(source, (None, None))
        hit = intervals.get((group.model.iloc[0], group.method.iloc[0], task, metric))
        scored_by = next((s for s in group.scored_by.dropna()), None)
        sem = values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else None
        rows.append(
            {
                "dataset": task,
                "metric": shown,
                "system": SYSTEM[source],
                "run": run,
                "sets": len(values),
                "ours": int((values >= 0.9).sum()) if count else values.mean(),
                "ours_sem": None if count else sem,
                "ours_ci": "" if count or hit is None else fmt_interval(hit.ci_low, hit.ci_high),
                "paper": paper[0],
                "paper_pm": paper[1],
                "scored_by": scored_by,
                "background": _background_size(scored_by) if count else None,
            }
        )
    order = {m: i for i, m in enumerate(("rougeL", "rouge1", "rouge2", "embedding"))}
    table = pd.DataFrame(rows, columns=PAPER_COLUMNS)
    if table.empty:
        return table
    table["background"] = table.background.astype("Int64")  # a count, or none
    table["_order"] = table.metric.map(lambda m: order.get(m, 9))
    table = table.sort_values(["dataset", "_order", "system"], kind="stable")
    return table.drop(columns="_order").reset_index(drop=True)


def paper_layout(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the paper reads: one row per dataset and metric, each system's
    figure (ours, with ± its standard error) beside the paper's."""
    rows = {}
    for r in table.itertuples():
        row = rows.setdefault((r.dataset, r.metric), {"dataset": r.dataset, "metric": r.metric})
        row[f"{r.system} (ours)"] = _figure(r.ours, r.ours_sem)
        row[f"{r.system} (paper)"] = _figure(r.paper, r.paper_pm) or "-"
        if isinstance(r.scored_by, str):
            row["scored by"] = r.scored_by
        if pd.notna(r.background):
            row["background"] = f"{int(r.background):,} names (paper: {PAPER_BACKGROUND:,})"
    return pd.DataFrame(list(rows.values()))


def _background_size(scored_by: str | None) -> int | None:
    found = BACKGROUND_SIZE.search(scored_by or "")
    return int(found.group(1).replace(",", "")) if found else None


def _figure(value, pm) -> str:
    """A mean to 3 decimals (a count as it is), with its ± where there is one."""
    if value is None or pd.isna(value):
        return ""
    pm = None if pm is None or pd.isna(pm) else float(pm)
    if float(value).is_integer() and pm is None:
        return str(int(value))
    shown = f"{float(value):.3f}"
    return shown if pm is None else f"{shown} ± {pm:.3f}"
