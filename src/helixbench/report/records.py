"""What the report reads: every run's per-question scores and run records, read once."""

from __future__ import annotations

import pandas as pd

from ..config.plan import Plan, run_label
from ..datasets.jsonfiles import read_jsonl
from ..scoring import scorers_for
from ..stats import (
    Interval,
    PairedTest,
    inverted_interval,
    paired_differences,
    paired_test,
    sign_flip_test,
)


def load_scores(plan: Plan, runs=None) -> pd.DataFrame:
    """The score lines of ``runs`` (every run of the plan where not given)."""
    rows = []
    for run in plan.runs if runs is None else runs:
        rows += read_jsonl(run.score_path)
    return scores_frame(rows)


def scores_frame(rows: list[dict]) -> pd.DataFrame:
    """Score lines (``results/scores/``) as a table, with each row's run label."""
    frame = pd.DataFrame(
        rows,
        columns=[
            "question_id",
            "model",
            "method",
            "benchmark",
            "task",
            "metric",
            "score",
            "demo",
            "error",
            "answered_as",
            "scored_by",  # the encoder of an embedding score (a stand-in says so)
        ],
    )
    labels: dict[tuple, str] = {}  # (from the rows: a frame's strings iterate slowly)
    frame["run"] = [
        labels.get(key) or labels.setdefault(key, run_label(*key))
        for key in ((row["model"], row["method"]) for row in rows)
    ]
    return frame


def values_of(frame: pd.DataFrame, *columns: str):
    """The ``columns``' values a row at a time, as Python values (an Arrow-backed
    column iterates a value at a time slowly; its list comes in one call)."""
    return zip(*(frame[column].tolist() for column in columns), strict=True)


def rows_by_run(frame: pd.DataFrame):
    """``label -> that run's rows of frame``, in the frame's order: one grouping for a
    loop over a sweep's runs, where a mask a run would read every row once a run."""
    where = frame.groupby("run", sort=False, observed=True).indices
    return lambda label: frame.iloc[where[label]] if label in where else frame.iloc[:0]


def primary_metric(plan: Plan, task: str) -> str:
    return scorers_for(task, plan.scoring)[0]


class ScoreLookups:
    """(run, task, metric) -> {question id: score}, by ``get``: what the paired tests
    ask of an index, held (:class:`ScoreIndex`) or stored (``report.store``)."""

    def get(self, key: tuple[str, str, str], default=None) -> dict[str, float] | None:
        raise NotImplementedError

    def __getitem__(self, key: tuple[str, str, str]) -> dict[str, float]:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key) -> bool:
        return self.get(key) is not None


class ScoreIndex(ScoreLookups):
    """(run, task, metric) -> {question id: score}: the paired tests, the error types
    and the per-question view look scores up this way. Built from the table's groups
    at once; a group's mapping is made when first asked for (a sweep's table has
    millions of rows, and a report asks for a small share of them)."""

    def __init__(self, scores: pd.DataFrame):
        self._scores = scores
        self._of_benchmark: dict[str, ScoreIndex] = {}
        # Question ids as codes into their distinct values: no string a row.
        ids = pd.Categorical(scores.question_id)
        self._codes, self._ids = ids.codes, ids.categories.to_numpy(dtype=object)
        self._values = scores.score.to_numpy(dtype=float)
        groups = scores.groupby(["run", "task", "metric"], sort=False).indices
        self._rows = {tuple(str(k) for k in key): rows for key, rows in groups.items()}
        self._made: dict[tuple[str, str, str], dict[str, float]] = {}

    def get(self, key: tuple[str, str, str], default=None) -> dict[str, float] | None:
        if key not in self._made:
            rows = self._rows.get(key)
            if rows is None:
                return default
            ids = self._ids[self._codes[rows]]
            self._made[key] = dict(zip(ids, self._values[rows].tolist(), strict=True))
        return self._made[key]

    def __contains__(self, key) -> bool:
        return key in self._rows

    def keys(self):
        return self._rows.keys()

    def for_benchmark(self, benchmark: str) -> ScoreIndex:
        """The index of one benchmark's scores (a task name can be two benchmarks':
        GeneTuring's and GeneTuring 2025's Gene alias), made once."""
        if benchmark not in self._of_benchmark:
            of = self._scores[self._scores.benchmark == benchmark]
            self._of_benchmark[benchmark] = ScoreIndex(of)
        return self._of_benchmark[benchmark]


def score_index(scores: pd.DataFrame) -> ScoreIndex:
    return ScoreIndex(scores)


def paired_by_task(
    index: ScoreLookups, run_a: str, run_b: str, tasks, metric
) -> dict[str, tuple[dict[str, float], dict[str, float], list[str]]]:
    """task -> (run a's scores, run b's scores, the questions both answered), for the
    ``tasks`` where they share a question on ``metric`` (a name, or a function of the
    task giving its metric: the question bank's each task's primary): what a paired
    test of two runs' macro scores compares."""
    paired = {}
    for task in tasks:
        name = metric(task) if callable(metric) else metric
        of_a = index.get((run_a, task, name), {})
        of_b = index.get((run_b, task, name), {})
        shared = sorted(set(of_a) & set(of_b))
        if shared:
            paired[task] = (of_a, of_b, shared)
    return paired


def _macro_weighted(paired: dict) -> tuple[dict, dict, dict]:
    """Each question's scores and weight 1 / (tasks x its task's shared questions), so
    that each task counts once."""
    score_a, score_b, weights = {}, {}, {}
    for of_a, of_b, shared in paired.values():
        weight = 1 / (len(paired) * len(shared))
        score_a.update((q, of_a[q]) for q in shared)
        score_b.update((q, of_b[q]) for q in shared)
        weights.update(dict.fromkeys(shared, weight))
    return score_a, score_b, weights


def macro_paired_test(paired: dict) -> PairedTest:
    """The sign-flip test of two runs' macro scores over the questions both answered
    (``paired`` from :func:`paired_by_task`)."""
    score_a, score_b, weights = _macro_weighted(paired)
    return paired_test(score_a, score_b, weights=weights)


def macro_comparison(paired: dict) -> tuple[PairedTest, Interval]:
    """The test of :func:`macro_paired_test` and the macro difference with the interval
    of differences the same test does not reject at 5% (it leaves out 0 exactly when
    the test's p <= 0.05), from one weighing of the questions."""
    diffs, w = paired_differences(*_macro_weighted(paired))
    return sign_flip_test(diffs, w), inverted_interval(diffs, w)
