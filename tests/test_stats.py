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
