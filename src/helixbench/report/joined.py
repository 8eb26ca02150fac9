"""The report's join: the runs' summaries (:mod:`.run_share.run_summary`) read and put together
in the plan's order, as the tables would be if computed from every record at once."""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from ..benchmarks import bank
from ..config.plan import Plan
from ..errors import ConfigError
from .question_scores import COLUMNS, arrow_schema
from .records import values_of
from .run_share.run_summary import read_summary, table
from .tables.operations import COST_COLUMNS
from .tables.paper import published
from .tables.scores import POOLED, SCORE_COLUMNS, _recording, _scored_tasks

# The benchmarks of the question bank (GeneTuring 2025, BioRAGent, LAB-Bench).
BANK = tuple(bank())


def read_summaries(plan: Plan) -> dict[str, dict]:
    """Run label -> its summary; a run without one is named (its job has not run)."""
    out = {}
    for run in plan.runs:
        path = Path(run.summary_path)
        if not path.is_file():
            raise ConfigError(
                f"no summary of run {run.label!r} ({path}); run snakemake to score it"
            )
        out[run.label] = read_summary(path)
    return out


def prompts_reader(plan: Plan):
    """Run label -> its prompt digests (``prompts.json``, beside its summary)."""
    where = {run.label: Path(run.prompts_path) for run in plan.runs}
    return lambda label: json.loads(where[label].read_text())


# Columns of few distinct values, held as categories in memory: a sweep's table has
# millions of rows (1,000 runs of the whole question bank: 10 million).
ROW_GROUP = 1_000_000  # rows of question_scores.parquet written at once
CATEGORIES = ["run", "model", "method", "benchmark", "task", "question_id", "metric", "demo"]


def read_run_scores(
    plan: Plan, config_digest: str, out_dir: Path, csv: bool
) -> tuple[pd.DataFrame, Future]:
    """Every run's per-question table as one frame (without the config's digest), and
    the report's ``question_scores.parquet`` (every row with the digest; and ``.csv``
    with ``csv``) being written on a thread of its own while the report goes on
    (pyarrow's writer leaves Python's lock: a second core's work); the future's
    ``result()`` waits for the file and raises what writing it raised."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The columns of categories read as dictionaries (Parquet's own: their codes, not a
    # string a row, in half the time: 1,000 runs of the whole question bank take 0.7 GB
    # in memory, not 1.8) and written as the text the table's schema says.
    parts = [pq.read_table(run.score_table_path, read_dictionary=CATEGORIES) for run in plan.runs]
    out = Path(out_dir) / "question_scores.parquet"
    written = ThreadPoolExecutor(max_workers=1, thread_name_prefix="question-scores")
    future = written.submit(_write_question_scores, parts, config_digest, out, csv)
    written.shutdown(wait=False)
    if not parts:
        return pd.DataFrame(columns=[c for c in COLUMNS if c != "config_sha256"]), future
    digest_at = parts[0].schema.get_field_index("config_sha256")
    table = pa.concat_tables([part.remove_column(digest_at) for part in parts])
    del parts
    frame = table.to_pandas(categories=CATEGORIES)
    return frame, future


def _write_question_scores(parts: list, config_digest: str, out: Path, csv: bool) -> None:
    """``question_scores.parquet`` of the runs' tables, their rows given the config's
    digest, in row groups of many runs (compressed as well as one table)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .. import __version__
    from .exports.provenance import _git_commit

    produced = {"version": __version__, "commit": _git_commit()}
    plain = arrow_schema()
    schema = plain.with_metadata({"helixbench": json.dumps(produced, sort_keys=True)})
    digest_at = schema.get_field_index("config_sha256")
    with pq.ParquetWriter(out, schema) as writer:
        start = 0
        while start < len(parts):
            end, rows = start, 0
            while end < len(parts) and rows < ROW_GROUP:
                rows += len(parts[end])
                end += 1
            batch = pa.concat_tables(parts[start:end]).cast(plain)
            digest = pa.array([config_digest] * len(batch), pa.string())
            writer.write_table(batch.set_column(digest_at, schema.field(digest_at), digest))
            start = end
    if csv:
        pd.read_parquet(out).to_csv(out.with_suffix(".csv"), index=False)


def _positions(plan: Plan) -> dict[tuple[str, str, str, str], int]:
    return {(t.model, t.method, t.benchmark, t.task): i for i, t in enumerate(plan.tasks)}


def joined_rows(plan: Plan, summaries: dict[str, dict], name: str) -> pd.DataFrame:
    """One table of the summaries (``replay``, ``errors``, ``agents``, ``taxonomy``)
    with every run's rows, a task's rows in the plan's order of tasks."""
    parts = [table(summaries[run.label][name]) for run in plan.runs]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if {"benchmark", "task"} <= set(frame.columns) and not frame.empty:
        where = _positions(plan)
        order = [where[key] for key in values_of(frame, "model", "method", "benchmark", "task")]
        frame = frame.iloc[sorted(range(len(frame)), key=order.__getitem__)]
        frame = frame.reset_index(drop=True)
    return frame


def joined_scores(plan: Plan, summaries: dict[str, dict]) -> pd.DataFrame:
    """scores.csv: every run's task rows in the plan's order, then its macro rows; the
    paper's value of each from the full plan (the summaries know no recording)."""
    parts = [table(summaries[run.label]["scores"]) for run in plan.runs]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=SCORE_COLUMNS)
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


def joined_bank(plan: Plan, summaries: dict[str, dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """question_bank.csv (per benchmark, its runs in the plan's order) and
    question_bank_leaderboard.csv (per benchmark, best first) of every run."""
    from .tables.bank_board import BANK_LEADERBOARD_COLUMNS, rank_bank
    from .tables.question_bank import BANK_COLUMNS

    bank = pd.concat(
        [table(summaries[r.label]["question_bank"]) for r in plan.runs]
        or [pd.DataFrame(columns=BANK_COLUMNS)],
        ignore_index=True,
    )
    order = {b: i for i, b in enumerate(BANK)}
    bank = bank.sort_values("benchmark", key=lambda s: s.map(order), kind="stable")
    board = pd.concat(
        [table(summaries[r.label]["question_bank_leaderboard"]) for r in plan.runs]
        or [pd.DataFrame(columns=BANK_LEADERBOARD_COLUMNS)],
        ignore_index=True,
    )
    return bank.reset_index(drop=True)[BANK_COLUMNS], rank_bank(board)
