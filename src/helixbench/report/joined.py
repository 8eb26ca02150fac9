"""The report's join: the runs' summaries (:mod:`.run_share.run_summary`) read and put together
in the plan's order, as the tables would be if computed from every record at once (their
per-question tables: :mod:`.store`)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..benchmarks import bank
from ..config.plan import Plan
from ..errors import ConfigError
from .records import values_of
from .run_share.run_summary import read_summary, table
from .tables.operations import COST_COLUMNS
from .tables.paper import published
from .tables.scores import POOLED, SCORE_COLUMNS, _recording, _scored_tasks

# The benchmarks of the question bank (GeneTuring 2025, BioRAGent, LAB-Bench).
BANK = tuple(bank())


# A run's largest tables (the bulk of its summary), joined as the summaries are read,
# JOIN_EVERY runs at a time: the report holds these frames, not every run's JSON (as
# Python objects a summary takes eight times its file: half a gigabyte a thousand runs).
JOINED = ("scores", "errors", "taxonomy", "question_bank")
JOIN_EVERY = 500


class Summaries(dict):
    """Run label -> its summary, less the tables of :data:`JOINED`: those are in
    ``joined``, every run's rows in one frame (in the plan's order of runs; None where
    the plan has no run)."""

    joined: dict[str, pd.DataFrame | None]


def read_summaries(plan: Plan) -> Summaries:
    """Every run's summary (:class:`Summaries`); a run without one is named (its job
    has not run)."""
    out = Summaries()
    pending: dict[str, list] = {name: [] for name in JOINED}
    chunks: dict[str, list] = {name: [] for name in JOINED}

    def join() -> None:
        for name, frames in pending.items():
            chunks[name].append(pd.concat(frames, ignore_index=True))
            frames.clear()

    shared: dict[str, str] = {}
    for run in plan.runs:
        path = Path(run.summary_path)
        if not path.is_file():
            raise ConfigError(
                f"no summary of run {run.label!r} ({path}); run snakemake to score it"
            )
        summary = read_summary(path)
        for name in JOINED:
            pending[name].append(table(summary.pop(name)))  # (its texts in Arrow's buffers)
        summary["tasks"] = [
            {k: _shared(v, shared) for k, v in fact.items()} for fact in summary["tasks"]
        ]
        out[run.label] = summary
        if len(pending[JOINED[0]]) >= JOIN_EVERY:
            join()
    if pending[JOINED[0]]:
        join()
    out.joined = {
        name: pd.concat(parts, ignore_index=True) if parts else None
        for name, parts in chunks.items()
    }
    return out


def _shared(value, shared: dict[str, str]):
    """``value``, a text as the one object of its value that ``shared`` holds (a
    sweep's task facts repeat a few names: 10,000 runs hold 430,000 facts, where orjson
    makes a string of each value it reads)."""
    return shared.setdefault(value, value) if type(value) is str else value


def prompts_reader(plan: Plan):
    """Run label -> its prompt digests (``prompts.json``, beside its summary)."""
    where = {run.label: Path(run.prompts_path) for run in plan.runs}
    return lambda label: json.loads(where[label].read_text())


def _positions(plan: Plan) -> dict[tuple[str, str, str, str], int]:
    return {(t.model, t.method, t.benchmark, t.task): i for i, t in enumerate(plan.tasks)}


def joined_rows(plan: Plan, summaries: Summaries, name: str) -> pd.DataFrame:
    """One table of the summaries (``replay``, ``errors``, ``agents``, ``taxonomy``)
    with every run's rows, a task's rows in the plan's order of tasks."""
    frame = _joined(plan, summaries, name)
    frame = pd.DataFrame() if frame is None else frame
    if {"benchmark", "task"} <= set(frame.columns) and not frame.empty:
        where = _positions(plan)
        order = [where[key] for key in values_of(frame, "model", "method", "benchmark", "task")]
        frame = frame.iloc[sorted(range(len(frame)), key=order.__getitem__)]
        frame = frame.reset_index(drop=True)
    return frame


def _joined(plan: Plan, summaries: Summaries, name: str) -> pd.DataFrame | None:
    """Every run's rows of one of their summaries' tables, in the plan's order of runs."""
    if name in summaries.joined:
        return summaries.joined[name]
    parts = [table(summaries[run.label][name]) for run in plan.runs]
    return pd.concat(parts, ignore_index=True) if parts else None


def joined_scores(plan: Plan, summaries: Summaries) -> pd.DataFrame:
    """scores.csv: every run's task rows in the plan's order, then its macro rows; the
    paper's value of each from the full plan (the summaries know no recording)."""
    frame = _joined(plan, summaries, "scores")
    frame = pd.DataFrame(columns=SCORE_COLUMNS) if frame is None else frame
    pooled = frame[frame.task == POOLED]  # (already in the runs' order)
    frame = frame[frame.task != POOLED]
    tasks = frame[frame.task != "macro"]
    where = _positions(plan)
    keys = list(values_of(tasks, "model", "method", "benchmark", "task"))
    order = sorted(range(len(tasks)), key=lambda i: where[keys[i]])
    tasks, keys = tasks.iloc[order], [keys[i] for i in order]
    by_key = {k: t for k, t in zip(where, plan.tasks, strict=True)}
    tasks = tasks.assign(
        paper=[
            published(_recording(t), t.method_spec.get("mask"), t.benchmark, t.task, metric)
            for t, metric in zip((by_key[key] for key in keys), tasks.metric.tolist(), strict=True)
        ]
    )
    # Each (benchmark, model, method, metric)'s tasks, in the order of first appearance
    # (one pass over the rows: a sweep's table has tens of thousands of groups).
    covered: dict[tuple, set] = {}
    first = {}
    group_keys = values_of(tasks, "benchmark", "model", "method", "metric")
    for key, task in zip(group_keys, tasks.task.tolist(), strict=True):
        if key not in covered:
            covered[key], first[key] = set(), by_key[(key[1], key[2], key[0], task)]
        covered[key].add(task)
    macro_of = {key: i for i, key in enumerate(covered)}
    macros = frame[frame.task == "macro"]
    macro_keys = list(values_of(macros, "benchmark", "model", "method", "metric"))
    order = sorted(range(len(macros)), key=lambda i: macro_of[macro_keys[i]])
    macros, macro_keys = macros.iloc[order], [macro_keys[i] for i in order]
    macros = macros.assign(
        paper=[
            published(
                _recording(first[key]),
                first[key].method_spec.get("mask"),
                key[0],
                "macro",
                key[3],
            )
            if covered[key] == _scored_tasks(key[0])
            else None
            for key in macro_keys
        ]
    )
    return pd.concat([tasks, macros, pooled], ignore_index=True)[SCORE_COLUMNS]


def joined_cost(plan: Plan, summaries: dict[str, dict], prices: dict) -> pd.DataFrame:
    """cost.csv: every run's row, its cost from the config's prices (per million
    tokens) applied to the tokens of calls that reached the model."""
    rows, columns = [], COST_COLUMNS
    for run in plan.runs:
        summary = summaries[run.label]
        of_run = table(summary["cost"])
        columns = list(of_run.columns)
        for row in of_run.to_dict("records"):
            price = prices.get(row["model"])
            fresh = summary["fresh_tokens"]
            cost = (
                round(
                    (fresh["prompt"] * price["prompt"] + fresh["completion"] * price["completion"])
                    / 1e6,
                    4,
                )
                if price
                else None
            )
            rows.append({**row, "cost_usd": cost})
    return pd.DataFrame(rows, columns=columns)


def joined_bank(plan: Plan, summaries: Summaries) -> tuple[pd.DataFrame, pd.DataFrame]:
    """question_bank.csv (per benchmark, its runs in the plan's order) and
    question_bank_leaderboard.csv (per benchmark, best first) of every run."""
    from .tables.bank_board import BANK_LEADERBOARD_COLUMNS, rank_bank
    from .tables.question_bank import BANK_COLUMNS

    bank = _joined(plan, summaries, "question_bank")
    bank = pd.DataFrame(columns=BANK_COLUMNS) if bank is None else bank
    order = {b: i for i, b in enumerate(BANK)}
    bank = bank.sort_values("benchmark", key=lambda s: s.map(order), kind="stable")
    board = pd.concat(
        [table(summaries[r.label]["question_bank_leaderboard"]) for r in plan.runs]
        or [pd.DataFrame(columns=BANK_LEADERBOARD_COLUMNS)],
        ignore_index=True,
    )
    return bank.reset_index(drop=True)[BANK_COLUMNS], rank_bank(board)
