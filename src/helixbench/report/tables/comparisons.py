"""Paired tests between runs (``comparisons.csv``, ``helixbench compare``).

The report tests the pairs a reader asks for, which grow with the runs, not with
their square: per benchmark, each model's runs against its best run there (one
model across methods), each method's runs against its best run there (one method
across models), and each model's runs against its own baseline (no-tools,
closed-book). "Best" is the run's mean primary score over the benchmark's tasks
(ties: the run first in the config). Each pair is tested per task both ran, with
Holm's correction over every test. ``helixbench compare`` tests any other two.
"""

from __future__ import annotations

import pandas as pd

from ...config.plan import Plan
from ...scoring import DESCRIPTIVE_SCORERS
from ...stats import holm, paired_interval, paired_test
from ..records import ScoreLookups, primary_metric, values_of
from .scores import POOLED, ROUND

BASELINE_KINDS = frozenset({"no-tools", "closed-book"})


def is_baseline(run, runs) -> bool:
    """A run without tools that its model's runs with tools are compared with: a
    no-tools or closed-book method, or an imported run without flags whose model also
    has an imported run with them (LABBench2's ``bare`` beside its ``tools,high``)."""
    spec = run.first.method_spec
    if spec.get("kind") in BASELINE_KINDS:
        return True
    return (
        run.imported
        and not spec.get("flags")
        and any(r.model == run.model and r.imported and r.first.method_spec.get("flags")
                for r in runs)
    )  # fmt: skip


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
    "pair",  # why it is tested: "same model", "same method" or "vs baseline"
    "p_holm",  # Holm-adjusted over every test of the table
]


def asked_pairs(plan: Plan, summary: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(benchmark, run a, run b, why): the pairs the report tests (module docstring),
    a before b in the config, each pair once per benchmark."""
    order = {r.label: i for i, r in enumerate(plan.runs)}
    strength = _strength(plan, summary)
    pairs: dict[tuple[str, frozenset], tuple[str, str, str, str]] = {}

    def add(benchmark, a, b, why):
        key = (benchmark, frozenset((a.label, b.label)))
        if a.label != b.label and key not in pairs:
            first, second = sorted((a.label, b.label), key=order.__getitem__)
            pairs[key] = (benchmark, first, second, why)

    for benchmark in dict.fromkeys(t.benchmark for t in plan.tasks):
        runs = [r for r in plan.runs if any(t.benchmark == benchmark for t in r.tasks)]
        for why, of in (("same model", lambda r: r.model), ("same method", lambda r: r.method)):
            groups: dict[str, list] = {}
            for run in runs:
                groups.setdefault(of(run), []).append(run)
            for group in groups.values():
                best = max(
                    group, key=lambda r: (strength.get((r.label, benchmark), -1.0), -order[r.label])
                )
                for run in group:
                    add(benchmark, best, run, why)
        baselines: dict[str, list] = {}
        for run in runs:
            if is_baseline(run, runs):
                baselines.setdefault(run.model, []).append(run)
        for run in runs:
            if not is_baseline(run, runs):
                for base in baselines.get(run.model, []):
                    add(benchmark, run, base, "vs baseline")
    return list(pairs.values())


def pair_formula(plan: Plan, pairs: list) -> str:
    """How many pairs the report tests and why that many, in words."""
    benchmarks = list(dict.fromkeys(p[0] for p in pairs))
    why = {w: sum(p[3] == w for p in pairs) for w in ("same model", "same method", "vs baseline")}
    return (
        f"per benchmark, Σ over models (its runs − 1) + Σ over methods (its runs − 1) + the "
        f"baseline pairs not already counted = {why['same model']:,} + {why['same method']:,} "
        f"+ {why['vs baseline']:,} = {len(pairs):,} pair{'s' * (len(pairs) != 1)} over "
        f"{len(benchmarks)} "
        f"benchmark{'s' * (len(benchmarks) != 1)} ({len(plan.runs):,} runs), each tested on "
        "every task both ran"
    )


def _strength(plan: Plan, summary: pd.DataFrame) -> dict[tuple[str, str], float]:
    """(run, benchmark) -> the mean of its tasks' primary scores there."""
    if summary.empty:
        return {}
    rows = summary[~summary.task.isin(("macro", POOLED))]
    primary = {t: primary_metric(plan, t) for t in rows.task.unique()}
    rows = rows[[primary[t] == m for t, m in values_of(rows, "task", "metric")]]
    means = rows.assign(run=rows.model + " / " + rows.method).groupby(["run", "benchmark"]).score
    return {key: float(v) for key, v in means.mean().items()}


def comparison_table(plan: Plan, scores: ScoreLookups, summary: pd.DataFrame) -> pd.DataFrame:
    """Paired tests (sign-flip permutation over the shared questions) of the asked
    pairs (:func:`asked_pairs`), per task on its primary metric, Holm over all."""
    tasks = {r.label: {(t.benchmark, t.task) for t in r.tasks} for r in plan.runs}
    jobs = []  # (pair, task) in the table's order
    for benchmark, a, b, why in asked_pairs(plan, summary):
        shared = sorted((bm, t) for bm, t in tasks[a] & tasks[b] if bm == benchmark)
        jobs += [(benchmark, a, b, why, task) for _, task in shared]
    # Computed a task at a time: its tests share the sign flips of its size (stats).
    done: list = [None] * len(jobs)
    for i in sorted(range(len(jobs)), key=lambda i: jobs[i][4]):
        benchmark, a, b, _, task = jobs[i]
        done[i] = compare_runs(plan, scores, a, b, benchmark, task)
    # A column at a time, each row let go once read (a sweep's table has hundreds of
    # thousands of rows: as dicts twice over, they took half a gigabyte at 10,000 runs).
    columns: dict[str, list] = {name: [] for name in COMPARISON_COLUMNS}
    tested = [name for name in COMPARISON_COLUMNS if name != "p_holm"]
    for i, job in enumerate(jobs):
        for row in done[i]:
            row["pair"] = job[3]
            for name in tested:
                columns[name].append(row[name])
        done[i] = None
    if not columns["p_value"]:
        return pd.DataFrame([], columns=COMPARISON_COLUMNS)
    columns["p_holm"] = [round(adjusted, 4) for adjusted in holm(columns["p_value"])]
    return pd.DataFrame(columns, columns=COMPARISON_COLUMNS)


def compare_runs(plan: Plan, scores: ScoreLookups, a: str, b: str, benchmark: str, task: str):
    """The paired test of two runs on a task's primary metric; none where that metric
    describes behaviour rather than scores it (Hu et al.'s contaminated sets)."""
    metric = primary_metric(plan, task)
    if metric in DESCRIPTIVE_SCORERS:
        return []
    return _compare(scores, a, b, benchmark, task, metric)


def _compare(scores: ScoreLookups, a: str, b: str, benchmark: str, task: str, metric: str):
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
            "score_a": round(sum(map(score_a.__getitem__, shared)) / len(shared), ROUND),
            "score_b": round(sum(map(score_b.__getitem__, shared)) / len(shared), ROUND),
            "difference": round(test.difference, ROUND),
            "p_value": round(test.p_value, 4),
        }
    ]


def compare_two(table: pd.DataFrame, a: str, b: str) -> list[dict]:
    """Runs ``a`` and ``b`` (labels ``model / method``) compared as the report compares
    them, from a per-question table (``question_scores``: the report's, or several
    working directories' read together): per benchmark both ran, each task in the
    benchmark's order on the leaderboard's metric (``extracted`` answers on GeneTuring
    and GeneHop, embedding similarity on gene sets, else the task's primary metric),
    then the macro row the headline states: the difference of macro scores over the
    questions both answered, its interval (the test inverted) and the test's p.
    ConfigError names a run that is not there, or two that share nothing."""
    from ...benchmarks import tasks_of
    from ...errors import ConfigError
    from ..records import (
        macro_comparison,
        paired_by_task,
        score_index,
    )
    from .protocols import metric_of

    runs = list(dict.fromkeys(table.run))
    for name in (a, b):
        if name not in runs:
            raise ConfigError(f"no run {name!r}; runs: {', '.join(runs)}")
    both = table[table.run.isin([a, b])]
    rows = []
    for benchmark in dict.fromkeys(both[both.run == a].benchmark):
        of_benchmark = both[both.benchmark == benchmark]
        board_metric = metric_of(benchmark)
        if board_metric in set(of_benchmark.metric):
            of_benchmark = of_benchmark[of_benchmark.metric == board_metric]
        else:
            of_benchmark = of_benchmark[of_benchmark.primary]  # its tasks' own metrics
        scores = score_index(of_benchmark)
        order = {task: i for i, task in enumerate(tasks_of(benchmark))}
        tasks = sorted(dict.fromkeys(of_benchmark.task), key=lambda t: order.get(t, len(order)))
        metric_of_task = dict(zip(of_benchmark.task, of_benchmark.metric, strict=True))
        paired = {}
        for task in tasks:
            found = paired_by_task(scores, a, b, [task], metric_of_task[task])
            if found:
                paired |= found
                rows.append(_task_row(benchmark, task, metric_of_task[task], *found[task]))
        if len(paired) > 1:
            test, interval = macro_comparison(paired)
            means = [
                [sum(side[q] for q in shared) / len(shared) for side in (of_a, of_b)]
                for of_a, of_b, shared in paired.values()
            ]
            rows.append(
                {
                    "benchmark": benchmark,
                    "task": f"macro ({len(paired)} tasks)",
                    "metric": ", ".join(dict.fromkeys(metric_of_task[t] for t in paired)),
                    "n": test.n,
                    "score_a": sum(m[0] for m in means) / len(means),
                    "score_b": sum(m[1] for m in means) / len(means),
                    "difference": interval.mean,
                    "ci_low": interval.low,
                    "ci_high": interval.high,
                    "p_value": test.p_value,
                }
            )
    if not rows:
        raise ConfigError("the two runs share no scored question")
    return rows


def _task_row(benchmark: str, task: str, metric: str, of_a: dict, of_b: dict, shared) -> dict:
    """One task of :func:`compare_two`: its paired test and the interval it implies."""
    a = {q: of_a[q] for q in shared}
    b = {q: of_b[q] for q in shared}
    test, interval = paired_test(a, b), paired_interval(a, b)
    return {
        "benchmark": benchmark,
        "task": task,
        "metric": metric,
        "n": test.n,
        "score_a": sum(a.values()) / len(a),
        "score_b": sum(b.values()) / len(b),
        "difference": test.difference,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "p_value": test.p_value,
    }
