"""Scores per run, task and metric, with their intervals (``scores.csv``)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd

from ...benchmarks import get, tasks_of
from ...config.plan import Plan, RunTask
from ...scoring.genegpt import SCORED_TASKS
from ...stats import macro_interval, mean_interval
from .paper import published

ROUND = 7  # decimals kept in scores.csv (the reference values are given to 7)

# ci_low / ci_high: the 95% percentile bootstrap interval over questions (seed 0;
# for a macro row, questions resampled within each task: helixbench.stats). A benchmark
# its peers score over all its questions (LAB-Bench) also has an "all" row, pooled,
# and so has its family (benchmark "labbench": every LAB-Bench question a run asked).
POOLED = "all"
SCORE_COLUMNS = [
    "benchmark",
    "task",
    "model",
    "method",
    "metric",
    "n",
    "score",
    "paper",
    "ci_low",
    "ci_high",
]


def _recording(task: RunTask) -> str | None:
    return task.recorded.recording if task.recorded else None


def score_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """scores.csv: one row per (run, task, metric), plus macro rows (n = tasks averaged)."""
    rows = []
    # (a task with no demonstration has the same scores without them: one interval)
    intervals = _same_values_once(mean_interval)
    # (one pass over the rows: each (task, metric)'s positions, not a frame a group)
    values, outside_demos = scores.score.to_numpy(float), scores.demo.isna().to_numpy()
    where: dict[tuple, dict[str, np.ndarray]] = {}
    if len(scores):
        keys = ["model", "method", "benchmark", "task", "metric"]
        for (*task_key, metric), at in scores.groupby(keys, sort=False).indices.items():
            where.setdefault(tuple(task_key), {})[metric] = at
    for task in plan.tasks:
        ran = where.get((task.model, task.method, task.benchmark, task.task), {})
        variants = {}
        for scorer in sorted(ran):
            at = ran[scorer]
            variants[scorer] = values[at]
            variants[f"{scorer}_excl_demos"] = values[at[outside_demos[at]]]
        for metric, found in variants.items():
            if not found.size:
                continue
            interval = intervals(found)
            rows.append(
                {
                    "benchmark": task.benchmark,
                    "task": task.task,
                    "model": task.model,
                    "method": task.method,
                    "metric": metric,
                    "n": found.size,
                    "score": found.mean(),
                    "paper": published(
                        _recording(task),
                        task.method_spec.get("mask"),
                        task.benchmark,
                        task.task,
                        metric,
                    ),
                    "ci_low": interval.low,
                    "ci_high": interval.high,
                    "_recording": _recording(task),
                    "_mask": task.method_spec.get("mask"),
                    "_scores": found.tolist(),
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    macros = []
    macro_intervals = _same_values_once(macro_interval)
    groups: dict[tuple, list[dict]] = {}  # (rows, not a frame's groups: 60 a run)
    for row in rows:
        key = (row["benchmark"], row["model"], row["method"], row["metric"])
        groups.setdefault(key, []).append(row)
    for (benchmark, model, method, metric), group in groups.items():
        complete = {row["task"] for row in group} == _scored_tasks(benchmark)
        interval = macro_intervals({row["task"]: row["_scores"] for row in group})
        macros.append(
            {
                "benchmark": benchmark,
                "task": "macro",
                "model": model,
                "method": method,
                "metric": metric,
                "n": len(group),
                "score": float(np.mean([row["score"] for row in group])),
                # The paper's average covers every task; compare only a complete set.
                "paper": published(
                    group[0]["_recording"], group[0]["_mask"], benchmark, "macro", metric
                )
                if complete
                else None,
                "ci_low": interval.low,
                "ci_high": interval.high,
            }
        )
    table = pd.concat([table, pd.DataFrame(macros), _pooled(table)], ignore_index=True)
    for column in ("score", "ci_low", "ci_high"):  # (no interval on too few: NaN)
        table[column] = table[column].astype(float).round(ROUND)
    return table[SCORE_COLUMNS]


def _same_values_once(interval):
    """``interval`` (of an array, or of a mapping of task -> values) computed once for
    the same values in the same order: a bootstrap is a function of its values alone
    (seed 0), and a metric's ``_excl_demos`` twin is the same values wherever its tasks
    have no demonstration."""
    done: dict = {}

    def once(values):
        if isinstance(values, dict):
            key = tuple((task, np.asarray(v, float).tobytes()) for task, v in values.items())
        else:
            key = np.asarray(values, float).tobytes()
        if key not in done:
            done[key] = interval(values)
        return done[key]

    return once


def _pooled(table: pd.DataFrame) -> pd.DataFrame:
    """The "all" rows: each pooled benchmark's scores over its questions, and each
    family's over all of its benchmarks' questions a run asked."""
    rows = []
    pooled = table[table.benchmark.map(lambda b: get(b).pooled)]
    families = pooled.benchmark.map(lambda b: get(b).family)
    for key, group in [
        *pooled.groupby(["benchmark", "model", "method", "metric"], sort=False),
        *pooled[families.notna()]
        .assign(benchmark=families)
        .groupby(["benchmark", "model", "method", "metric"], sort=False),
    ]:
        benchmark, model, method, metric = key
        values = [v for scores in group._scores for v in scores]
        interval = mean_interval(values)
        rows.append(
            {
                "benchmark": benchmark,
                "task": POOLED,
                "model": model,
                "method": method,
                "metric": metric,
                "n": len(values),
                "score": interval.mean,
                "paper": None,
                "ci_low": interval.low,
                "ci_high": interval.high,
            }
        )
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


@cache  # asked once per macro row: a sweep's report has tens of thousands
def _scored_tasks(benchmark: str) -> frozenset[str]:
    return frozenset(tasks_of(benchmark)) & SCORED_TASKS
