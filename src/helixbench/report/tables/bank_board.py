"""The question bank's leaderboard, ranked so that no reader can misread it: where
each run's numbers come from (published verdicts, helixbench's rules, a judge), how
many questions it asked and scored against the comparison set, ranks among the runs
that cover that set (ties sharing a rank), the rest listed apart, and the shares of
replies that were empty or held no readable answer (a degenerate run, named)."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from ...benchmarks import get
from .scores import ROUND

BANK_LEADERBOARD_COLUMNS = [
    "rank",  # among the runs that cover the comparison set; ties share a rank; none: apart
    "run",
    "benchmark",
    "scorer",  # where the numbers come from: published, deterministic, judge (with counts)
    "macro",
    "ci_low",
    "ci_high",
    "asked",  # questions the run asked (or its source holds) on this benchmark
    "scored",  # of those, the ones with a score (no judge: a free-text answer has none)
    "compared",  # the comparison set: the most questions any run of the benchmark scored
    "coverage",  # scored / compared
    "tasks",
    "benchmark_tasks",  # the most tasks any run of the benchmark scored
    "partial",  # fewer questions or tasks than the comparison set: ranked apart, never above
    "empty",  # share of the asked questions whose reply was empty (or that had none)
    "unparsed",  # share whose reply held no answer the method could read
    # A benchmark its peers score over all its questions (LAB-Bench): that figure too.
    "pooled",
    "pooled_low",
    "pooled_high",
    "shared",
    "shared_n",
    "new",
    "new_n",
    "original",
    "original_n",
]

# Primary metrics that take each question's verdict from the first of several scorers
# that has one (scoring.labbench2, scoring.bixbench): which scorer gave what.
COMBINED = {
    "labbench2": (("lb2_published", "published"), ("lb2_value", "deterministic"),
                  ("lb2_judge", "judge")),
    "bixbench": (("bix_published", "published"), ("bix_verifier", "deterministic"),
                 ("bix_judge", "judge")),
}  # fmt: skip


def scorer_kind(metric: str) -> str:
    """A metric's kind of scorer: a judge's, a source's published verdict, or a rule."""
    if "judge" in metric:
        return "judge"
    return "published" if metric.endswith("_published") else "deterministic"


def scorer_of(scores: list[tuple[str, str]], primary: list[tuple[str, str]]) -> str:
    """Where a run's primary scores on a benchmark come from, in words: one kind, or
    each kind with how many questions it scored. ``scores``: the run's (question,
    metric) pairs on the benchmark; ``primary``: those of its primary scores."""
    counts: Counter = Counter()
    by_metric: dict[str, list] = {}
    for question, metric in primary:
        by_metric.setdefault(metric, []).append(question)
    for metric, questions in by_metric.items():
        parts = COMBINED.get(str(metric))
        if not parts:
            counts[scorer_kind(str(metric))] += len(questions)
            continue
        left = set(questions)
        for part, kind in parts:
            found = left & {question for question, m in scores if m == part}
            counts[kind] += len(found)
            left -= found
        counts["deterministic"] += len(left)
    kinds = [k for k in ("published", "deterministic", "judge") if counts[k]]
    if len(kinds) <= 1:
        return kinds[0] if kinds else ""
    return " + ".join(f"{k} {counts[k]}" for k in kinds)


def answer_shares(records: list[dict]) -> dict:
    """Of a run's records on a benchmark: how many questions it asked, and the shares
    whose reply was empty (or that had no reply: a missing or failed one) and whose
    reply held no answer the method could read (a multiple-choice reply without its
    letter). A degenerate run shows here, beside its score."""
    empty = unparsed = 0
    for record in records:
        if str(record.get("answer") or "").strip():
            continue
        replies = [e for e in record.get("events", ()) if e["type"] == "model"]
        said = str((replies[-1]["data"].get("completion") or "") if replies else "").strip()
        if said:
            unparsed += 1
        else:
            empty += 1
    n = len(records)
    return {
        "asked": n,
        "empty": empty / n if n else None,
        "unparsed": unparsed / n if n else None,
    }


BANK_BOARD_TEXT = (
    "Per benchmark, each run's macro of its tasks' primary scores with its 95% interval, "
    "ranked only among the runs that scored the whole comparison set (the most "
    "questions and tasks any run of the benchmark scored); ties share a rank. `scorer`: "
    "where the numbers come from (`published`: the benchmark's own verdicts on a "
    "published run; `deterministic`: helixbench's rules; `judge`: an LLM judge, with "
    "counts where several scored one run). `scored / asked`: questions with a score of "
    "those the run asked (a free-text answer has no score without a judge); "
    "`coverage`: scored of the comparison set. A run on fewer questions or tasks (a "
    "sample, answers without a verdict) is listed apart (‡), never ranked above a full "
    "run. `empty`, `unparsed`: the shares of asked questions whose reply was empty, or "
    "held no answer the method could read"
)


def bank_names(benchmarks: list[str]) -> str:
    """The question bank's benchmarks a report covers, by their labels, in words."""
    labels = list(dict.fromkeys(get(b).label for b in benchmarks))
    if len(labels) <= 1:
        return "".join(labels)
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def bank_board_shown(board: pd.DataFrame) -> pd.DataFrame:
    """The question bank's leaderboard as the page's first screen and report.md show it."""
    from ..text import fmt, fmt_bracket

    if board.empty:
        return board
    share = [
        "" if pd.isna(v) or not v else f"{fmt(100 * v)}%" for v in board["empty"].astype(float)
    ]
    unread = [
        "" if pd.isna(v) or not v else f"{fmt(100 * v)}%" for v in board.unparsed.astype(float)
    ]
    return pd.DataFrame(
        {  # (rank, run and score first: a phone shows them side by side)
            "#": ["apart" if pd.isna(r) else str(int(r)) for r in board["rank"]],
            "run": [r + " ‡" * bool(p) for r, p in zip(board.run, board.partial, strict=True)],
            "macro [95% interval]": [
                f"{fmt(m)} {fmt_bracket(lo, hi)}"
                for m, lo, hi in zip(board.macro, board.ci_low, board.ci_high, strict=True)
            ],
            "scored / asked": [
                f"{s} / {a}" for s, a in zip(board.scored, board.asked, strict=True)
            ],
            "scorer": board.scorer,
            "coverage": [
                f"{fmt(100 * c)}% of {n}"
                for c, n in zip(board.coverage, board.compared, strict=True)
            ],
            "tasks": [
                f"{t} of {n}" for t, n in zip(board.tasks, board.benchmark_tasks, strict=True)
            ],
            "benchmark": board.benchmark,
            "empty": share,
            "unparsed": unread,
        }
    )


def rank_bank(table: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark: the comparison set (the most questions and tasks any of its runs
    scored), each run's coverage of it, and ranks among the runs that cover it, ties
    sharing a rank; a run on fewer (a sample, answers without a verdict) is ``partial``,
    unranked and listed after every full run, whatever its score."""
    if table.empty:
        return table.reindex(columns=BANK_LEADERBOARD_COLUMNS)
    groups = table.groupby("benchmark", sort=False)
    compared = groups.scored.transform("max")
    most_tasks = groups.tasks.transform("max")
    partial = (table.scored < compared) | (table.tasks < most_tasks)
    table = table.assign(
        compared=compared,
        coverage=(table.scored / compared.where(compared > 0)).round(ROUND),
        benchmark_tasks=most_tasks,
        partial=partial,
    )
    table = table.assign(_covers=table.scored.where(table.partial, 0))
    table = table.sort_values(
        ["benchmark", "partial", "_covers", "macro"],
        ascending=[True, True, False, False],
        kind="stable",
    ).drop(columns="_covers")
    full = table[~table.partial]
    ranks = full.groupby("benchmark").macro.rank(method="min", ascending=False)
    table["rank"] = ranks.reindex(table.index).astype("Int64")
    extra = [c for c in table.columns if c not in BANK_LEADERBOARD_COLUMNS]
    return table.reset_index(drop=True).reindex(columns=[*BANK_LEADERBOARD_COLUMNS, *extra])
