"""Bootstrap intervals and the paired test."""

from __future__ import annotations

import numpy as np
import pytest

from helixbench.stats import bootstrap_macro, bootstrap_mean, paired_test


def test_bootstrap_interval_is_reproducible_and_contains_the_mean():
    values = [1, 0, 1, 1, 0, 0.5, 1, 0, 1, 1] * 5
    first = bootstrap_mean(values, seed=7)
    assert first == bootstrap_mean(values, seed=7)
    assert first.low <= first.mean <= first.high
    assert first.mean == pytest.approx(np.mean(values))
    assert first.n == 50


def test_bootstrap_of_constant_scores_has_no_width():
    interval = bootstrap_mean([1.0] * 20)
    assert (interval.low, interval.mean, interval.high) == (1.0, 1.0, 1.0)


def test_macro_interval_averages_task_means():
    per_task = {"a": [1.0] * 10, "b": [0.0, 1.0] * 10}
    interval = bootstrap_macro(per_task, seed=1)
    assert interval.mean == pytest.approx(0.75)
    assert interval.low <= 0.75 <= interval.high
    assert interval == bootstrap_macro(dict(reversed(per_task.items())), seed=1)


def test_paired_test_of_identical_runs_gives_p_1():
    run = {f"q{i}": float(i % 2) for i in range(40)}
    result = paired_test(run, dict(run))
    assert (result.difference, result.p_value, result.n) == (0.0, 1.0, 40)


def test_paired_test_finds_a_clear_difference_and_uses_shared_questions_only():
    a = {f"q{i}": 1.0 for i in range(30)}
    b = {f"q{i}": 0.0 for i in range(30)} | {"extra": 1.0}
    result = paired_test(a, b, seed=3)
    assert result.difference == 1.0 and result.n == 30
    assert result.p_value < 0.001
    assert paired_test(a, b, seed=3) == result


def test_empty_inputs_are_errors():
    with pytest.raises(ValueError):
        bootstrap_mean([])
    with pytest.raises(ValueError):
        paired_test({"a": 1.0}, {"b": 1.0})


def test_drawn_once_the_statistics_are_those_of_drawing_each_anew():
    """Intervals and tests from the kept draws equal those of drawing every interval's
    and test's resamples anew (the report's code before): to the bit for right/wrong
    scores, and for graded ones but for the last bits of another order of summation."""
    import numpy as np

    from helixbench.stats import MIN_QUESTIONS, bootstrap_macro, bootstrap_mean, paired_test

    def interval(groups):
        rng = np.random.default_rng(0)
        means = [
            v[rng.integers(0, v.size, size=(10_000, v.size))].mean(axis=1)
            for v in (np.asarray(groups[t], float) for t in sorted(groups))
        ]
        low, high = np.quantile(np.mean(means, axis=0), [(1 - 0.95) / 2, (1 + 0.95) / 2])
        return float(low), float(high)

    def p_value(diffs):
        signs = np.random.default_rng(0).choice((-1.0, 1.0), size=(10_000, diffs.size))
        flipped = np.abs((signs * diffs).mean(axis=1))
        return (np.count_nonzero(flipped >= abs(diffs.mean()) - 1e-12) + 1) / 10_001

    rng = np.random.default_rng(7)
    for graded in (False, True) * 6:
        sizes = rng.integers(3, 90, size=rng.integers(1, 5))
        groups = {
            f"t{i}": rng.random(n) if graded else rng.integers(0, 2, n).astype(float)
            for i, n in enumerate(sizes)
        }
        first = groups["t0"]
        mean = bootstrap_mean(first)
        few = first.size < MIN_QUESTIONS  # (then no interval: too few to tell)
        same = (lambda b: pytest.approx(b, rel=0, abs=1e-12)) if graded else (lambda b: b)
        assert (mean.low, mean.high) == ((None, None) if few else same(interval({"t0": first})))
        macro = bootstrap_macro(groups)
        few = sum(v.size for v in groups.values()) < MIN_QUESTIONS
        assert (macro.low, macro.high) == ((None, None) if few else same(interval(groups)))
        other = rng.random(first.size) if graded else rng.integers(0, 2, first.size) * 1.0
        a = {str(i): v for i, v in enumerate(first)}
        b = {str(i): v for i, v in enumerate(other)}
        shared = sorted(a)
        diffs = np.array([a[q] - b[q] for q in shared])
        if diffs.any():
            assert paired_test(a, b).p_value == p_value(diffs)


def test_no_interval_says_more_than_its_questions_can():
    """Below the stated minimum no interval is given (a point on one question per task
    is no evidence); a difference's interval never leaves [-1, 1], however few its
    shared questions or however lopsided its scores."""
    from helixbench.stats import MIN_QUESTIONS, paired_interval

    one_each = bootstrap_macro({f"t{i}": [float(i == 0)] for i in range(9)})
    assert (one_each.mean, one_each.low, one_each.high) == (1 / 9, None, None)
    few = paired_interval({"a": 1.0, "b": 1.0}, {"a": 0.0, "b": 0.0})
    assert (few.mean, few.low, few.high, few.n) == (1.0, None, None, 2)
    for n in (MIN_QUESTIONS, 12, 40):
        a = {str(i): 1.0 for i in range(n)}
        b = {str(i): float(i == 0) for i in range(n)}
        interval = paired_interval(a, b)
        assert -1 <= interval.low <= interval.mean <= interval.high <= 1, interval
        assert interval.low > 0  # (all but one right against wrong: told apart)
    flat = bootstrap_mean([0.0] * MIN_QUESTIONS)
    assert (flat.low, flat.high) == (0.0, 0.0)  # (enough questions: all wrong is told)
