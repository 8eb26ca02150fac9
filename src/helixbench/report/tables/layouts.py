"""The paper's own layouts: Table 2 (GeneTuring), Table 3 (GeneHop), Figure 2 (ablation)."""

from __future__ import annotations

import pandas as pd

from ...benchmarks import tasks_of
from ...benchmarks.geneturing import MODULES as GENETURING_MODULES
from ...config.plan import Plan, run_label
from ...methods.genegpt import PRESETS
from ...scoring import scorers_for
from ..records import primary_metric
from ..text import as_published, fmt, fmt_bracket, fmt_interval
from .paper import TABLE2_MODULES, TABLE3, published
from .scores import ROUND, _recording

FULL = PRESETS["genegpt-full"]  # the prompt Figure 2's changes are measured against


def table2(
    plan: Plan, scores: pd.DataFrame, metric: str = "genegpt", intervals: bool = False
) -> pd.DataFrame:
    """GeneTuring in the paper's layout: modules, tasks, module averages, overall average;
    with ``intervals``, each task and macro score carries its 95% bootstrap interval. A
    run that reproduces one of the paper's columns (a replayed GeneGPT-full or -slim
    run, under the paper's metric) has the paper's values beside it."""

    def cell(hit) -> str:
        if not hit:
            return "n/a"
        if intervals:
            return f"{fmt(hit.score)} {fmt_bracket(hit.ci_low, hit.ci_high)}"
        return fmt(hit.score)

    runs = list(dict.fromkeys(t.label for t in plan.tasks if t.benchmark == "geneturing"))
    if not runs:  # no GeneTuring run: no table (the report leaves the section out)
        return pd.DataFrame()
    # Any task of a run tells its recording and mask.
    by_run = {t.label: t for t in plan.tasks if t.benchmark == "geneturing"}
    sel = scores[(scores.benchmark == "geneturing") & (scores.metric == metric)]
    lookup = {(run_label(r.model, r.method), r.task): r for r in sel.itertuples()}
    masks = {run: task.method_spec.get("mask") for run, task in by_run.items()}
    reproduces = {
        run: published(_recording(by_run[run]), masks[run], "geneturing", "macro", metric)
        is not None
        for run in runs
    }
    rows = []
    for module, tasks in GENETURING_MODULES.items():
        for task in tasks:
            row = {"module": module, "task": task}
            for run in runs:
                hit = lookup.get((run, task))
                row[run] = cell(hit)
                if reproduces[run]:
                    row[f"{run} (paper)"] = as_published(hit.paper) if hit else ""
            rows.append(row)
        row = {"module": module, "task": "Average"}
        for run in runs:
            values = [lookup[(run, t)].score for t in tasks if (run, t) in lookup]
            row[run] = fmt(sum(values) / len(values)) if len(values) == len(tasks) else "n/a"
            if reproduces[run]:
                row[f"{run} (paper)"] = as_published(TABLE2_MODULES[masks[run]][module])
        rows.append(row)
    row = {"module": "Overall", "task": "Macro average"}
    for run in runs:
        hit = lookup.get((run, "macro"))
        row[run] = cell(hit)
        if reproduces[run]:
            row[f"{run} (paper)"] = as_published(hit.paper) if hit else ""
    rows.append(row)
    return pd.DataFrame(rows)


def genehop_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """GeneHop in the layout of the paper's Table 3, one row per task and metric: the
    two tasks the paper judged by hand are scored by their configured scorers."""
    runs = list(dict.fromkeys(t.label for t in plan.tasks if t.benchmark == "genehop"))
    if not runs:  # the paper's figures alone are no section
        return pd.DataFrame()
    sel = scores[(scores.benchmark == "genehop") & (scores.task != "macro")]
    lookup = {(run_label(r.model, r.method), r.task, r.metric): r for r in sel.itertuples()}
    rows = []
    for task in tasks_of("genehop"):
        for metric in scorers_for(task, plan.scoring):
            row = {"task": task, "metric": metric}
            for run in runs:
                hit = lookup.get((run, task, metric))
                row[run] = fmt(hit.score) if hit else "n/a"
                row[f"{run} 95% CI"] = fmt_interval(hit.ci_low, hit.ci_high) if hit else ""
            paper = TABLE3[task][1]
            row["paper (GeneGPT, Table 3)"] = as_published(paper) + (
                "" if task == "Disease gene location" else " (judged by hand)"
            )
            rows.append(row)
    return pd.DataFrame(rows)


def ablation_table(plan: Plan, summary: pd.DataFrame) -> pd.DataFrame:
    """GeneGPT's Figure 2: per GeneTuring task, each mask's score minus the full
    prompt's (111111) for the same model, on the primary metric."""
    masks = {r.label: r.first.method_spec.get("mask") for r in plan.runs}
    sel = summary[(summary.benchmark == "geneturing") & (summary.task != "macro")]
    rows = []
    runs_of: dict[str, list] = {}  # (a model's runs, found once: a sweep has thousands)
    for run in plan.runs:
        runs_of.setdefault(run.model, []).append(run)
    for model, runs in runs_of.items():
        full = [r.label for r in runs if masks[r.label] == FULL]
        if not full:
            continue
        for run in runs:
            if masks[run.label] in (None, FULL):
                continue
            for task in tasks_of("geneturing"):
                metric = primary_metric(plan, task)
                pick = sel[(sel.task == task) & (sel.metric == metric)]
                mine = pick[(pick.model == model) & (pick.method == run.method)]
                labels = [run_label(m, t) for m, t in zip(pick.model, pick.method, strict=True)]
                base = pick[[label == full[0] for label in labels]]
                if mine.empty or base.empty:
                    continue
                rows.append(
                    {
                        "model": model,
                        "method": run.method,
                        "mask": masks[run.label],
                        "task": task,
                        "metric": metric,
                        "score": float(mine.score.iloc[0]),
                        "full": float(base.score.iloc[0]),
                        "change": round(float(mine.score.iloc[0] - base.score.iloc[0]), ROUND),
                    }
                )
    columns = ["model", "method", "mask", "task", "metric", "score", "full", "change"]
    return pd.DataFrame(rows, columns=columns)
