"""How sure a score is: bootstrap intervals and a paired test between two runs.

Questions are the sampling unit. A task's interval resamples its questions; the
macro average's interval resamples the questions of every task at once (each
task keeps its own size) and averages the task means, as the macro score does.
The paired test compares two runs on the same questions by sign-flipping their
per-question differences: under "no difference" each difference is as likely
negated; :func:`holm` corrects a family of such tests for multiplicity. Every
function takes a seed, so an interval is the same on every rerun.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 10_000


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int


def bootstrap_mean(
    values, confidence: float = 0.95, resamples: int = RESAMPLES, seed: int = 0
) -> Interval:
    """The mean of ``values`` with a percentile bootstrap interval."""
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Interval(float(data.mean()), float(low), float(high), int(data.size))


def bootstrap_macro(
    per_task: dict[str, list[float]],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval:
    """The mean of the task means, with an interval that resamples within each task."""
    if not per_task:
        raise ValueError("no tasks to bootstrap")
    rng = np.random.default_rng(seed)
    task_means = []
    for task in sorted(per_task):  # a fixed order: the same draws on every rerun
        data = np.asarray(per_task[task], dtype=float)
        if data.size == 0:
            raise ValueError(f"task {task!r} has no scores")
        task_means.append(data[rng.integers(0, data.size, size=(resamples, data.size))].mean(1))
    macros = np.mean(task_means, axis=0)
    low, high = np.quantile(macros, [(1 - confidence) / 2, (1 + confidence) / 2])
    mean = float(np.mean([np.mean(per_task[t]) for t in per_task]))
    return Interval(mean, float(low), float(high), sum(len(v) for v in per_task.values()))


@dataclass(frozen=True)
class PairedTest:
    difference: float  # mean of a - b over the shared questions
    p_value: float  # two-sided
    n: int  # questions both runs answered


def paired_test(
    a: dict[str, float],
    b: dict[str, float],
    resamples: int = RESAMPLES,
    seed: int = 0,
    weights: dict[str, float] | None = None,
) -> PairedTest:
    """Sign-flip permutation test of run ``a`` against run ``b`` on their shared questions.

    With ``weights`` (question -> weight) the difference is the weighted mean: weights
    of 1 / (tasks x the task's questions) make it the difference of macro scores."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two runs share no question")
    diffs = np.array([a[q] - b[q] for q in shared], dtype=float)
    if weights is not None:
        w = np.array([weights[q] for q in shared], dtype=float)
        diffs = diffs * (w * w.size / w.sum())  # the weighted mean is the mean of these
    observed = abs(diffs.mean())
    if not diffs.any():
        return PairedTest(0.0, 1.0, len(shared))
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(resamples, diffs.size))
    flipped = np.abs((signs * diffs).mean(axis=1))
    # The observed assignment counts as one of the permutations (never p = 0).
    extreme = np.count_nonzero(flipped >= observed - 1e-12)
    return PairedTest(float(diffs.mean()), (extreme + 1) / (resamples + 1), len(shared))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (the family-wise error rate),
    in the order given: the i-th smallest is multiplied by m - i + 1, made no smaller
    than the one before it, and capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
