"""BixBench: its zero-shot questions asked with its own prompts and read as its code
reads them, its published runs (and a user's own file) graded as its code grades them,
every figure equal to its aggregates, and a judge with its grading prompt."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import runpy
from pathlib import Path

import pandas as pd
import pytest

from helixbench import paths
from helixbench.benchmarks.bixbench import AGGREGATES, CODE, TASKS, task_path
from helixbench.datasets.fetch import mirror_path
from helixbench.datasets.questions import read_questions
from helixbench.datasets.upstream import lookup
from helixbench.loopback.openai import OpenAIServer, OpenAIServerState
from helixbench.sources.bixbench import (
    clean,
    mcq_grade,
    parse_response,
    range_verdict,
    str_verdict,
)

from .conftest import run_snakemake

REPO, COMMIT = "Future-House/BixBench", "49311180bdacb324c596f2e07596c126f2004008"


def test_answers_are_cut_and_graded_as_bixbench_does():
    assert parse_response("<answer> d </answer>", mcq=True) == "D"
    assert parse_response("I'm sorry, but I cannot.", mcq=True) == "RY, BUT I CANNOT"  # (slice)
    assert parse_response("so <answer> 42 kb </answer>", mcq=False) == " 42 kb "
    assert mcq_grade("D", "D", "A") == (True, False)
    assert mcq_grade("A", "D", "A") == (False, True)
    assert mcq_grade("(D)", "D", "A") == (True, False)  # (cleaned: letters and digits)
    assert mcq_grade("(A)", "D", "A") == (False, False)  # (a refusal only as its letter)
    assert str_verdict(" 15% ", "15.6%")[0] is True  # (its partial match: "15" in "156")
    assert str_verdict("", "0.0002")[0] is True  # (an empty answer is inside any target)
    assert str_verdict("0.03", "0.0002")[0] is None  # (BixBench asks its LLM)
    assert range_verdict("about 1.52", "(1.50,1.54)") == (True, "1.52 within [1.5, 1.54]")
    assert range_verdict("0.8 or 1.6", "(1.50,1.54)")[0] is False
    assert range_verdict("1.52 (p < 0.05)", "(1.50,1.54)")[0] is None
    assert range_verdict("cannot tell", "(1.50,1.54)")[0] is None


def pinned_file(mirror: Path, task: str) -> Path:
    """GPT-4o's published file of ``task``, in the mirror."""
    return mirror_path(lookup(REPO, task_path(task, "gpt-4o"), COMMIT).url, mirror)


def _own_files(mirror: Path, out: Path) -> dict[str, Path]:
    """Another model's v1.5 run, graded as grade_outputs.py grades (GPT-4o's questions,
    other answers and grades)."""
    files = {}
    # (in an order that is not the benchmark's: a run's folder never depends on it)
    for task in ("v1.5/open", "v1.5/mcq-refusal", "v1.5/mcq"):
        rows = list(csv.DictReader(io.StringIO(pinned_file(mirror, task).read_text())))
        for i, row in enumerate(rows):
            if task.startswith("v1.5/mcq"):  # right, refused, wrong in turn
                row["predicted"] = [row["target"], row["unsure"], "Z"][i % 3]
                right, refused = mcq_grade(row["predicted"], row["target"], row["unsure"])
            else:  # an open answer judged right one time in four
                right, refused = i % 4 == 0, False
            row.update(grade=str(int(right)), correct=str(right), sure=str(refused))
        path = out / f"other-{task.replace('/', '-')}.csv"
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        files[task] = path
    return files


def _snakemake(workdir: Path, config: dict, mirror: Path) -> pd.DataFrame:
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    done = run_snakemake(workdir, config, "--cores", "2", env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    return pd.read_csv(workdir / "results" / "report" / "bixbench.csv")


@pytest.mark.slow
@pytest.mark.workflow
def test_published_runs_equal_their_aggregates_and_a_model_of_ours_is_graded_alike(
    mirror, tmp_path
):
    own = _own_files(mirror, tmp_path)
    config = {
        "benchmarks": ["bixbench-mcq", "bixbench-open"],
        "shards": 1,
        "tools": {"mode": "offline"},
        "models": {
            "gpt-4o": {"backend": "imported", "source": "bixbench/gpt-4o"},
            "claude": {"backend": "imported", "source": "bixbench/claude-3-5-sonnet"},
            "other": {"backend": "imported", "source": {
                "format": "bixbench", "model": "another model",
                "published_as": "claude-3-5-sonnet-latest",
                "reports": {task: str(path) for task, path in own.items()}}},
        },
        "runs": [{"models": ["gpt-4o", "claude", "other"], "method": "imported"}],
    }  # fmt: skip
    table = _snakemake(tmp_path, config, mirror)
    # Every pinned file: each figure is its zero_shot_baselines.json's.
    published = {
        v: json.loads(mirror_path(f.url, mirror).read_text()) for v, f in AGGREGATES.items()
    }
    pinned = table[table.model.isin(["gpt-4o", "claude"])]
    assert len(pinned) == 9 and pinned.matches.all()
    for row in pinned.itertuples():
        version, mode = TASKS[row.task]
        theirs = published[version][f"{row.published_as}-grader-{mode}"]
        for figure in ("accuracy", "precision", "coverage", "n_total", "n_correct", "n_sure"):
            assert getattr(row, figure) == pytest.approx(theirs[figure], abs=5e-8), row
    # A file not in the mirror, given by path: BixBench's compute_metrics on its columns.
    utils = runpy.run_path(str(mirror_path(CODE[1].url, mirror)))
    for task, path in own.items():
        frame = pd.read_csv(path)
        theirs = utils["compute_metrics"](frame.grade.tolist(), frame.sure.tolist())
        row = table[(table.model == "other") & (table.task == task)].iloc[0]
        for figure, value in theirs.items():
            assert getattr(row, figure) == pytest.approx(value, abs=5e-8), (task, figure)
        assert row.published_as == "claude-3-5-sonnet-latest" and not row.matches
    # The string and range verifiers agree with BixBench's grades but where it asked its LLM.
    listed = pd.read_csv(tmp_path / "results" / "report" / "bixbench_verifier.csv")
    gpt = listed[listed.run == "gpt-4o / imported"]
    assert set(gpt.graded_by) == {"its LLM range grader", "its LLM (no string match)"}
    opened = pd.read_csv(pinned_file(mirror, "v1.5/open"), keep_default_na=False)
    strings = opened[opened.evaluation_mode == "str_verifier"]
    fell_back = [
        clean(p) not in clean(t) for p, t in zip(strings.predicted, strings.target, strict=True)
    ]
    assert (gpt["mode"] == "str_verifier").sum() == sum(fell_back) > 0

    # A model of ours, asked with BixBench's prompts: the target letters score 1.000,
    # always the refusal covers nothing; a judge answering BixBench's published grades
    # gives them back.
    questions = read_questions(tmp_path / paths.QUESTIONS)
    questions = [q for q in questions if q.benchmark.startswith("bixbench")]
    grades = {}
    for row in csv.DictReader(io.StringIO(pinned_file(mirror, "v1/open").read_text())):
        digest = hashlib.sha256(row["predicted"].encode()).hexdigest()[:12]
        grades[(row["question"], digest)] = row["grade"] == "1"

    def letter(messages, pick):
        prompt = messages[-1]["content"]
        found = next(q for q in questions if q.choices and f"Question: {q.text}\n" in prompt
                     and all(c in prompt for c in q.choices))  # fmt: skip
        shown = found.shown or list(range(len(found.choices)))
        return f"<answer> {chr(65 + shown.index(pick(found)))} </answer>"

    right = OpenAIServerState(chat=lambda m: letter(m, lambda q: 0))
    refuse = OpenAIServerState(chat=lambda m: letter(m, lambda q: len(q.choices) - 1))

    def judge(messages):
        text = messages[-1]["content"]
        question = text.split("Question: ", 1)[1].split("\nTarget Answer: ", 1)[0]
        predicted = text.split("Predicted Answer: ", 1)[1].split("\n\nImportant: ", 1)[0]
        fence = re.match(r"<submitted_answer_([0-9a-f]{12})>", predicted)  # (named for it)
        verdict = grades.get((question, fence.group(1))) if fence else None
        return (
            "no grade here"
            if verdict is None
            else f"<grade> {'correct' if verdict else 'incorrect'} </grade>"
        )

    with (
        OpenAIServer(right) as a,
        OpenAIServer(refuse) as b,
        OpenAIServer(OpenAIServerState(chat=judge)) as j,
    ):
        config["models"] = {
            "gpt-4o": config["models"]["gpt-4o"],
            "right": a.chat_model(),
            "refuser": b.chat_model(),
            "judge": {**j.chat_model(), "model": "judge"},  # (not the judged model)
        }
        # (every published answer judged, not a calibration sample: its figures whole)
        config["scoring"] = {"judge": {"model": "judge", "calibration": {"size": 5000}}}
        config["methods"] = {"ask": {"kind": "no-tools", "max_tokens": 16}}
        config["runs"] = [
            {"model": "gpt-4o", "method": "imported", "tasks": ["v1/open", "v1/mcq"]},
            {"model": "right", "method": "ask", "tasks": ["v1/mcq-refusal", "v1/mcq"]},
            {"model": "refuser", "method": "ask", "tasks": ["v1/mcq-refusal"], "sample": 20},
        ]
        table = _snakemake(tmp_path, config, mirror)
    ours = table[table.model == "right"]
    assert len(ours) == 2 and (ours.accuracy == 1.0).all() and (ours.n_total == 296).all()
    refuser = table[table.model == "refuser"].iloc[0]
    assert refuser.coverage == 0.0 and refuser.n_total == 20 and refuser.n_sure == 0
    gpt = table[(table.model == "gpt-4o") & (table.task == "v1/open")].iloc[0]
    assert gpt.judge_questions == 296 and gpt.judge_accuracy == pytest.approx(gpt.accuracy)
    paired = pd.read_csv(tmp_path / "results" / "report" / "bixbench_paired.csv")
    mine = paired[(paired.run == "right / ask") & (paired.task == "v1/mcq")].iloc[0]
    assert mine.questions == 296 and mine.score == 1.0 and mine.p_value < 0.001
