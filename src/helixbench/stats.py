"""How sure a score is: intervals for a score and a paired test between two runs.

Questions are the sampling unit. One method per kind of score, the same in every
table, the docs and ``helixbench compare`` (:func:`mean_interval`, :func:`macro_interval`):

- a share of right answers (every value 0 or 1) gets the exact Clopper-Pearson
  interval (SciPy's ``binomtest(...).proportion_ci(method="exact")``, from the beta
  quantiles that define it), on any number of questions, never zero-width: 0 right
  of 14 is [0, 0.232];
- a macro of such shares (the mean of task means) gets the same exact interval on its
  effective number of questions (Korn and Graubard's for a stratified share: with T
  tasks of n_t questions, n_eff = 1 / sum((1/T)^2 / n_t), the whole count for one task);
- a graded score (ROUGE, recall, similarity) gets a percentile bootstrap: a task's
  interval resamples its questions; the macro's resamples the questions of every task
  at once (each task keeps its own size) and averages the task means. Where every
  value is the same the bootstrap is a point; the interval is then the exact one of a
  share with that mean (the widest a mean of values in [0, 1] can vary).
The paired test compares two runs on the same questions by sign-flipping their
per-question differences: under "no difference" each difference is as likely
negated; :func:`holm` corrects a family of such tests for multiplicity. Every
function takes a seed, so an interval is the same on every rerun.

An interval stays within what its statistic can be: a score in [0, 1], a difference
of two in [-1, 1] (the bootstrap's never leaves its values' range; the inverted test
is bounded so). And below :data:`MIN_QUESTIONS` questions (shared ones, for two runs)
no interval is given (its bounds None): on so few a bootstrap's interval shrinks to
a point exactly where the evidence is thinnest, and a sign-flip test cannot reject
anything, so its interval would be the whole range. The report says "too few
questions to tell" there.

Array speed: the draws depend only on the seed and the sizes, so they are made once
per (sizes, seed) and kept, as how often each resample drew each value (:func:`_counts`)
and as sign flips (:func:`_signs`), and the statistics are array operations on them. A
resample's mean is the product of how often it drew each value with the values: a
matrix product (a fifth to an eighth of the time of gathering the drawn values, on one
thread: a score job's). Where the values are whole numbers
(right/wrong scores and their differences) its sums are exactly those of adding the
drawn values one by one, so the results are the same, to the bit, as drawing each
interval's and each test's resamples anew; graded values' sums are the same draws
added in another order, which can move a mean's last bit (1e-16), never a figure the
report prints (7 decimals).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import betaincinv

RESAMPLES = 10_000
# The fewest questions a bootstrap interval (a graded score's) or a paired difference's
# interval is given on (ten: the sign-flip test can reject at 5% from six on, and a
# bootstrap of fewer than ten answers has only a handful of distinct means to take
# percentiles of). An exact interval needs no minimum.
MIN_QUESTIONS = 10
TOO_FEW = f"too few questions to tell (fewer than {MIN_QUESTIONS})"


def _draws(sizes: tuple[int, ...], resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """Per size, in order, from one generator: the indices each resample draws
    (``rng.integers(0, size, size=(resamples, size))``); what is kept of them is their
    counts (:func:`_counts`), the only form a statistic reads."""
    rng = np.random.default_rng(seed)
    return tuple(rng.integers(0, size, size=(resamples, size)) for size in sizes)


@lru_cache(maxsize=16)
def _counts(sizes: tuple[int, ...], resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """Per size: how often each item is drawn in each resample (resamples x size)."""
    out = []
    for size, drawn in zip(sizes, _draws(sizes, resamples, seed), strict=True):
        flat = (drawn + np.arange(resamples)[:, None] * size).ravel()
        out.append(np.bincount(flat, minlength=resamples * size).reshape(resamples, size) * 1.0)
    return tuple(out)


def _resample_means(data: list[np.ndarray], resamples: int, seed: int) -> list[np.ndarray]:
    """Each array's mean in every resample, the arrays drawn in order from one generator."""
    counts = _counts(tuple(v.size for v in data), resamples, seed)
    return [c @ v / v.size for c, v in zip(counts, data, strict=True)]


@lru_cache(maxsize=16)
def _signs(size: int, resamples: int, seed: int) -> np.ndarray:
    """The sign flips of a permutation test: ``resamples`` x ``size`` of -1 and 1."""
    return np.random.default_rng(seed).choice((-1.0, 1.0), size=(resamples, size))


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    low, high = np.quantile(samples, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float | None  # None: fewer than MIN_QUESTIONS questions, too few to tell
    high: float | None
    n: int

    @property
    def told(self) -> bool:
        """Whether the interval was given (enough questions)."""
        return self.low is not None


def bootstrap_mean(
    values, confidence: float = 0.95, resamples: int = RESAMPLES, seed: int = 0
) -> Interval:
    """The mean of ``values`` with a percentile bootstrap interval."""
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        raise ValueError("no values to bootstrap")
    if data.size < MIN_QUESTIONS:
        return Interval(float(data.mean()), None, None, int(data.size))
    (means,) = _resample_means([data], resamples, seed)
    low, high = _percentiles(means, confidence)
    return Interval(float(data.mean()), low, high, int(data.size))


def is_proportion(values: np.ndarray) -> bool:
    """Whether every value is 0 or 1 (a right/wrong score): its mean is a share."""
    return bool(np.isin(values, (0.0, 1.0)).all())


def proportion_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """The share ``successes / n`` with its exact (Clopper-Pearson) interval: SciPy's
    ``binomtest(...).proportion_ci(method="exact")``, from the beta quantiles that
    define it (``scipy.special.betaincinv``: the same bounds to 1e-12, a thousand times
    faster, and a fraction of ``scipy.stats``' import, which every score job paid)."""
    if n <= 0:
        raise ValueError("no questions to take a share of")
    return _effective_exact(successes / n, float(n), int(n), confidence)


def _effective_exact(mean: float, n_eff: float, n: int, confidence: float) -> Interval:
    """Clopper-Pearson on a count (an effective one need not be whole): ``mean * n_eff``
    right of ``n_eff``."""
    alpha = 1 - confidence
    x = mean * n_eff
    low = 0.0 if x <= 1e-12 else float(betaincinv(x, n_eff - x + 1, alpha / 2))
    high = 1.0 if x >= n_eff - 1e-12 else float(betaincinv(x + 1, n_eff - x, 1 - alpha / 2))
    return Interval(mean, low, high, n)


def mean_interval(values, confidence: float = 0.95) -> Interval:
    """A score's mean over its questions with the interval its kind of score gets: exact
    for a share of right answers, else the bootstrap (a point bootstrap widened to the
    exact interval of a share with that mean)."""
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        raise ValueError("no values to take an interval of")
    if is_proportion(data):
        return proportion_interval(int(data.sum()), int(data.size), confidence)
    interval = bootstrap_mean(data, confidence)
    if interval.told and interval.low == interval.high:
        return _effective_exact(interval.mean, float(data.size), interval.n, confidence)
    return interval


def macro_interval(per_task: dict[str, list[float]], confidence: float = 0.95) -> Interval:
    """The mean of the task means with the interval its kind of score gets: exact on the
    effective number of questions for shares of right answers, else the bootstrap."""
    if not per_task:
        raise ValueError("no tasks to take an interval of")
    data = {task: np.asarray(list(v), dtype=float) for task, v in per_task.items()}
    for task, values in data.items():
        if values.size == 0:
            raise ValueError(f"task {task!r} has no scores")
    if len(data) == 1:
        return mean_interval(next(iter(data.values())), confidence)
    # Korn-Graubard's effective count of a mean of T task means: 1 / sum((1/T)^2 / n_t).
    n_eff = len(data) ** 2 / sum(1 / v.size for v in data.values())
    if all(is_proportion(v) for v in data.values()):
        mean = float(np.mean([v.mean() for v in data.values()]))
        return _effective_exact(mean, n_eff, sum(v.size for v in data.values()), confidence)
    interval = bootstrap_macro(per_task, confidence)
    if interval.told and interval.low == interval.high:
        return _effective_exact(interval.mean, n_eff, interval.n, confidence)
    return interval


def bootstrap_macro(
    per_task: dict[str, list[float]],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval:
    """The mean of the task means, with an interval that resamples within each task."""
    if not per_task:
        raise ValueError("no tasks to bootstrap")
    tasks = sorted(per_task)  # a fixed order: the same draws on every rerun
    data = [np.asarray(per_task[task], dtype=float) for task in tasks]
    for task, values in zip(tasks, data, strict=True):
        if values.size == 0:
            raise ValueError(f"task {task!r} has no scores")
    mean = float(np.mean([np.mean(per_task[t]) for t in per_task]))
    n = sum(len(v) for v in per_task.values())
    if n < MIN_QUESTIONS:
        return Interval(mean, None, None, n)
    macros = np.mean(_resample_means(data, resamples, seed), axis=0)
    low, high = _percentiles(macros, confidence)
    return Interval(mean, low, high, n)


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
    diffs, w = paired_differences(a, b, weights)
    return sign_flip_test(diffs, w, resamples, seed)


def paired_differences(
    a: dict[str, float], b: dict[str, float], weights: dict[str, float] | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """The differences ``a - b`` on the questions both answered (in question order)
    and, with ``weights``, their weights: what :func:`sign_flip_test` and
    :func:`inverted_interval` take (one pair's, made once for both)."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two runs share no question")
    diffs = np.array([a[q] - b[q] for q in shared], dtype=float)
    w = None if weights is None else np.array([weights[q] for q in shared], dtype=float)
    return diffs, w


def sign_flip_test(
    diffs: np.ndarray, w: np.ndarray | None = None, resamples: int = RESAMPLES, seed: int = 0
) -> PairedTest:
    """:func:`paired_test` of the differences (and weights) :func:`paired_differences`
    gives."""
    n = diffs.size
    if w is not None:
        diffs = diffs * (w * w.size / w.sum())  # the weighted mean is the mean of these
    observed = abs(diffs.mean())
    if not diffs.any():
        return PairedTest(0.0, 1.0, n)
    signs = _signs(diffs.size, resamples, seed)
    if np.array_equal(diffs, np.round(diffs)):  # whole numbers: the product's sums are exact
        flipped = np.abs(signs @ diffs / diffs.size)
    else:
        flipped = np.abs((signs * diffs).mean(axis=1))
    # The observed assignment counts as one of the permutations (never p = 0).
    extreme = np.count_nonzero(flipped >= observed - 1e-12)
    return PairedTest(float(diffs.mean()), (extreme + 1) / (resamples + 1), n)


def paired_interval(
    a: dict[str, float],
    b: dict[str, float],
    weights: dict[str, float] | None = None,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
    span: float = 1.0,
) -> Interval:
    """The differences (a - b, weighted as :func:`paired_test` weighs them) that the
    same sign-flip test does not reject at ``1 - confidence``: the test inverted, so
    the interval leaves out 0 exactly when the test's p-value is at most that level.
    Bounded by what a difference can be (``span``: scores in [0, 1] differ by at most
    1); none below :data:`MIN_QUESTIONS` shared questions.

    For a shift ``d`` the test flips the signs of the shifted differences: with the
    sign matrix ``S`` and the scaled differences ``x`` (weights ``c``), the flipped
    means are ``S x / n - d S c / n``; each side's bound is found by bisection."""
    diffs, w = paired_differences(a, b, weights)
    return inverted_interval(diffs, w, confidence, resamples, seed, span)


def inverted_interval(
    diffs: np.ndarray,
    w: np.ndarray | None = None,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
    span: float = 1.0,
) -> Interval:
    """:func:`paired_interval` of the differences (and weights)
    :func:`paired_differences` gives."""
    n = diffs.size
    scale = np.ones(n) if w is None else w * w.size / w.sum()
    mean = float((diffs * scale).mean())
    if diffs.size < MIN_QUESTIONS:
        return Interval(mean, None, None, n)
    if not diffs.any():  # no question told apart: the flips cannot move; bound instead
        # by the exact interval of the share of questions that could differ (none seen).
        reach = min(span, proportion_interval(0, diffs.size, confidence).high)
        return Interval(0.0, -reach, reach, n)
    signs = _signs(diffs.size, resamples, seed)
    flipped_x = signs @ (diffs * scale) / diffs.size
    flipped_c = signs @ scale / diffs.size
    alpha = 1 - confidence

    def rejected(shift: float) -> bool:
        observed = abs(mean - shift)
        extreme = np.count_nonzero(np.abs(flipped_x - shift * flipped_c) >= observed - 1e-12)
        return (extreme + 1) / (resamples + 1) <= alpha

    def bound(outer: float) -> float:  # between the mean (kept) and outer (rejected)
        inner = mean
        if not rejected(outer):
            return outer
        for _ in range(50):
            middle = (inner + outer) / 2
            inner, outer = (inner, middle) if rejected(middle) else (middle, outer)
        return inner

    reach = float(np.abs(diffs).max()) + 1.0  # past every difference: rejected
    low, high = max(bound(mean - reach), -span), min(bound(mean + reach), span)
    return Interval(mean, low, high, n)


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
