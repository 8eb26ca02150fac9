"""The report's first answer: per benchmark, who wins and by how much.

For each leaderboard (the question-answering benchmarks, the gene sets, each of the
question bank's benchmarks) the pairs a reader compares first: the best run against
the next, and each model's runs against its own no-tools baseline (``no-tools`` on
questions, ``closed-book`` on gene sets): with tools against without. Each pair is
compared on the questions both answered, by the leaderboard's metric (the question
bank's: each task's primary score): the difference of macro scores (each task counts
once), the p-value of a sign-flip permutation test, and the interval of differences
that test does not reject at 5% (the test inverted), within what a difference can be
([-1, 1]). The test decides the sentence, and the interval cannot contradict it: it
leaves out 0 exactly when p <= 0.05. Below :data:`helixbench.stats.MIN_QUESTIONS`
shared questions the sentence says there are too few to tell, and no interval is
given. A pair with no question in common is named, and why it is not compared.
"""

from __future__ import annotations

import pandas as pd

from ...config.plan import Plan
from ...stats import MIN_QUESTIONS
from ..records import ScoreLookups, macro_comparison, paired_by_task
from .comparisons import is_baseline
from .leaderboard import GENESETS, encoders_of
from .protocols import board_metric
from .scores import ROUND

ALPHA = 0.05  # the test's level: the sentence and the interval both
HEADLINE_METHOD = (
    "The difference of macro scores (a - b) on the questions both answered; the p-value of "
    "a sign-flip permutation test (10,000 flips, seed 0) decides who is ahead (p <= 0.05), "
    "and the 95% interval is the set of differences that same test does not reject, so it "
    "leaves out 0 exactly when p <= 0.05"
)
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
    "note",  # why a pair is not compared (no question in common)
    "scored_by",  # gene sets: the encoder of the embedding similarity (a stand-in says so)
]


def _apart(plan: Plan, a: str, b: str, benchmark: str) -> str:
    """Why two runs of a benchmark cannot be compared: the tasks each ran."""
    tasks = {
        r.label: [t.task for t in r.tasks if t.benchmark == benchmark]
        for r in plan.runs
        if r.label in (a, b)
    }
    return (
        f"no question in common ({a}: {', '.join(tasks[a])}; {b}: {', '.join(tasks[b])}), "
        "so not compared"
    )


def _pairs(
    plan: Plan, ranked: list[str], benchmark: str, apart: list[str] = ()
) -> list[tuple[str, str, str]]:
    """(comparison, run a, run b): the best against the next of the runs ranked (those
    on the whole comparison set), each model's runs against its own baseline without
    tools, and each run of this config's own models against the best published
    (imported) run on the questions both answered. ``apart``: the runs ranked apart
    (on fewer questions), compared but never as the best or the next."""
    pairs = [("best vs next", ranked[0], ranked[1])] if len(ranked) > 1 else []
    runs = {r.label: r for r in plan.runs if any(t.benchmark == benchmark for t in r.tasks)}
    every = [*ranked, *apart]
    baselines: dict[str, list] = {}
    for run in runs.values():
        if is_baseline(run, runs.values()):
            baselines.setdefault(run.model, []).append(run)
    for label in every:
        run = runs[label]
        if is_baseline(run, runs.values()):
            continue
        for base in baselines.get(run.model, []):
            pairs.append((f"vs its {base.method} baseline", label, base.label))
    published = [label for label in every if runs[label].imported]
    if published:
        for label in every:
            if not runs[label].imported:
                pairs.append(("vs the best published run", label, published[0]))
    seen, unique = set(), []
    for comparison, a, b in pairs:
        if frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            unique.append((comparison, a, b))
    return unique


def headline_table(
    plan: Plan,
    index: ScoreLookups,
    board: pd.DataFrame,
    geneset_board: pd.DataFrame,
    bank_board: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per pair a reader compares, per benchmark (leaderboard order)."""
    boards = []
    for table in (board, bank_board):  # (best first within a benchmark)
        if table is None or table.empty:
            continue
        for benchmark in dict.fromkeys(table.benchmark):
            of = table[table.benchmark == benchmark]
            apart = of.partial.astype(bool) if "partial" in of else of.run.map(lambda _: False)
            boards.append((benchmark, list(of.run[~apart]), list(of.run[apart])))
    if not geneset_board.empty:  # ranked within the runs on the same sets: the best's
        best = geneset_board.compared_on.iloc[0]
        ranked = list(geneset_board[geneset_board.compared_on == best].run)
        others = [r for r in geneset_board.run if r not in ranked]
        # (no other run on its sets: the best against the next of any, said apart)
        boards.append((GENESETS, ranked if len(ranked) > 1 else ranked + others[:1], []))
    rows = []
    encoder = encoders_of(geneset_board) if not geneset_board.empty else None
    for benchmark, ranked, apart in boards:
        tasks = list(dict.fromkeys(t.task for t in plan.tasks if t.benchmark == benchmark))
        for comparison, a, b in _pairs(plan, ranked, benchmark, apart):
            of_benchmark = index.for_benchmark(benchmark)
            paired = paired_by_task(of_benchmark, a, b, tasks, board_metric(plan, benchmark))
            if not paired:  # said, not left out: the reader asks why
                rows.append(
                    {"benchmark": benchmark, "comparison": comparison, "run_a": a, "run_b": b,
                     "n": 0, "tasks": 0, "note": _apart(plan, a, b, benchmark),
                     "scored_by": encoder if benchmark == GENESETS else None}
                )  # fmt: skip
                continue
            test, interval = macro_comparison(paired)
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
                    "difference": round(interval.mean, ROUND) + 0.0,  # (no -0.0)
                    "ci_low": round(interval.low, ROUND) + 0.0 if interval.told else None,
                    "ci_high": round(interval.high, ROUND) + 0.0 if interval.told else None,
                    "p_value": round(test.p_value, 4),
                    "n": test.n,
                    "tasks": len(paired),
                    "note": None,
                    "scored_by": encoder if benchmark == GENESETS else None,
                }
            )
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)


def headline_sentence(row: dict, fmt) -> str:
    """One pair in words: who is ahead and by how much, as the test decides (p <= 0.05),
    with the interval of differences it does not reject."""
    if _said(row.get("note")):
        return f"{row['run_a']} and {row['run_b']}: {row['note']} ({row['comparison']})"
    d, low, high, p = row["difference"], row["ci_low"], row["ci_high"], row["p_value"]
    n, tasks = int(row["n"]), int(row["tasks"])
    if n < MIN_QUESTIONS:
        verdict = (
            f"{row['run_a']} and {row['run_b']} differ by {fmt(d)}, too few shared questions "
            f"to tell (fewer than {MIN_QUESTIONS})"
        )
    elif p <= ALPHA and d > 0:
        verdict = f"{row['run_a']} is ahead of {row['run_b']} by {fmt(d)} [{fmt(low)}, {fmt(high)}]"
    elif p <= ALPHA and d < 0:
        verdict = (
            f"{row['run_b']} is ahead of {row['run_a']} by {fmt(-d)} [{fmt(-high)}, {fmt(-low)}]"
        )
    else:
        verdict = (
            f"{row['run_a']} and {row['run_b']} differ by {fmt(d)} [{fmt(low)}, {fmt(high)}], "
            "which the test does not tell from no difference"
        )
    scored = f"; embedding similarity by {row['scored_by']}" if _said(row.get("scored_by")) else ""
    item, group = ("set", "dataset") if row["benchmark"] == GENESETS else ("question", "task")
    return (
        f"{verdict} ({row['comparison']}; p = {fmt(p)}; macro {fmt(row['macro_a'])} vs "
        f"{fmt(row['macro_b'])} on the {n} {item}{'s' * (n != 1)} of {tasks} "
        f"{group}{'s' * (tasks != 1)} both answered{scored})"
    )


def _said(value) -> bool:
    return isinstance(value, str) and bool(value)
