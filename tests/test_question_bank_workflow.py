"""GeneTuring 2025 and BioRAGent through the workflow, offline from the mirror: an
oracle model (a loopback OpenAI-compatible server answering each question with its
gold) under no tools, and a completions model under GeneGPT's text protocol, over one
question of every task; repeated questions asked once. (Function calling poses the
questions as no tools does: tests/test_function_calling.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helixbench.benchmarks import load_all
from helixbench.datasets.jsonfiles import read_jsonl
from helixbench.loopback.openai import OpenAIServer
from helixbench.transcripts import read_records

from .test_workflow import read_csv, snakemake


@pytest.fixture(scope="module")
def every_question(mirror):
    return load_all(lambda file: mirror / file.relpath)


@pytest.mark.slow
@pytest.mark.workflow
def test_every_new_task_runs_is_scored_and_reported(mirror, tmp_path, every_question):
    with OpenAIServer() as oracle, OpenAIServer() as echo:
        oracle.state.answers.update(
            {q.text: q.gold for q in every_question if isinstance(q.gold, str)}
        )

        def model(server, api):
            spec = {"backend": "openai", "api": api, "model": "m", "base_url": server.base_url}
            return {**spec, "api_key_env": None, "concurrency": 1}

        config = {
            "shards": 1,
            "tools": {"mode": "offline"},
            "models": {"oracle": model(oracle, "chat"), "echo": model(echo, "completions")},
            "methods": {  # LAB-Bench with and without tools, as lab-bench-tools.yaml asks it
                "lab-bench": {"kind": "no-tools", "choices": "futurehouse"},
                "lab-bench-ncbi": {
                    "kind": "function-calling",
                    "choices": "futurehouse",
                    "demonstrations": False,
                },
            },
            "runs": [
                {
                    "model": "oracle",
                    "methods": ["lab-bench", "lab-bench-ncbi"],
                    "benchmarks": ["labbench-seqqa"],
                    "sample": 1,
                },
                {
                    "model": "oracle",
                    "method": "no-tools",
                    "benchmarks": ["geneturing", "geneturing2025", "bioragent"],
                    "sample": 1,
                },
                {  # GeneGPT's text protocol poses them as written (a task of each kind)
                    "model": "echo",
                    "method": "genegpt-slim",
                    "benchmarks": ["geneturing2025", "bioragent"],
                    "tasks": ["Amino acid translation", "gene_alias", "BioASQ_yesno"],
                    "sample": 1,
                },
            ],
        }
        done = snakemake(tmp_path, config, mirror=mirror)
        assert done.returncode == 0, done.stderr[-3000:]
        # One sample question of 9 + 16 + 15 tasks; the five BioRAGent tasks that copy
        # GeneTuring's take its sampled questions: asked once, scored for both.
        asked = [
            body["messages"][-1]["content"]
            for _, body, _ in oracle.state.received
            if "[ANSWER]" not in json.dumps(body)  # (LAB-Bench's, below)
        ]
        assert len(asked) == 9 + 16 + 15 - 5
        assert len(set(asked)) == len(asked)  # each once

    report = tmp_path / "results" / "report"
    board = {
        (r["run"], r["benchmark"]): r for r in read_csv(report / "question_bank_leaderboard.csv")
    }
    for method in ("no-tools",):
        for benchmark, tasks in (("geneturing2025", 16), ("bioragent", 15)):
            row = board[f"oracle / {method}", benchmark]
            assert row["tasks"] == str(tasks)
            # the gold as the answer: 1 on every primary scorer (embedding: cosine ~1)
            assert float(row["macro"]) > 0.999, row
        bioragent = board[f"oracle / {method}", "bioragent"]
        assert bioragent["original_n"] == "5"  # the five asked-once items' GeneTuring scores
    assert float(board["echo / genegpt-slim", "bioragent"]["macro"]) < 0.5
    scores = read_jsonl(
        next((tmp_path / "results" / "scores" / "oracle" / "no-tools").glob("*.jsonl.zst"))
    )
    shared = [s for s in scores if s["benchmark"] == "bioragent" and s["answered_as"]]
    assert {s["task"] for s in shared} == {
        "gene_alias",
        "gene_location",
        "SNP_location",
        "gene_SNP_association",
        "gene_disease_association",
    }
    assert all(s["answered_as"].startswith("geneturing.") for s in shared)
    layout = read_csv(report / "question_bank.csv.gz")
    metrics = {(r["benchmark"], r["task"]): r["metric"] for r in layout}
    assert metrics["geneturing2025", "Amino acid translation"] == "sequence_exact"
    assert metrics["geneturing2025", "TF regulation"] == "tf_label"
    assert metrics["bioragent", "BioASQ_yesno"] == "yes_no"
    assert metrics["bioragent", "phenotype_disease_association"] == "list_recall"
    overlap = {(r["benchmark"], r["task"]): r for r in read_csv(report / "overlap.csv")}
    assert overlap["bioragent", "gene_alias"]["verbatim"] == "50"
    assert overlap["bioragent", "SNP_gene_function"]["instruction_dropped"] == "50"
    assert overlap["geneturing2025", "Gene alias"]["rephrased"] == "50"
    assert overlap["geneturing2025", "Gene alias"]["new"] == "50"
    golds = read_csv(report / "overlap_golds.csv")
    assert len(golds) == 14
    text = (report / "report.md").read_text()
    assert "## Question bank: GeneTuring 2025, BioRAGent and LAB-Bench" in text
    assert "Winnie09/GeneTuring @ 4bc94391321991125bddfe0a726f35b87495fd6f"[:34] in text
    assert "23AIBox/BioRAGent @ 3a4c66f91b50" in text
    html = (report / "index.html").read_text()
    assert 'id="question-bank"' in html
    # GeneTuring and GeneTuring 2025 share task names: each run's count is its own.
    shards = (tmp_path / "results" / "runs" / "oracle" / "no-tools").glob("*/*.jsonl.zst")
    records = sum(len(read_records(p)) for p in shards)
    assert records >= 9 + 16 + 15 - 5 and f">oracle / no-tools ({records})</option>" in html
    # The QA leaderboard keeps to GeneTuring and GeneHop; leaderboard.csv holds every
    # board's rows, each by its board's metric and scorer.
    every_board = read_csv(report / "leaderboard.csv")
    assert {r["benchmark"] for r in every_board if r["metric"] == "extracted"} == {"geneturing"}
    assert {r["benchmark"] for r in every_board if r["metric"] == "primary"} >= {"bioragent"}
    assert all(r["scorer"] and r["asked"] and r["coverage"] for r in every_board)
    # LAB-Bench with and without tools: its leaderboard with intervals, who wins (tools
    # against its no-tools baseline) and the protocols side by side with their test.
    seqqa = board["oracle / lab-bench-ncbi", "labbench-seqqa"]
    assert int(seqqa["scored"]) >= 10 and seqqa["ci_low"] and seqqa["ci_high"]
    (tools,) = [r for r in read_csv(report / "headline.csv") if r["benchmark"] == "labbench-seqqa"]
    assert {tools["run_a"], tools["run_b"]} == {"oracle / lab-bench-ncbi", "oracle / lab-bench"}
    assert int(tools["n"]) >= 10 and -1 <= float(tools["ci_low"]) <= float(tools["ci_high"]) <= 1
    protocols = [
        r for r in read_csv(report / "protocols.csv") if r["benchmark"] == "labbench-seqqa"
    ]
    assert {r["protocol"] for r in protocols} == {"function calling", "no tools"}
    assert all(r["ci_low"] for r in protocols)
    tests = read_csv(report / "protocol_tests.csv")
    assert [r["benchmark"] for r in tests] == ["labbench-seqqa"]
    for row in [*read_csv(report / "headline.csv"), *read_csv(report / "leaderboard.csv")]:
        if row["ci_low"]:  # within what a score (or a difference) can be, never a point on few
            low, high = float(row["ci_low"]), float(row["ci_high"])
            assert (-1 if "difference" in row else 0) <= low <= high <= 1, row
            assert int(row.get("n") or row.get("answers") or 99) >= 10 or low < high, row
    assert "Who wins" in html and "labbench-seqqa" in html


def test_plan_lists_the_new_tasks_with_their_counts_and_the_overlap(mirror, tmp_path):
    config = Path(__file__).parents[1] / "config" / "examples" / "question-bank.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "helixbench", "plan", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "HELIXBENCH_MIRROR": str(mirror)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    counts = {}
    for line in lines:
        fields = line.split("\t")
        if len(fields) >= 4 and fields[0] == "":
            counts[fields[1], fields[2]] = int(fields[3].split()[0])
    assert sum(n for (b, _), n in counts.items() if b == "geneturing2025") == 1600
    assert sum(n for (b, _), n in counts.items() if b == "bioragent") == 899
    assert len({t for b, t in counts if b == "geneturing2025"}) == 16
    assert len({t for b, t in counts if b == "bioragent"}) == 15
    labbench = {b: n for (b, _), n in counts.items() if b.startswith("labbench")}
    assert {b: sum(n for (c, _), n in counts.items() if c == b) for b in labbench} == {
        "labbench-dbqa": 520,
        "labbench-seqqa": 600,
        "labbench-cloning": 33,
    }
    overlap = [line for line in lines if line.startswith("overlap: ")]
    assert overlap == [
        "overlap: geneturing2025: 1600 questions; shared with GeneTuring (2023) or GeneHop: "
        "450 rephrased; new: 1150; differing golds: 1",
        "overlap: bioragent: 899 questions; shared with GeneTuring (2023) or GeneHop: "
        "100 instruction dropped, 250 verbatim; new: 549; differing golds: 13",
        # No LAB-Bench question repeats one of GeneTuring's or GeneHop's.
        *(
            f"overlap: {name}: {n} questions; shared with GeneTuring (2023) or GeneHop: "
            f"none; new: {n}; differing golds: 0"
            for name, n in (("labbench-dbqa", 520), ("labbench-seqqa", 600))
        ),
        "overlap: labbench-cloning: 33 questions; shared with GeneTuring (2023) or GeneHop: "
        "none; new: 33; differing golds: 0",
    ]
    assert yaml.safe_load(config.read_text())["runs"]
