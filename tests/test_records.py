"""Shard files: append, resume after a kill, finalize."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from helixbench.benchmarks import load_benchmark, write_questions
from helixbench.plan import build_plan
from helixbench.records import ShardWriter, read_records, without_timings


def test_torn_and_duplicate_lines_are_recovered(tmp_path):
    out = tmp_path / "shard.jsonl"
    partial = out.with_name(out.name + ".partial")
    lines = [
        json.dumps({"question_id": q, "events": [], "run_key": "k1"}) + "\n"
        for q in ("a", "b", "a")
    ]
    partial.write_text("".join(lines) + '{"question_id": "c", "ev')
    writer = ShardWriter(out, "k1")
    assert [r["question_id"] for r in writer.records] == ["a", "b"]
    assert partial.read_text() == lines[0] + lines[1] + lines[2]  # torn tail cut off
    writer.append({"question_id": "c", "events": []})
    writer.finalize(["c", "b", "a"])
    assert [r["question_id"] for r in read_records(out)] == ["c", "b", "a"]
    assert not partial.exists()
    assert {r["run_key"] for r in read_records(out)} == {"k1"}


def test_partial_from_another_configuration_is_set_aside(tmp_path):
    out = tmp_path / "shard.jsonl"
    partial = out.with_name(out.name + ".partial")
    old = json.dumps({"question_id": "a", "events": [], "run_key": "old"}) + "\n"
    partial.write_text(old)
    writer = ShardWriter(out, "new")
    assert writer.records == [] and not partial.exists()
    assert partial.with_name(partial.name + ".stale").read_text() == old


# Runs one shard in a child process whose writer sleeps after each record, so
# the test can SIGKILL it mid-shard; the production code is unchanged.
SLOW_CHILD = """
import sys, time
import helixbench.records as records
append = records.ShardWriter.append
def slow_append(self, record):
    append(self, record)
    time.sleep(0.05)
records.ShardWriter.append = slow_append
from helixbench.cli import main
main(sys.argv[1:])
"""


def _shard_command(spec, shard, questions, out):
    return [
        "run",
        "--spec",
        json.dumps(spec),
        "--shard",
        str(shard),
        "--questions",
        str(questions),
        "--out",
        str(out),
    ]


def test_sigkill_mid_shard_then_resume_gives_identical_records(upstream, mirror, tmp_path):
    """A shard of a run over two tasks (so the shard mixes them) killed and resumed."""
    from helixbench.cli import main

    questions = tmp_path / "questions.jsonl"
    write_questions(load_benchmark("geneturing", upstream("data/geneturing.json")), questions)
    config = {
        "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
        "runs": [
            {
                "model": "codex",
                "method": "genegpt-slim",
                "benchmarks": ["geneturing"],
                "tasks": ["gene-alias", "gene-name-conversion"],
            }
        ],
        "shards": 2,
    }
    run = build_plan(config, mirror).find("codex", "genegpt-slim")
    spec = run.spec()
    for task, task_spec in zip(run.tasks, spec["tasks"], strict=True):
        # The job's inputs, made here as the workflow would: the recorded file and
        # the demonstration snapshot extracted from it.
        task_spec["recording"] = str(upstream(task.recorded.file.path))
        task_spec["snapshot"] = str(tmp_path / f"{task.task_slug}.snapshot.json")
        main(
            [
                "snapshot",
                "--recording",
                task_spec["recording"],
                "--recording-name",
                "genegpt-2023",
                "--url",
                task.recorded.file.url,
                "--mask",
                "001001",
                "--out",
                task_spec["snapshot"],
            ]
        )

    reference = tmp_path / "reference" / "shard.jsonl"
    main(_shard_command(spec, 1, questions, reference))

    killed = tmp_path / "killed" / "shard.jsonl"
    partial = killed.with_name(killed.name + ".partial")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SLOW_CHILD,
            *_shard_command(spec, 1, questions, killed),
        ],
        env=env,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        if partial.exists() and partial.read_text().count("\n") >= 8:
            break
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert not killed.exists()  # the output appears only when the shard is complete
    done_before = partial.read_text().count("\n")
    assert 8 <= done_before < 50

    main(_shard_command(spec, 1, questions, killed))
    got, want = read_records(killed), read_records(reference)
    assert len(got) == len(want) == 50
    assert len({r["question_id"] for r in got}) == 50
    assert {r["task"] for r in got} == {"Gene alias", "Gene name conversion"}
    assert [without_timings(r) for r in got] == [without_timings(r) for r in want]
