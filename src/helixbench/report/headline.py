"""The report's first answer: per benchmark, who wins and by how much.

For each leaderboard (the question-answering benchmarks, the gene sets) the pairs a
reader compares first: the best run against the next, and each model's runs against
its own no-tools baseline (``no-tools`` on questions, ``closed-book`` on gene sets).
Each pair is compared on the questions both answered, by the leaderboard's metric: the
difference of macro scores (each task counts once) with a 95% bootstrap interval
(questions resampled within each task, as the leaderboard's intervals are) and the
p-value of a sign-flip permutation test.
"""

from __future__ import annotations

import pandas as pd

from ..config.plan import Plan
from ..stats import bootstrap_macro
from .comparisons import BASELINE_KINDS
from .leaderboard import GENESETS
from .protocols import metric_of
from .records import ScoreIndex, macro_paired_test, paired_by_task
from .scores import ROUND

HEADLINE_COLUMNS = [
    "benchmark",
    "comparison",
    "run_a",
    "run_b",
    "macro_a",
    "macro_b",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "n",
    "tasks",
]


def _pairs(plan: Plan, ranked: list[str], benchmark: str) -> list[tuple[str, str, str]]:
    """(comparison, run a, run b): the best against the next, then each model's runs
    against its baseline on this benchmark."""
    pairs = [("best vs next", ranked[0], ranked[1])] if len(ranked) > 1 else []
    runs = {r.label: r for r in plan.runs if any(t.benchmark == benchmark for t in r.tasks)}
    baselines: dict[str, list] = {}
    for run in runs.values():
        if run.first.method_spec.get("kind") in BASELINE_KINDS:
            baselines.setdefault(run.model, []).append(run)
    for label in ranked:
        run = runs[label]
        if run.first.method_spec.get("kind") in BASELINE_KINDS:
            continue
        for base in baselines.get(run.model, []):
            pairs.append((f"vs its {base.method} baseline", label, base.label))
    seen, unique = set(), []
    for comparison, a, b in pairs:
        if frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            unique.append((comparison, a, b))
    return unique


def headline_table(
    plan: Plan, index: ScoreIndex, board: pd.DataFrame, geneset_board: pd.DataFrame
) -> pd.DataFrame:
    """One row per pair a reader compares, per benchmark (leaderboard order)."""
    boards = [(b, list(board[board.benchmark == b].run)) for b in dict.fromkeys(board.benchmark)]
    if not geneset_board.empty:
        boards.append((GENESETS, list(geneset_board.run)))
    rows = []
    for benchmark, ranked in boards:
        tasks = list(dict.fromkeys(t.task for t in plan.tasks if t.benchmark == benchmark))
        for comparison, a, b in _pairs(plan, ranked, benchmark):
            paired = paired_by_task(index, a, b, tasks, metric_of(benchmark))
            if not paired:
                continue
            diffs = {t: [a_[q] - b_[q] for q in sh] for t, (a_, b_, sh) in paired.items()}
            interval = bootstrap_macro(diffs)  # the macro difference and its interval
            test = macro_paired_test(paired)
            macro_a = sum(sum(a_[q] for q in sh) / len(sh) for a_, _, sh in paired.values())
            macro_b = sum(sum(b_[q] for q in sh) / len(sh) for _, b_, sh in paired.values())
            macro_a, macro_b = macro_a / len(paired), macro_b / len(paired)
            rows.append(
                {
                    "benchmark": benchmark,
                    "comparison": comparison,
                    "run_a": a,
                    "run_b": b,
                    "macro_a": round(macro_a, ROUND),
                    "macro_b": round(macro_b, ROUND),
                    "difference": round(interval.mean, ROUND),
                    "ci_low": round(interval.low, ROUND),
                    "ci_high": round(interval.high, ROUND),
                    "p_value": round(test.p_value, 4),
                    "n": test.n,
                    "tasks": len(paired),
                }
            )
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)


def headline_sentence(row: dict, fmt) -> str:
    """One pair in words: who is ahead, by how much, and whether the interval says so."""
    d, low, high = row["difference"], row["ci_low"], row["ci_high"]
    if low > 0:
        verdict = f"{row['run_a']} is ahead of {row['run_b']} by {fmt(d)} [{fmt(low)}, {fmt(high)}]"
    elif high < 0:
        verdict = (
            f"{row['run_b']} is ahead of {row['run_a']} by {fmt(-d)} [{fmt(-high)}, {fmt(-low)}]"
        )
    else:
        verdict = (
            f"{row['run_a']} and {row['run_b']} differ by {fmt(d)} [{fmt(low)}, {fmt(high)}], "
            "an interval that includes no difference"
        )
    n, tasks = int(row["n"]), int(row["tasks"])
    return (
        f"{verdict} ({row['comparison']}; macro {fmt(row['macro_a'])} vs "
        f"{fmt(row['macro_b'])} on the {n} question{'s' * (n != 1)} of {tasks} "
        f"task{'s' * (tasks != 1)} both answered; p = {fmt(row['p_value'])})"
    )
