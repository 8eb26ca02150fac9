"""The question bank in the report (GeneTuring 2025, BioRAGent, LAB-Bench: the
benchmarks whose modules say ``in_bank``): one table per benchmark in the
paper's layout (module, task, each run's score with its interval), a leaderboard per
benchmark with the shared and the new items apart, and the overlap with GeneTuring
(2023) and GeneHop.

Each task is scored by its primary scorer (the first of its ``scoring`` list); a
run's macro is the mean of its task means, with an interval that resamples within
each task. "Shared" items are those with a GeneTuring or GeneHop counterpart
(:mod:`helixbench.datasets.overlap`), "new" the rest; ``original`` is the same run's macro
on the counterparts of the shared items it answered, where it ran them: a reader
sees whether a model does as well on the old items as posed anew.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from ...benchmarks import bank, get, module_of, tasks_of
from ...config.plan import Plan
from ...datasets.overlap import collapse
from ...datasets.questions import Question
from ...scoring.lists import gold_items, separator_of
from ...stats import macro_interval, mean_interval
from ..records import primary_metric, values_of
from ..text import fmt, fmt_bracket
from .bank_board import BANK_LEADERBOARD_COLUMNS, scorer_of
from .scores import POOLED, ROUND

BANK_COLUMNS = [
    "benchmark",
    "module",
    "task",
    "run",
    "metric",
    "n",
    "score",
    "ci_low",
    "ci_high",
]
OVERLAP_COLUMNS = [
    "benchmark",
    "module",
    "task",
    "questions",
    "verbatim",
    "instruction_dropped",
    "rephrased",
    "new",
    "counterpart_tasks",
    "differing_golds",
]
# The benchmarks of the question bank, and where each comes from (its citation and
# licence, as its module states them).
NEWER = tuple(bank())
CITATIONS = {name: f"{get(name).citation} (licence: {get(name).licence})" for name in NEWER}


def _primary(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """The per-question scores of the newer benchmarks on each task's primary metric."""
    sel = scores[scores.benchmark.isin(NEWER)]
    if sel.empty:
        return sel
    wanted = {task: primary_metric(plan, task) for task in sel.task.unique()}
    return sel[sel.metric == sel.task.map(wanted)]


def bank_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """One row per benchmark, task and run (module order), and a macro row per run."""
    primary = _primary(plan, scores)
    rows = []
    # (one pass over the rows: each (benchmark, run, task)'s positions)
    values, metrics = primary.score.to_numpy(float), primary.metric.to_numpy(object)
    where = primary.groupby(["benchmark", "run", "task"], sort=False).indices
    for benchmark in NEWER:
        for run in dict.fromkeys(primary.run[primary.benchmark == benchmark]):
            per_task = {}
            for task in tasks_of(benchmark):
                at = where.get((benchmark, run, task))
                if at is None:
                    continue
                per_task[task] = values[at].tolist()
                interval = mean_interval(values[at])
                rows.append(
                    {
                        "benchmark": benchmark,
                        "module": module_of(task, benchmark),
                        "task": task,
                        "run": run,
                        "metric": metrics[at[0]],
                        "n": len(at),
                        "score": interval.mean,
                        "ci_low": interval.low,
                        "ci_high": interval.high,
                    }
                )
            macro = macro_interval(per_task)
            rows.append(
                {
                    "benchmark": benchmark,
                    "module": "",
                    "task": "macro",
                    "run": run,
                    "metric": "primary",
                    "n": len(per_task),
                    "score": macro.mean,
                    "ci_low": macro.low,
                    "ci_high": macro.high,
                }
            )
            if get(benchmark).pooled:  # its peers' figure: over all its questions
                every = [v for values in per_task.values() for v in values]
                pooled = mean_interval(every)
                rows.append(
                    {
                        "benchmark": benchmark,
                        "module": "",
                        "task": POOLED,
                        "run": run,
                        "metric": "primary",
                        "n": len(every),
                        "score": pooled.mean,
                        "ci_low": pooled.low,
                        "ci_high": pooled.high,
                    }
                )
    table = pd.DataFrame(rows, columns=BANK_COLUMNS)
    for column in ("score", "ci_low", "ci_high"):
        table[column] = table[column].astype(float).round(ROUND)
    return table


def bank_layout(table: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    """The paper's layout of one benchmark: module, task, metric, then a column per run
    holding ``score [low, high]``."""
    sel = table[table.benchmark == benchmark]
    if sel.empty:
        return pd.DataFrame()
    cell = sel.assign(
        value=[
            f"{fmt(s)} {fmt_bracket(lo, hi)}"
            for s, lo, hi in zip(sel.score, sel.ci_low, sel.ci_high, strict=True)
        ]
    )
    wide = cell.pivot_table(
        index=["module", "task", "metric"], columns="run", values="value", aggfunc="first"
    ).reset_index()
    order = {task: i for i, task in enumerate([*tasks_of(benchmark), "macro", POOLED])}
    wide = wide.sort_values("task", key=lambda s: s.map(order)).reset_index(drop=True)
    wide.columns.name = None
    return wide[["module", "task", "metric", *dict.fromkeys(sel.run)]]


def bank_leaderboard(
    plan: Plan,
    scores: pd.DataFrame,
    questions: dict[str, Question],
    asked: dict[str, dict] | None = None,
) -> pd.DataFrame:
    """Per benchmark, its runs best first by macro: the shared and the new items'
    macros apart, and the same run's macro on the shared items' counterparts.
    ``asked``: benchmark -> the questions the run asked and the shares of them with an
    empty reply or none the method could read (:func:`answer_shares`); the join ranks
    the rows of every run (:func:`.bank_board.rank_bank`)."""
    asked = asked or {}
    # (one pass over the rows as tuples: a run's summary makes this table, and a
    # frame's masks a group cost more than the table)
    primaries: dict[str, str] = {}
    counterparts_of = {q.overlap_id for q in questions.values()}
    primary, of_run, originals = {}, {}, {}
    for row in values_of(scores, "run", "benchmark", "task", "question_id", "metric", "score"):
        run, benchmark, task, question, metric, _ = row
        of_run.setdefault((run, benchmark), []).append(row)
        if task not in primaries:
            primaries[task] = primary_metric(plan, task)
        if question in counterparts_of and metric == primaries[task]:
            originals.setdefault(run, []).append(row)
        if benchmark in NEWER and metric == primaries[task]:
            primary.setdefault((run, benchmark), []).append(row)
    rows = []
    for (run, benchmark), sel in primary.items():
        shared = [row for row in sel if questions[row[3]].overlap_id is not None]
        new = [row for row in sel if questions[row[3]].overlap_id is None]
        macro = macro_interval(_by_task(sel))
        pooled = mean_interval([row[5] for row in sel]) if get(benchmark).pooled else None
        counterparts = {questions[row[3]].overlap_id for row in shared}
        theirs = [row for row in originals.get(run, []) if row[3] in counterparts]
        own = of_run[(run, benchmark)]
        rows.append(
            {
                "run": run,
                "benchmark": benchmark,
                "scorer": scorer_of([r[3:5] for r in own], [r[3:5] for r in sel]),
                "macro": macro.mean,
                "ci_low": macro.low,
                "ci_high": macro.high,
                # (a question asked once for two benchmarks is asked for both)
                "asked": max(asked.get(benchmark, {}).get("asked", 0), len({r[3] for r in own})),
                "scored": len(sel),
                "tasks": len({row[2] for row in sel}),
                "empty": asked.get(benchmark, {}).get("empty"),
                "unparsed": asked.get(benchmark, {}).get("unparsed"),
                "pooled": pooled.mean if pooled else None,
                "pooled_low": pooled.low if pooled else None,
                "pooled_high": pooled.high if pooled else None,
                **_part("shared", shared),
                **_part("new", new),
                **_part("original", theirs),
            }
        )
    table = pd.DataFrame(rows, columns=BANK_LEADERBOARD_COLUMNS)
    if table.empty:
        return table
    for column in ("macro", "ci_low", "ci_high", "pooled", "pooled_low", "pooled_high"):
        table[column] = table[column].astype(float).round(ROUND)
    for column in ("shared", "new", "original", "empty", "unparsed"):
        table[column] = table[column].astype(float).round(ROUND)
    return table  # (ranked where every run's rows meet: joined.joined_bank)


def _by_task(rows: list[tuple]) -> dict[str, list[float]]:
    """Task -> its scores in the rows' order, the tasks sorted (rows as
    :func:`bank_leaderboard` reads them)."""
    found: dict[str, list[float]] = {}
    for row in rows:
        found.setdefault(row[2], []).append(row[5])
    return {task: found[task] for task in sorted(found)}


def _part(name: str, rows: list[tuple]) -> dict:
    """The macro of a part of a run's answers (None where the part is empty)."""
    if not rows:
        return {name: None, f"{name}_n": 0}
    per_task = _by_task(rows)
    return {name: sum(map(_mean, per_task.values())) / len(per_task), f"{name}_n": len(rows)}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def overlap_table(questions: dict[str, Question]) -> pd.DataFrame:
    """Per task of the newer benchmarks: its questions, how many repeat a GeneTuring
    (2023) or GeneHop item by each rule, how many are new, and differing golds."""
    every = list(questions.values())
    differing = pd.Series([r["question_id"] for r in gold_differences(every)], dtype=str)
    differing_tasks = differing.map(lambda i: (questions[i].benchmark, questions[i].task))
    rows = []
    for benchmark in NEWER:
        for task in tasks_of(benchmark):
            of_task = [q for q in every if q.benchmark == benchmark and q.task == task]
            kinds = pd.Series([q.overlap for q in of_task], dtype=object)
            counterparts = sorted({questions[q.overlap_id].task for q in of_task if q.overlap_id})
            rows.append(
                {
                    "benchmark": benchmark,
                    "module": module_of(task, benchmark),
                    "task": task,
                    "questions": len(of_task),
                    "verbatim": int((kinds == "verbatim").sum()),
                    "instruction_dropped": int((kinds == "instruction dropped").sum()),
                    "rephrased": int((kinds == "rephrased").sum()),
                    "new": int(kinds.isna().sum()),
                    "counterpart_tasks": ", ".join(counterparts),
                    "differing_golds": int((differing_tasks == (benchmark, task)).sum()),
                }
            )
    return pd.DataFrame(rows, columns=OVERLAP_COLUMNS)


def overlap_golds(questions: dict[str, Question]) -> pd.DataFrame:
    """Every shared item whose gold differs from its counterpart's, both golds given."""
    return pd.DataFrame(
        gold_differences(list(questions.values())),
        columns=[
            "question_id",
            "benchmark",
            "task",
            "overlap_id",
            "overlap",
            "gold",
            "original_gold",
            "same_items",
        ],
    )


def gold_differences(questions: list) -> list[dict]:
    """Every repeated item whose gold is not its counterpart's (after collapsing
    whitespace; a list compared item by item, in order): both golds, and whether they
    hold the same items."""
    by_id = {q.id: q for q in questions}
    rows = []
    for q in questions:
        if not q.overlap_id:
            continue
        original = by_id[q.overlap_id]
        separator = separator_of(q.task)
        ours, theirs = gold_items(q.gold, separator), gold_items(original.gold, separator)
        if [collapse(g) for g in ours] == [collapse(g) for g in theirs]:
            continue
        rows.append(
            {
                "question_id": q.id,
                "benchmark": q.benchmark,
                "task": q.task,
                "overlap_id": original.id,
                "overlap": q.overlap,
                "gold": collapse(", ".join(ours)),
                "original_gold": collapse(", ".join(theirs)),
                "same_items": set(ours) == set(theirs),
            }
        )
    return rows


def overlap_summary(questions: list, benchmarks: set[str] | None = None) -> list[str]:
    """One line per newer benchmark (of ``benchmarks``, where given): its questions,
    how many repeat an older item (by rule) and how many are new, and the differing
    golds."""
    differing = Counter(row["benchmark"] for row in gold_differences(questions))
    lines = []
    for benchmark in NEWER:
        if benchmarks is not None and benchmark not in benchmarks:
            continue
        of_benchmark = [q for q in questions if q.benchmark == benchmark]
        kinds = Counter(q.overlap for q in of_benchmark if q.overlap)
        shared = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        new = len(of_benchmark) - sum(kinds.values())
        lines.append(
            f"{benchmark}: {len(of_benchmark)} questions; shared with GeneTuring (2023) or "
            f"GeneHop: {shared or 'none'}; new: {new}; differing golds: {differing[benchmark]}"
        )
    return lines
