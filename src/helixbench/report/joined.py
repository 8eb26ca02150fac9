"""The report's join: the runs' summaries (:mod:`.run_share.run_summary`) read and put together
in the plan's order, as the tables would be if computed from every record at once (their
per-question tables: :mod:`.store`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..benchmarks import bank
from ..config.plan import Plan
from ..errors import ConfigError
from .run_share.run_summary import read_summary, stacked
from .tables.operations import COST_COLUMNS
from .tables.paper import published
from .tables.scores import POOLED, SCORE_COLUMNS, _recording, _scored_tasks

# The benchmarks of the question bank (GeneTuring 2025, BioRAGent, LAB-Bench).
BANK = tuple(bank())


# A run's largest tables (the bulk of its summary), joined as the summaries are read,
# JOIN_EVERY runs at a time into a frame: the report holds these frames, not every
# run's JSON (as Python objects a summary takes eight times its file: half a gigabyte a
# thousand runs).
JOINED = ("scores", "errors", "taxonomy", "question_bank")
JOIN_EVERY = 100


class Summaries(dict):
    """Run label -> its summary, less the tables of :data:`JOINED`: those are in
    ``joined``, every run's rows in one frame (in the plan's order of runs; None where
    the plan has no run)."""

    joined: dict[str, pd.DataFrame | None]

    def take(self, name: str) -> pd.DataFrame | None:
        """A joined table handed over, no longer held here (a sweep's scores rows are
        half a gigabyte at 10,000 runs: the report keeps its own, sorted copy only)."""
        return self.joined.pop(name)


def read_summaries(plan: Plan) -> Summaries:
    """Every run's summary (:class:`Summaries`); a run without one is named (its job
    has not run)."""
    out = Summaries()
    pending: dict[str, list] = {name: [] for name in JOINED}
    chunks: dict[str, list] = {name: [] for name in JOINED}

    def join() -> None:
        for name, tables in pending.items():
            chunks[name].append(stacked(tables))
            tables.clear()

    shared: dict = {}
    for run in plan.runs:
        path = Path(run.summary_path)
        if not path.is_file():
            raise ConfigError(
                f"no summary of run {run.label!r} ({path}); run snakemake to score it"
            )
        summary = read_summary(path)
        for name in JOINED:
            pending[name].append(summary.pop(name))
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


PLAIN = frozenset({str, type(None)})  # (what a shared mapping or list may hold)


def _shared(value, shared: dict):
    """``value`` as the one object of its value that ``shared`` holds, where it is a
    text or a mapping or list of texts (a sweep's task facts repeat a few names, a
    model's identity and empty lists and counts: 10,000 runs hold 430,000 facts, where
    orjson makes an object of each value it reads). The facts are read, never changed;
    numbers are left as they are (1, 1.0, True and -0.0 would be one key)."""
    kind = type(value)
    if kind is str:
        return shared.setdefault(value, value)
    if kind is dict and all(type(v) in PLAIN for v in value.values()):
        return shared.setdefault((dict, *value.items()), value)
    if kind is list and all(type(v) in PLAIN for v in value):
        return shared.setdefault((list, *value), value)
    return value


def prompts_reader(plan: Plan):
    """Run label -> its prompt digests (``prompts.json``, beside its summary)."""
    where = {run.label: Path(run.prompts_path) for run in plan.runs}
    return lambda label: json.loads(where[label].read_text())


TASK_KEY = ["model", "method", "benchmark", "task"]
GROUP_KEY = ["benchmark", "model", "method", "metric"]  # (a macro row's)


def _positions(plan: Plan) -> dict[tuple[str, str, str, str], int]:
    return {(t.model, t.method, t.benchmark, t.task): i for i, t in enumerate(plan.tasks)}


def factorized(frame: pd.DataFrame, columns: list[str]) -> dict[str, tuple[np.ndarray, dict]]:
    """Each of ``columns``: its rows' codes and each value's code, in the order values
    first appear (a sweep's tables have millions of rows, and a key a row as Python
    values would take gigabytes)."""
    found = {}
    for column in columns:
        codes, values = pd.factorize(frame[column])
        if (codes < 0).any():
            raise ValueError(f"a summary's table has rows without a {column}")
        found[column] = (codes, {value: code for code, value in enumerate(values.tolist())})
    return found


def combined(factors: dict, columns: list[str]) -> np.ndarray:
    """Each row's values of ``columns`` (:func:`factorized`) as one integer: equal
    rows, equal integers."""
    codes = [factors[column][0] for column in columns]
    if not len(codes[0]):
        return np.zeros(0, dtype=np.intp)
    return np.ravel_multi_index(codes, [len(factors[column][1]) for column in columns])


def first_seen(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's group, the groups numbered in the order they first appear, and each
    group's first position."""
    groups = pd.factorize(keys)[0]
    return groups, np.unique(groups, return_index=True)[1]


def plan_positions(plan: Plan, factors: dict) -> np.ndarray:
    """Each row's task's position in ``plan.tasks`` (by :data:`TASK_KEY`, its columns
    :func:`factorized`); -1 for a row of no task of the plan (a macro row)."""
    keys = combined(factors, TASK_KEY)
    coded = [factors[column][1] for column in TASK_KEY]
    where = {}
    for position, key in enumerate(_positions(plan)):
        codes = [c.get(value) for c, value in zip(coded, key, strict=True)]
        if None not in codes:  # (else no row of the frame is that task's)
            where[int(np.ravel_multi_index(codes, [len(c) for c in coded]))] = position
    return pd.Index(list(where)).get_indexer(keys) if where else np.full(len(keys), -1)


def _planned(frame: pd.DataFrame, rows: np.ndarray, positions: np.ndarray) -> None:
    """(KeyError naming the first of ``rows`` that is of no task of the plan)"""
    unplanned = rows[positions[rows] < 0]
    if len(unplanned):
        key = frame.iloc[int(unplanned[0])][TASK_KEY].tolist()
        raise KeyError(f"a summary's row of a task the plan has not: {key}")


def joined_rows(plan: Plan, summaries: Summaries, name: str) -> pd.DataFrame:
    """One table of the summaries (``replay``, ``errors``, ``agents``, ``taxonomy``)
    with every run's rows, a task's rows in the plan's order of tasks."""
    frame = _joined(plan, summaries, name)
    frame = pd.DataFrame() if frame is None else frame
    if {"benchmark", "task"} <= set(frame.columns) and not frame.empty:
        positions = plan_positions(plan, factorized(frame, TASK_KEY))
        _planned(frame, np.arange(len(frame)), positions)
        frame = frame.iloc[np.argsort(positions, kind="stable")].reset_index(drop=True)
    return frame


def _joined(plan: Plan, summaries: Summaries, name: str) -> pd.DataFrame | None:
    """Every run's rows of one of their summaries' tables, in the plan's order of runs."""
    if name in summaries.joined:
        return summaries.joined[name]
    return stacked([summaries[run.label][name] for run in plan.runs])


def joined_scores(plan: Plan, summaries: Summaries) -> pd.DataFrame:
    """scores.csv: every run's task rows in the plan's order, then its macro rows; the
    paper's value of each from the full plan (the summaries know no recording). The
    rows are found as integers and taken once: at 10,000 runs the table is 3 million
    rows, half a gigabyte a copy."""
    frame = summaries.take("scores")  # (the join's own from here on)
    if frame is None or frame.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    factors = factorized(frame, [*TASK_KEY, "metric"])
    (task_code, code_of), (metric_code, metric_of) = factors["task"], factors["metric"]
    task_names, metric_names = list(code_of), list(metric_of)
    macro = task_code == code_of.get("macro", -2)
    pooled = task_code == code_of.get(POOLED, -2)
    rows = np.flatnonzero(~macro & ~pooled)
    positions = plan_positions(plan, factors)
    _planned(frame, rows, positions)
    rows = rows[np.argsort(positions[rows], kind="stable")]
    at, metric_at = positions[rows], metric_code[rows]
    # The paper's value, once a (task, metric): a sweep repeats each thousands of times.
    pair, first_of_pair = first_seen(at * len(metric_names) + metric_at)
    paper = [_published(plan.tasks[at[i]], None, metric_names[metric_at[i]]) for i in first_of_pair]
    paper = pd.Series(paper, dtype=object).to_numpy()[pair]
    # Each (benchmark, model, method, metric)'s tasks, in the order of first appearance
    # (a sweep's table has tens of thousands of groups): the macro rows' order.
    group_keys = combined(factors, GROUP_KEY)
    group, first_in_group = first_seen(group_keys[rows])
    covered: list[set] = [set() for _ in first_in_group]
    for i in first_seen(group * len(task_names) + task_code[rows])[1]:
        covered[group[i]].add(task_names[task_code[rows[i]]])
    macros = np.flatnonzero(macro)
    macro_group = pd.Index(group_keys[rows[first_in_group]]).get_indexer(group_keys[macros])
    if (macro_group < 0).any():
        raise KeyError("a summary's macro row of a group with no task rows")
    order = np.argsort(macro_group, kind="stable")
    macros = macros[order]
    macro_paper = []
    for g in macro_group[order].tolist():
        first = plan.tasks[at[first_in_group[g]]]
        metric = metric_names[metric_at[first_in_group[g]]]
        whole = covered[g] == _scored_tasks(first.benchmark)
        macro_paper.append(_published(first, "macro", metric) if whole else None)
    pooled = np.flatnonzero(pooled)  # (already in the runs' order)
    joined = frame.iloc[np.concatenate([rows, macros, pooled])].reset_index(drop=True)
    # (each part's values as a column of its own would have them: None, or numbers)
    parts = [pd.Series(paper.tolist()), pd.Series(macro_paper), frame.paper.iloc[pooled]]
    joined["paper"] = pd.concat(parts, ignore_index=True).to_numpy()
    return joined[SCORE_COLUMNS]


def _published(task, name: str | None, metric: str):
    """The paper's value of ``task``'s metric (or its benchmark's ``name``: "macro")."""
    mask = task.method_spec.get("mask")
    return published(_recording(task), mask, task.benchmark, name or task.task, metric)


def joined_cost(plan: Plan, summaries: dict[str, dict], prices: dict) -> pd.DataFrame:
    """cost.csv: every run's row, its cost from the config's prices (per million
    tokens) applied to the tokens of calls that reached the model."""
    rows, columns = [], COST_COLUMNS
    for run in plan.runs:
        summary = summaries[run.label]
        # (its rows as they are, not a frame a run: the table's columns are inferred
        # once, from every run's values, as a frame a run and its records would give)
        columns = summary["cost"]["columns"]
        for values in summary["cost"]["rows"]:
            row = dict(zip(columns, values, strict=True))
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
    board = stacked([summaries[r.label]["question_bank_leaderboard"] for r in plan.runs])
    board = pd.DataFrame(columns=BANK_LEADERBOARD_COLUMNS) if board is None else board
    return bank.reset_index(drop=True)[BANK_COLUMNS], rank_bank(board)
