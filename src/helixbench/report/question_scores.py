"""Per-question scores of every run, as one table a reader loads in one call
(``question_scores.parquet`` and ``question_scores.csv`` in the report).

The columns (README.md, "Per-question scores", says the same): one row per (run,
question, metric). ``primary`` marks the task's primary metric, the one the
leaderboards and the paired tests use, so a table from anywhere can be compared
without its config (``helixbench compare --scores``). ``config_sha256`` tells the
rows of one sweep's configs apart when the tables of several working directories
are read together.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..config.plan import Plan
from ..errors import ConfigError
from .records import primary_metric

# name -> (pyarrow type name, description): the schema of both files.
COLUMNS = {
    "run": ("string", "the run, 'model / method'"),
    "model": ("string", "the model's name in the config"),
    "method": ("string", "the method's name in the config"),
    "benchmark": ("string", "the benchmark (its module in helixbench.benchmarks)"),
    "task": ("string", "the task (module) as the benchmark names it"),
    "question_id": ("string", "benchmark/task/index, stable across runs"),
    "metric": ("string", "the scorer (docs/scoring.md)"),
    "primary": ("bool", "whether metric is the task's primary metric"),
    "score": ("float64", "the score in [0, 1]"),
    "demo": ("string", "the GeneGPT demonstration the item reuses (Dm.1..Dm.4), or null"),
    "error": ("string", "why the question has no answer or a stand-in one, or null"),
    "answered_as": ("string", "the question asked in its place (asked once), or null"),
    "scored_by": ("string", "the encoder of an embedding score (a stand-in says so), or null"),
    "config_sha256": ("string", "digest of the config that produced the run"),
}


def question_score_table(
    plan: Plan, scores: pd.DataFrame, config_digest: str | None
) -> pd.DataFrame:
    """The per-question table from runs' scores (``load_scores``); a run's summary
    leaves ``config_digest`` to the report (None)."""
    frame = scores.copy()
    primaries = {task: primary_metric(plan, task) for task in frame.task.unique()}
    frame["primary"] = [
        primaries[t] == m for t, m in zip(frame.task.tolist(), frame.metric.tolist(), strict=True)
    ]
    frame["config_sha256"] = config_digest
    return _typed(frame[list(COLUMNS)])


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for name, (kind, _) in COLUMNS.items():
        if kind == "string":
            frame[name] = frame[name].astype("string")
        elif kind == "bool":
            frame[name] = frame[name].astype(bool)
        else:
            frame[name] = frame[name].astype("float64")
    return frame


def arrow_schema():
    import pyarrow as pa

    kinds = {"string": pa.string(), "bool": pa.bool_(), "float64": pa.float64()}
    return pa.schema(
        [
            pa.field(name, kinds[kind], metadata={"description": text})
            for name, (kind, text) in COLUMNS.items()
        ]
    )


def write_parquet(table: pd.DataFrame, out: Path, metadata: dict) -> None:
    """``table`` as Parquet whose schema carries each column's description and
    ``metadata`` (what produced it)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema().with_metadata({"helixbench": json.dumps(metadata, sort_keys=True)})
    arrow = pa.Table.from_pandas(table, schema=schema, preserve_index=False)
    pq.write_table(arrow, out)


def read_question_scores(files: list[Path]) -> pd.DataFrame:
    """Per-question tables (Parquet or CSV, by suffix) read into one; a run whose
    rows come twice (the same run in two files) is an error that names it."""
    frames = []
    for file in files:
        file = Path(file)
        if file.suffix == ".parquet":
            frame = pd.read_parquet(file)
        elif file.suffix == ".csv":
            frame = pd.read_csv(file, dtype={"demo": "string", "error": "string"})
        else:
            raise ConfigError(f"{file}: not a .parquet or .csv table of per-question scores")
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise ConfigError(f"{file}: no column {', '.join(missing)}; is it question_scores?")
        frame["source"] = str(file)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    keys = ["run", "benchmark", "question_id", "metric"]
    twice = frame[frame.duplicated(keys, keep=False)]
    if not twice.empty:
        run = twice.run.iloc[0]
        sources = sorted(set(twice[twice.run == run].source))
        raise ConfigError(
            f"run {run!r} has scores in more than one table ({', '.join(sources)}); "
            "give one of them"
        )
    return _typed(frame[list(COLUMNS)])
