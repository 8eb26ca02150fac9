"""The report's store (report.store): what it reads a run at a time is what the tables
read from every run's rows held at once."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest

from helixbench.config import build_plan
from helixbench.report.question_scores import (
    question_score_table,
    read_question_scores,
    write_parquet,
)
from helixbench.report.records import ScoreIndex, scores_frame
from helixbench.report.store import CATEGORIES, StoredScoreIndex, store_scores


def _sweep(tmp_path):
    """Four runs on GeneTuring's and GeneTuring 2025's Gene alias (one task name, two
    benchmarks) and SNP location, each run's table written as its score job writes it;
    some questions unscored (NaN), some without an extracted answer, some scores
    fractions (a run's genegpt scores without tools), -0.0 or right and wrong alone (the
    extracted answers'; the store keeps those a byte each)."""
    config = {
        "models": {
            n: {"backend": "openai", "model": n, "api": "chat", "base_url": "http://localhost:1/v1"}
            for n in ("a", "b")
        },
        "benchmarks": ["geneturing", "geneturing2025"],
        "runs": [
            {"models": ["a", "b"], "methods": ["genegpt-slim", "no-tools"],
             "tasks": ["Gene alias", "SNP location"]}
        ],
    }  # fmt: skip
    plan = build_plan(config, None)
    draw = random.Random(7)
    frames = []
    for run in plan.runs:
        rows = []
        for task in run.tasks:
            for i in range(12):
                qid = f"{task.benchmark}/{task.task}/{i:03d}"
                for metric in ("genegpt", "extracted", "strict"):
                    if metric == "extracted" and i % 5 == 4:
                        continue
                    score = float(draw.random() < 0.6)
                    if metric == "genegpt" and run.method == "no-tools":
                        score = -0.0 if i == 3 else round(draw.random(), 3)
                    elif metric != "extracted" and i % 7 == 0:
                        score = math.nan
                    rows.append(
                        {"question_id": qid, "model": run.model, "method": run.method,
                         "benchmark": task.benchmark, "task": task.task, "metric": metric,
                         "score": score, "demo": None, "error": None, "answered_as": None,
                         "scored_by": None}
                    )  # fmt: skip
        frame = question_score_table(plan, scores_frame(rows), None)
        path = tmp_path / run.score_table_path
        path.parent.mkdir(parents=True, exist_ok=True)
        write_parquet(frame, path, {"run": run.label})
        frames.append(frame)
    return plan, pd.concat(frames, ignore_index=True)


def _nan_as_none(scores: dict | None):
    return None if scores is None else {q: None if v != v else v for q, v in scores.items()}


def _values(frame: pd.DataFrame) -> list[tuple]:
    """Rows as Python values, a missing one None (columns' types aside)."""
    rows = frame.astype(object).to_numpy().tolist()
    return [tuple(None if pd.isna(v) else v for v in row) for row in rows]


def test_the_store_writes_every_row_and_answers_as_the_rows_held_at_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(StoredScoreIndex, "MADE_KEPT", 3)  # (made again once let go)
    plan, every = _sweep(tmp_path)
    out = tmp_path / "report"
    out.mkdir()
    store = store_scores(plan, "c0ffee", out, csv=True)
    assert store.written.result() == out / "question_scores.parquet"

    # question_scores.parquet (and .csv): every run's rows with the config's digest.
    written = read_question_scores([out / "question_scores.parquet"])
    pd.testing.assert_frame_equal(written, read_question_scores([out / "question_scores.csv"]))
    assert (written.config_sha256 == "c0ffee").all()
    expected = every.drop(columns="config_sha256").reset_index(drop=True)
    pd.testing.assert_frame_equal(written.drop(columns="config_sha256"), expected)

    # The paired tests' lookups: the same mappings as an index of every row at once.
    held = ScoreIndex(every[every.primary | every.metric.isin(["extracted", "embedding"])])
    keys = list(held.keys()) + [("a / no-tools", "Gene alias", "strict"), ("z", "SNP", "x")]
    for _ in range(2):
        for key in keys:
            assert _nan_as_none(store.index.get(key)) == _nan_as_none(held.get(key)), key
            for benchmark in ("geneturing", "geneturing2025", "genehop"):
                of = _nan_as_none(held.for_benchmark(benchmark).get(key))
                found = store.index.for_benchmark(benchmark).get(key)
                assert _nan_as_none(found) == of, (key, benchmark)
    assert ("a / no-tools", "Gene alias", "genegpt") in store.index
    # Right-or-wrong keys kept a byte a score, the rest (fractions, NaN, -0.0) as they are.
    assert {part for _, part, _, _ in store.index._slices.values()} == {0, 1}
    signed = store.index.for_benchmark("geneturing").get(("a / no-tools", "Gene alias", "genegpt"))
    assert math.copysign(1.0, signed["geneturing/Gene alias/003"]) == -1.0
    with pytest.raises(KeyError):
        store.index[("a / no-tools", "Gene alias", "strict")]  # (not a paired test's)

    # A table's rows: those of its (benchmark, metric)s, read from the runs with any.
    def wanted(benchmark, metric):
        return benchmark == "geneturing2025" and metric == "strict"

    found = store.rows(wanted)
    assert set(found.columns) == set(every.columns) - {"config_sha256"}
    assert all(isinstance(found[c].dtype, pd.CategoricalDtype) for c in CATEGORIES)
    selected = every[(every.benchmark == "geneturing2025") & (every.metric == "strict")]
    assert _values(found[selected.columns.drop("config_sha256")]) == _values(
        selected.drop(columns="config_sha256")
    )
    nothing = store.rows(lambda benchmark, metric: benchmark == "labbench2")
    assert nothing.empty and list(nothing.columns) == list(found.columns)

    # The leaderboard's answers right only once extracted, as pandas counts them.
    pairs = every[every.metric.isin(["genegpt", "extracted"])].pivot_table(
        index=["run", "benchmark", "question_id"], columns="metric", values="score"
    )
    badly = ((pairs.extracted >= 1) & (pairs.genegpt < 1)).groupby(level=[0, 1]).sum()
    answers = pairs.genegpt.groupby(level=[0, 1]).size()
    assert store.reformatted() == {
        key: (int(badly[key]), int(answers[key])) for key in answers.index
    }
    assert sum(b for b, _ in store.reformatted().values()) > 0
