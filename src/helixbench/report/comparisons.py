"""Paired tests between runs (``comparisons.csv``, ``helixbench compare``).

The report shows the comparisons a reader asks for: one model under two methods
(with tools or without, one prompt or another) and two models under one method,
with Holm's correction over the tests it shows. ``comparisons.csv`` holds every
test made (every pair of runs when there are few), each marked with the reader's
question it answers, if any.
"""

from __future__ import annotations

import pandas as pd

from ..plan import Plan
from ..stats import holm, paired_test
from .records import ScoreIndex, primary_metric
from .scores import ROUND

MAX_ALL_PAIRS = 8  # up to this many runs, every pair is tested; beyond, each against the first

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
    "pair",  # "same model" / "same method": a comparison the report shows; "" otherwise
    "p_holm",  # Holm-adjusted over the comparisons the report shows
]


def comparison_table(plan: Plan, scores: ScoreIndex) -> pd.DataFrame:
    """Paired tests (sign-flip permutation over the shared questions) between runs,
    per task on its primary metric: every pair when there are few runs, else each
    run against the first; and always the pairs a reader asks for (one model under
    two methods, two models under one method), marked in ``pair`` and corrected
    together by Holm's method. ``helixbench compare`` tests any other two."""
    runs = plan.runs
    asked = {}
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            if a.model == b.model:
                asked[a.label, b.label] = "same model"
            elif a.method == b.method:
                asked[a.label, b.label] = "same method"
    labels = [r.label for r in runs]
    if len(labels) <= MAX_ALL_PAIRS:
        pairs = [(a, b) for i, a in enumerate(labels) for b in labels[i + 1 :]]
    else:
        pairs = [(labels[0], b) for b in labels[1:]]
        pairs += [pair for pair in asked if pair not in pairs]
    tasks = {r.label: {(t.benchmark, t.task) for t in r.tasks} for r in runs}
    rows = []
    for a, b in pairs:
        for benchmark, task in sorted(tasks[a] & tasks[b]):
            for row in compare_runs(plan, scores, a, b, benchmark, task):
                rows.append({**row, "pair": asked.get((a, b), ""), "p_holm": None})
    shown = [row for row in rows if row["pair"]]
    for row, adjusted in zip(shown, holm([r["p_value"] for r in shown]), strict=True):
        row["p_holm"] = round(adjusted, 4)
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def shown_comparisons(comparisons: pd.DataFrame) -> pd.DataFrame:
    """The comparisons the report shows (a reader's pairs), with their Holm p-values."""
    return comparisons[comparisons.pair != ""]


def compare_runs(plan: Plan, scores: ScoreIndex, a: str, b: str, benchmark: str, task: str):
    return _compare(scores, a, b, benchmark, task, primary_metric(plan, task))


def _compare(scores: ScoreIndex, a: str, b: str, benchmark: str, task: str, metric: str):
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


def compare_two(table: pd.DataFrame, a: str, b: str) -> list[dict]:
    """Paired tests of runs ``a`` and ``b`` (labels ``model / method``) on every task both
    ran, each on its primary metric, from a per-question table (``question_scores``:
    the report's, or several working directories' read together); ConfigError names a
    run that is not there, or two that share nothing."""
    from ..errors import ConfigError
    from .records import score_index

    runs = list(dict.fromkeys(table.run))
    for name in (a, b):
        if name not in runs:
            raise ConfigError(f"no run {name!r}; runs: {', '.join(runs)}")
    primary = table[table.primary]
    scores = score_index(primary)
    tasks = {
        run: list(dict.fromkeys(zip(of.benchmark, of.task, of.metric, strict=True)))
        for run, of in primary.groupby("run", sort=False)
    }
    of_b = set(tasks[b])
    rows = []
    for benchmark, task, metric in tasks[a]:
        if (benchmark, task, metric) in of_b:
            rows += _compare(scores, a, b, benchmark, task, metric)
    if not rows:
        raise ConfigError("the two runs share no scored question")
    return rows
