"""Leaderboards, one per family of benchmarks, each by its own primary metric: the
question-answering benchmarks (GeneTuring, GeneHop) by the macro score on extracted
answers (``leaderboard.csv``); the gene sets by embedding similarity to the curated
name, ROUGE-L beside it (``genesets_leaderboard.csv``); the question bank's benchmarks,
whose tasks have scorers of their own, by the macro of each task's primary score
(:mod:`.question_bank`)."""

from __future__ import annotations

import pandas as pd

from ...benchmarks import bank
from ...config.plan import Plan
from ..records import values_of
from ..text import counted

# The benchmarks of the question bank (GeneTuring 2025, BioRAGent, LAB-Bench).
BANK = tuple(bank())

GENESETS = "genesets"
# Benchmarks ranked on a leaderboard of their own, not on the QA leaderboard.
OWN_LEADERBOARD = frozenset({GENESETS, *BANK})

LEADERBOARD_COLUMNS = [
    "rank",
    "run",
    "benchmark",
    "model",
    "imported",
    "extracted",
    "ci_low",
    "ci_high",
    "genegpt",
    "strict",
    "badly_formatted",
    "answers",
    "tasks",
    "benchmark_tasks",
    "partial",
    "source",
]


def leaderboard(
    plan: Plan, summary: pd.DataFrame, reformatted: dict[tuple[str, str], tuple[int, int]]
) -> pd.DataFrame:
    """One row per run and benchmark, best first: the macro score on extracted answers
    with its interval, upstream's strict scorer (``genegpt``) and ours (``strict``)
    beside it, and how many answers were right only once extracted (right but badly
    formatted; ``reformatted``: the store's counts of those and of the answers).
    Imported runs are marked and name their source."""
    rows = []
    first = first_macros(summary)
    for run in plan.runs:
        for benchmark in dict.fromkeys(t.benchmark for t in run.tasks):
            if benchmark in OWN_LEADERBOARD:
                continue
            source = plan.sources.get(run.model)
            badly, answers = reformatted.get((run.label, benchmark), (0, 0))
            row = {
                "run": run.label,
                "benchmark": benchmark,
                "model": run.model,
                "imported": run.imported,
                "source": source["name"] if source else None,
                "badly_formatted": badly,
                "answers": answers,
            }
            for metric in ("extracted", "genegpt", "strict"):
                hit = first.get((run.model, run.method, benchmark, metric))
                row[metric] = float(hit[0]) if hit is not None else None
                if metric == "extracted":
                    row["ci_low"] = _bound(hit[1]) if hit is not None else None
                    row["ci_high"] = _bound(hit[2]) if hit is not None else None
                    row["tasks"] = int(hit[3]) if hit is not None else 0
            rows.append(row)
    table = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    table = table.sort_values(
        ["benchmark", "extracted", "genegpt"], ascending=[False, False, False], na_position="last"
    )
    return ranked(table, "benchmark", score="extracted", size="answers")


# leaderboard.csv: every benchmark's ranking in one table, the question bank's too,
# each row by its board's metric (``score``) and where its numbers come from.
ALL_BOARDS_COLUMNS = [
    "rank", "run", "benchmark", "metric", "score", "ci_low", "ci_high", "scorer", "asked",
    "scored", "compared", "coverage", "tasks", "benchmark_tasks", "partial", "model",
    "imported", "source", "extracted", "genegpt", "strict", "badly_formatted", "answers",
    "empty", "unparsed",
]  # fmt: skip


def all_boards(plan: Plan, board: pd.DataFrame, bank_board: pd.DataFrame) -> pd.DataFrame:
    """leaderboard.csv: the question-answering leaderboard's rows (by extracted answers)
    and the question bank's (by the macro of each task's primary score), ranked as
    their boards rank them."""
    qa = board.assign(
        metric="extracted",
        score=board.extracted,
        scorer="deterministic",
        asked=board.answers,
        scored=board.answers,
        compared=board.groupby("benchmark").answers.transform("max") if len(board) else None,
    )
    if len(qa):
        qa["coverage"] = (qa.scored / qa.compared.where(qa.compared > 0)).round(7)
    runs = {r.label: r for r in plan.runs}
    bank = bank_board.assign(
        metric="primary",
        score=bank_board.macro,
        model=[runs[r].model if r in runs else None for r in bank_board.run],
        imported=[bool(runs[r].imported) if r in runs else None for r in bank_board.run],
        source=[(plan.sources.get(runs[r].model) or {}).get("name") if r in runs else None
                for r in bank_board.run],
    )  # fmt: skip
    parts = [t.reindex(columns=ALL_BOARDS_COLUMNS) for t in (qa, bank) if len(t)]
    if not parts:
        return pd.DataFrame(columns=ALL_BOARDS_COLUMNS)
    table = pd.concat(parts, ignore_index=True)
    counts = ("rank", "asked", "scored", "compared", "tasks", "benchmark_tasks", "answers")
    for column in (*counts, "badly_formatted"):  # (whole numbers, a blank where none)
        table[column] = pd.to_numeric(table[column]).round().astype("Int64")
    return table


# The sweep's axes a reader filters the page's leaderboard by.
BOARD_AXES = ("model", "method", "benchmark")


def board_page(plan: Plan, board: pd.DataFrame) -> tuple[list[dict], dict[str, list[str]]]:
    """The leaderboard's rows for the HTML page, each with the sweep's axes it sits on,
    and each axis's values: what the page filters and sorts a sweep's runs by, in
    place, without loading any run's questions."""
    method_of = {run.label: run.method for run in plan.runs}
    rows = [
        {**row, "method": method_of.get(row["run"], ""), "rank": _rank(row["rank"])}
        for row in board.to_dict("records")
    ]
    axes = {axis: sorted({str(row[axis]) for row in rows}) for axis in BOARD_AXES}
    return rows, axes


def _rank(value) -> int | str:
    """A rank as the page shows it: the number, or "apart" for a run not ranked."""
    return "apart" if value is None or pd.isna(value) else int(value)


def _bound(value) -> float | None:
    """An interval's bound from its row (None where too few questions gave none)."""
    return None if value is None or pd.isna(value) else float(value)


def first_macros(summary: pd.DataFrame) -> dict[tuple, tuple]:
    """(model, method, benchmark, metric) -> (score, ci_low, ci_high, n) of its first
    macro row of scores.csv: one pass, not a mask of the table a run and metric."""
    macros = summary[summary.task == "macro"]
    first: dict[tuple, tuple] = {}
    columns = ("model", "method", "benchmark", "metric", "score", "ci_low", "ci_high", "n")
    for *key, score, low, high, n in values_of(macros, *columns):
        first.setdefault(tuple(key), (score, low, high, n))
    return first


def ranked(
    table: pd.DataFrame, by: str | None = None, score: str | None = None, size: str | None = None
) -> pd.DataFrame:
    """``table`` (best first within each ``by`` group) with its rank in the group, and
    which rows cover fewer tasks (or, with ``size``, fewer questions) than the
    best-covered row of their group (``partial``: a sample, or a macro of fewer tasks,
    is no like-for-like rank: they are listed after the runs that cover the whole set,
    unranked). With ``score``, runs with equal scores share a rank."""
    if not len(table):
        return table.assign(benchmark_tasks=table.tasks, partial=table.tasks < 0)
    groups = table.groupby(by, sort=False) if by else table.groupby(lambda _: 0)
    covered = groups.tasks.transform("max")
    partial = table.tasks < covered
    if size:
        partial |= table[size] < groups[size].transform("max")
    table = table.assign(benchmark_tasks=covered, partial=partial)
    keys = [by] if by else []
    order = {key: i for i, key in enumerate(dict.fromkeys(table[by]))} if by else {}
    table = table.assign(_group=table[by].map(order) if by else 0)
    table = table.sort_values(["_group", "partial"], kind="stable").drop(columns="_group")
    full = table[~table.partial]
    grouped = full.groupby(keys or (lambda _: 0), sort=False)
    if score:
        ranks = grouped[score].rank(method="min", ascending=False, na_option="bottom")
    else:
        ranks = grouped.cumcount() + 1
    return table.assign(rank=ranks.reindex(table.index).astype("Int64"))


GENESET_BOARD_COLUMNS = [
    "rank",  # among the runs on the same gene sets (``compared_on``)
    "run",
    "model",
    "method",
    "embedding",
    "embedding_ci_low",
    "embedding_ci_high",
    "rougeL",
    "rougeL_ci_low",
    "rougeL_ci_high",
    "datasets",
    "sets",
    "compared_on",  # the gene sets a run is ranked on: runs on others are not ranked with it
    "scored_by",  # the encoder of the embedding similarity (a stand-in says so)
]


def encoders_of(board: pd.DataFrame) -> str:
    """The encoders a gene-set board's embedding similarity comes from, in words."""
    found = [e for e in dict.fromkeys(board.scored_by.dropna()) if e]
    return "; ".join(found) if found else "the configured encoder"


def geneset_leaderboard(plan: Plan, summary: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """One row per gene-set run: the mean over its datasets of embedding similarity to
    the curated name (the primary metric, as GeneAgent ranks) and of ROUGE-L, each with
    its 95% bootstrap interval (sets resampled within each dataset). Runs are ranked
    only against runs on the same datasets (``compared_on``); each group of those
    follows the one whose best run scores higher. ``scored_by``: the encoder, from the
    per-question scores (``scores``)."""
    rows = []
    of_sets = summary[summary.benchmark == GENESETS]
    by_run = {key: rows for key, rows in of_sets.groupby(["model", "method"], sort=False)}
    encoders = scores[(scores.benchmark == GENESETS) & (scores.metric == "embedding")]
    encoders = encoders.dropna(subset=["scored_by"]).groupby("run").scored_by.first()
    first = first_macros(of_sets)
    for run in plan.runs:
        tasks = [t for t in run.tasks if t.benchmark == GENESETS]
        if not tasks:
            continue
        sel = by_run.get((run.model, run.method), of_sets.iloc[:0])
        row = {"run": run.label, "model": run.model, "method": run.method}
        for metric in ("embedding", "rougeL"):
            hit = first.get((run.model, run.method, GENESETS, metric))
            row[metric] = float(hit[0]) if hit is not None else None
            row[f"{metric}_ci_low"] = _bound(hit[1]) if hit is not None else None
            row[f"{metric}_ci_high"] = _bound(hit[2]) if hit is not None else None
        # Compared on the datasets its metric scored (a contaminated set has no name to
        # be similar to: it is scored for what the model did, in robustness.csv).
        per_set = sel[(sel.task != "macro") & (sel.metric == "embedding")]
        scored = [t.task for t in tasks if t.task in set(per_set.task)] or [t.task for t in tasks]
        row["datasets"], row["sets"] = len(scored), int(per_set.n.sum())
        row["compared_on"] = f"{', '.join(scored)} ({counted(row['sets'], 'set')})"
        row["scored_by"] = encoders.get(run.label)
        rows.append(row)
    table = pd.DataFrame(rows, columns=GENESET_BOARD_COLUMNS)
    table = table.sort_values(["embedding", "rougeL"], ascending=False, na_position="last")
    groups = list(dict.fromkeys(table.compared_on))  # in the order of each group's best
    table["group"] = table.compared_on.map(groups.index)
    table = table.sort_values("group", kind="stable").drop(columns="group")
    table["rank"] = table.groupby("compared_on", sort=False).cumcount() + 1
    return table
