"""The report's columnar store: every run's per-question table (its ``scores.parquet``,
written by its score job) read where it lies, a run at a time, never held whole.

A sweep's per-question rows outgrow memory: 1,000 runs of the whole question bank hold
10 million, 10,000 runs 100 million. The report reads each run's table once
(:func:`store_scores`) and keeps only what its tables need:

- ``question_scores.parquet``, every row with the config's digest, written a row group
  at a time as the runs are read;
- queries across the runs' files as DuckDB answers them (streaming, under a memory
  limit, spilling to a temporary folder; :meth:`QuestionStore.reformatted`);
- the paired tests' scores (each task's primary metric, extracted answers, embedding
  similarity) as two arrays, a question's code and its score, in runs' slices
  (:class:`StoredScoreIndex`: 12 bytes a score, not a Python object);
- which benchmarks and metrics each run has, so a table of LABBench2's, BixBench's or
  the judges' reads only the runs that have them (:meth:`QuestionStore.rows`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from ..config.plan import Plan
from .question_scores import arrow_schema
from .records import ScoreLookups

# Columns of few distinct values: read as Parquet's own dictionaries (their codes, not
# a string a row) and held as categories.
CATEGORIES = ["run", "model", "method", "benchmark", "task", "question_id", "metric", "demo"]
ROW_GROUP = 1_000_000  # rows of question_scores.parquet written at once
# The rows the paired tests look up: each task's primary metric, and these.
INDEXED_METRICS = ("extracted", "embedding")
# DuckDB's memory for a query; past it, it spills to disk.
QUERY_MEMORY = "1GB"

Selected = Callable[[str, str], bool]  # (benchmark, metric) -> whether a table wants its rows


class QuestionStore:
    """The runs' per-question tables, as :func:`store_scores` left them."""

    def __init__(self, plan: Plan, written: Future, kinds: dict, index: StoredScoreIndex):
        self._files = {run.label: Path(run.score_table_path) for run in plan.runs}
        self.written = written  # question_scores.parquet's path, once written
        self.index = index
        self._kinds = kinds  # run label -> its (benchmark, metric) pairs

    def rows(self, selected: Selected) -> pd.DataFrame:
        """The rows whose (benchmark, metric) is ``selected``, in the plan's order of
        runs and each run's own: one frame (without the config's digest), read from the
        runs that have any; with the columns' types of every run's rows together."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        parts = []
        for label, kinds in self._kinds.items():
            wanted = [pair for pair in kinds if selected(*pair)]
            if not wanted:
                continue
            part = _without_digest(pq.read_table(self._files[label], read_dictionary=CATEGORIES))
            if len(wanted) < len(kinds):
                pairs = pc.binary_join_element_wise(
                    part["benchmark"].cast(pa.string()), part["metric"].cast(pa.string()), "\0"
                )
                part = part.filter(pc.is_in(pairs, pa.array([f"{b}\0{m}" for b, m in wanted])))
            parts.append(part)
        if not parts:
            return _empty_frame()
        return pa.concat_tables(parts).to_pandas(categories=CATEGORIES)

    def reformatted(self) -> dict[tuple[str, str], tuple[int, int]]:
        """``(run, benchmark) ->`` (answers right only once extracted: ``extracted`` 1
        and upstream's ``genegpt`` below it; answers with either score), over the
        questions with a score on either metric; empty where no run has both metrics."""
        metrics = {m for kinds in self._kinds.values() for _, m in kinds}
        if not {"genegpt", "extracted"} <= metrics:
            return {}
        found = _query(
            """
            SELECT run, benchmark,
                   count(*) FILTER (WHERE extracted >= 1 AND genegpt < 1),
                   count(*)
            FROM (
                SELECT run, benchmark, question_id,
                       avg(score) FILTER (WHERE metric = 'genegpt') AS genegpt,
                       avg(score) FILTER (WHERE metric = 'extracted') AS extracted
                FROM read_parquet(?)
                WHERE metric IN ('genegpt', 'extracted') AND NOT isnan(score)
                GROUP BY run, benchmark, question_id
            )
            GROUP BY run, benchmark
            """,
            [str(path) for path in self._files.values()],
        )
        return {(run, benchmark): (badly, answers) for run, benchmark, badly, answers in found}


def _query(sql: str, *params) -> list[tuple]:
    """One DuckDB query's rows (an in-memory database, spilling to a temporary folder
    past :data:`QUERY_MEMORY`)."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="helixbench-query-") as spill:
        config = {"memory_limit": QUERY_MEMORY, "temp_directory": spill}
        with duckdb.connect(config=config) as connection:
            return connection.execute(sql, list(params)).fetchall()


def _one_chunk(column):
    """A column's values as one array (a run's table is one chunk: taken as it is)."""
    return column.chunks[0] if column.num_chunks == 1 else column.combine_chunks()


def _without_digest(table):
    return table.drop_columns(["config_sha256"])


def _empty_frame() -> pd.DataFrame:
    import pyarrow as pa

    schema = pa.schema([f for f in arrow_schema() if f.name != "config_sha256"])
    categories = {n: pa.dictionary(pa.int32(), pa.string()) for n in CATEGORIES}
    schema = pa.schema([pa.field(f.name, categories.get(f.name, f.type)) for f in schema])
    return schema.empty_table().to_pandas(categories=CATEGORIES)


def store_scores(plan: Plan, config_digest: str, out_dir: Path, csv: bool) -> QuestionStore:
    """Reads every run's per-question table once, in the plan's order, and keeps the
    paired tests' scores and each run's benchmarks and metrics (module docstring); the
    report's ``question_scores.parquet`` (and ``.csv`` with ``csv``) is written from
    the same tables on a thread of its own, a row group at a time, while the report
    goes on (pyarrow's reader and writer leave Python's lock: a second core's work):
    the store's ``written.result()`` waits for it and raises what writing raised."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    index = StoredScoreIndex()
    kinds: dict[str, set] = {}
    writer = _QuestionScoresWriter(Path(out_dir) / "question_scores.parquet", config_digest, csv)
    pending, rows = [], 0

    def read(run):
        return pq.read_table(run.score_table_path, read_dictionary=CATEGORIES)

    try:
        for run, table in zip(plan.runs, _read_ahead(read, plan.runs), strict=True):
            kinds[run.label] = index.add(table)
            pending.append(table)
            rows += len(table)
            if rows >= ROW_GROUP:
                writer.write(pending)
                pending, rows = [], 0
        if pending:
            writer.write(pending)
    except BaseException:
        writer.close().cancel()
        raise
    index.done()
    written = writer.close()
    pa.default_memory_pool().release_unused()  # (the runs' tables, read and let go)
    return QuestionStore(plan, written, kinds, index)


# Runs' tables read ahead of the one the store takes (on two threads).
READ_AHEAD = 8


def _read_ahead(read, items):
    """``read(item)`` of each of ``items`` in order, :data:`READ_AHEAD` of them read
    ahead (not every one at once: a sweep's tables outgrow memory)."""
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as reading:
        ahead = deque()
        for item in items:
            ahead.append(reading.submit(read, item))
            if len(ahead) > READ_AHEAD:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


class _QuestionScoresWriter:
    """question_scores.parquet written a row group at a time on a thread of its own,
    each row given the config's digest; at most one group waits while one is written."""

    def __init__(self, out: Path, config_digest: str, csv: bool):
        import pyarrow.parquet as pq

        from .. import __version__
        from .exports.provenance import _git_commit

        produced = {"version": __version__, "commit": _git_commit()}
        self._plain = arrow_schema()
        self._schema = self._plain.with_metadata(
            {"helixbench": json.dumps(produced, sort_keys=True)}
        )
        self._out, self._digest, self._csv = out, config_digest, csv
        self._writer = pq.ParquetWriter(out, self._schema)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="question-scores")
        self._waiting: Future | None = None

    def write(self, tables: list) -> None:
        if self._waiting is not None:
            self._waiting.result()  # (the group before the one being written)
        self._waiting = self._thread.submit(self._write, tables)

    def _write(self, tables: list) -> None:
        import pyarrow as pa

        batch = pa.concat_tables(tables).cast(self._plain)
        at = self._schema.get_field_index("config_sha256")
        digest = pa.array([self._digest] * len(batch), pa.string())
        self._writer.write_table(batch.set_column(at, self._schema.field(at), digest))

    def close(self) -> Future:
        """The file closed (and its CSV written) after the groups given: its future."""
        done = self._thread.submit(self._finish)
        self._thread.shutdown(wait=False)
        return done

    def _finish(self) -> Path:
        if self._waiting is not None:
            self._waiting.result()  # (done: this thread wrote it; raises what it raised)
        self._writer.close()
        if self._csv:
            pd.read_parquet(self._out).to_csv(self._out.with_suffix(".csv"), index=False)
        return self._out


class StoredScoreIndex(ScoreLookups):
    """:class:`~.records.ScoreIndex`'s lookups over every run's paired-test rows, kept
    as a question's code and its score (arrays, a run's of its own); a key's mapping is
    made when asked for, as ScoreIndex's, and the last :data:`MADE_KEPT` kept (the
    tests ask for a run's scores once per pair it is in).

    A key's scores that are all 0 or 1 (a right or wrong answer: most of them) are kept
    a byte each, the others as they are; a code takes two bytes while a sweep has fewer
    than 65,536 questions. At 10,000 runs of the whole question bank that is about 0.3
    GB where codes and scores of eight bytes took 0.7 GB (and twice that while joined)."""

    MADE_KEPT = 20_000

    def __init__(self):
        self._ids: dict[str, int] = {}  # question id -> its code
        # a run's (codes, scores) of its keys whose scores are all 0 or 1, and of the rest
        self._chunks: list[tuple[tuple[np.ndarray, np.ndarray], ...]] = []
        # (run, benchmark, task, metric) -> (its run's chunk, which part, start, stop)
        self._slices: dict[tuple[str, str, str, str], tuple[int, int, int, int]] = {}
        self._benchmarks: dict[tuple[str, str, str], list[str]] = {}  # (run, task, metric) ->
        self._made: dict[tuple, dict[str, float]] = {}
        self._last_dictionary = None
        self._shared: dict[str, str] = {}

    def add(self, table) -> set[tuple[str, str]]:
        """A run's table: its paired-test rows kept; returns its (benchmark, metric)
        pairs."""
        columns = {
            name: _one_chunk(table[name])
            for name in ("run", "benchmark", "task", "metric", "question_id")
        }
        codes = {name: c.indices.to_numpy(zero_copy_only=False) for name, c in columns.items()}
        values = {  # (each name one object across runs, as the keys below hold them)
            name: [self._shared.setdefault(v, v) for v in c.dictionary.to_pylist()]
            for name, c in columns.items()
            if name != "question_id"
        }
        width = len(values["metric"])
        pairs = codes["benchmark"].astype(np.int64) * width + codes["metric"]
        kinds = {
            (values["benchmark"][c // width], values["metric"][c % width])
            for c in np.flatnonzero(np.bincount(pairs)).tolist()
        }
        indexed = np.array([m in INDEXED_METRICS for m in values["metric"]], dtype=bool)
        primary = table["primary"].to_numpy()
        keep = np.flatnonzero(indexed[codes["metric"]] | primary)
        if not len(keep):
            return kinds
        key_codes = codes["run"][keep].astype(np.int64)
        for name in ("benchmark", "task", "metric"):
            key_codes = key_codes * len(values[name]) + codes[name][keep]
        order = np.argsort(key_codes, kind="stable")
        keep, key_codes = keep[order], key_codes[order]
        starts = np.flatnonzero(np.r_[True, key_codes[1:] != key_codes[:-1]])
        questions = columns["question_id"].dictionary
        if self._last_dictionary is None or not questions.equals(self._last_dictionary):
            self._question_codes = np.array(
                [self._ids.setdefault(q, len(self._ids)) for q in questions.to_pylist()],
                dtype=np.int32,
            )
            self._last_dictionary = questions  # (a sweep's runs: most share theirs)
        question_codes = self._question_codes[codes["question_id"][keep]]
        if len(self._ids) <= 2**16:
            question_codes = question_codes.astype(np.uint16)
        scores = _one_chunk(table["score"]).to_numpy(zero_copy_only=False)[keep]
        # Each key's part: 0 where its scores are all 0 or 1, else 1.
        bit = (scores == 1) | ((scores == 0) & ~np.signbit(scores))  # (-0.0 kept as it is)
        right_or_wrong = np.minimum.reduceat(bit, starts)
        part_of_key = np.where(right_or_wrong, 0, 1)
        lengths = np.diff(np.r_[starts, len(keep)])
        part = np.repeat(part_of_key, lengths)
        self._chunks.append(
            (
                (question_codes[part == 0], scores[part == 0].astype(np.uint8)),
                (question_codes[part == 1], scores[part == 1]),
            )
        )
        at = [0, 0]  # (where each part's next key starts)
        chunk = len(self._chunks) - 1
        for start, length, which in zip(
            starts.tolist(), lengths.tolist(), part_of_key.tolist(), strict=True
        ):
            row = keep[start]
            key = tuple(values[n][codes[n][row]] for n in ("run", "benchmark", "task", "metric"))
            self._slices[key] = (chunk, which, at[which], at[which] + length)
            at[which] += length
            self._benchmarks.setdefault((key[0], key[2], key[3]), []).append(key[1])
        return kinds

    def done(self) -> None:
        """Every run added: the question codes' ids kept."""
        self._names = np.array(list(self._ids), dtype=object)

    def get(self, key: tuple[str, str, str], default=None, benchmark: str | None = None):
        made = self._made.get((key, benchmark))
        if made is not None:
            return made
        benchmarks = self._benchmarks.get(key)
        if benchmarks is None or (benchmark is not None and benchmark not in benchmarks):
            return default
        run, task, metric = key
        made = {}
        for of in [benchmark] if benchmark is not None else benchmarks:
            chunk, which, start, stop = self._slices[(run, of, task, metric)]
            codes, scores = self._chunks[chunk][which]
            ids = self._names[codes[start:stop]].tolist()
            made.update(zip(ids, scores[start:stop].astype(np.float64).tolist(), strict=True))
        if len(self._made) >= self.MADE_KEPT:
            del self._made[next(iter(self._made))]  # (the first made: runs come and go)
        self._made[(key, benchmark)] = made
        return made

    def __contains__(self, key) -> bool:
        return key in self._benchmarks

    def for_benchmark(self, benchmark: str) -> _OfBenchmark:
        return _OfBenchmark(self, benchmark)


class _OfBenchmark(ScoreLookups):
    """The lookups of one benchmark's rows (a task name can be two benchmarks')."""

    def __init__(self, index: StoredScoreIndex, benchmark: str):
        self._index, self._benchmark = index, benchmark

    def get(self, key, default=None):
        return self._index.get(key, default, self._benchmark)
