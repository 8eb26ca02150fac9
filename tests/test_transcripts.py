"""Shard files: append, resume after a kill, finalize."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import zstandard

from helixbench.config import build_plan
from helixbench.datasets.questions import load_task_dict, write_questions
from helixbench.errors import DataError
from helixbench.run.progress import read_counts
from helixbench.transcripts import ShardWriter, partial_path, read_records, without_timings


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


def test_a_finished_shard_is_compressed_and_every_reader_inflates_it(tmp_path):
    """The declared output (.jsonl.zst) holds the records zstd-compressed, about a tenth
    of the lines' size; read_records and status read it as text; a file cut short is an
    error naming it; and an earlier version's uncompressed output resumes the shard (no
    question asked again) and is replaced by the compressed one."""
    out = tmp_path / "shard-0-of-1.jsonl.zst"
    assert partial_path(out).name == "shard-0-of-1.jsonl.partial"
    writer = ShardWriter(out, "k1")
    records = [
        {"question_id": f"q{i}", "answer": f"Answer: BRCA{i % 3}", "events": [], "wall_s": 1.0}
        for i in range(200)
    ]
    for record in records:
        writer.append(record)
    writer.finalize([r["question_id"] for r in records])
    lines = "".join(json.dumps({**r, "run_key": "k1"}) + "\n" for r in records).encode()
    data = out.read_bytes()
    assert data.startswith(b"\x28\xb5\x2f\xfd") and len(data) < len(lines) / 8
    assert zstandard.ZstdDecompressor().decompress(data) == lines
    assert read_records(out) == [{**r, "run_key": "k1"} for r in records]
    assert read_counts(out).done == 200

    (tmp_path / "cut").mkdir()
    cut = tmp_path / "cut" / out.name
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=f"{cut}: a zstd stream cut short"):
        read_records(cut)

    legacy = tmp_path / "legacy" / "shard-0-of-1.jsonl"
    legacy.parent.mkdir()
    legacy.write_bytes(lines)
    resumed = ShardWriter(legacy.with_name(legacy.name + ".zst"), "k1")
    assert resumed.done == {r["question_id"] for r in records} and not legacy.exists()
    resumed.finalize([r["question_id"] for r in records])
    assert read_records(legacy.with_name(legacy.name + ".zst")) == read_records(out)


# Runs one shard in a child process whose writer sleeps after each record, so
# the test can SIGKILL it mid-shard; the production code is unchanged.
SLOW_CHILD = """
import sys, time
import helixbench.transcripts as records
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
    write_questions(load_task_dict("geneturing", upstream("data/geneturing.json")), questions)
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
        # The job's inputs, fetched here as the workflow would: the recorded file and
        # the other files of its recorded run (its loop variant is read off them all).
        task_spec["recording"] = str(upstream(task.recorded.file.path))
        task_spec["recording_group"] = [str(upstream(r.file.path)) for r in task.recorded_group]
        assert task_spec["snapshot_from_recording"]

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


def _loopback_shard(upstream, mirror, tmp_path, server, sample=8, **model):
    """A shard spec of GeneGPT-slim on ``sample`` Gene alias questions with a model on
    the loopback OpenAI server, and the questions file; the demonstration snapshot
    (genegpt-2023's) is made here as the workflow would."""
    from helixbench.methods.genegpt import recorded_snapshot
    from helixbench.sources.recordings import load_recording, recorded_header, snapshot_run

    questions = tmp_path / "questions.jsonl"
    write_questions(load_task_dict("geneturing", upstream("data/geneturing.json")), questions)
    spec_of_model = {"backend": "openai", "model": "m", "base_url": server.base_url}
    config = {
        "models": {"local": {**spec_of_model, "api_key_env": None, "retries": 0, **model}},
        "runs": [
            {"model": "local", "method": "genegpt-slim", "tasks": ["gene-alias"], "sample": sample}
        ],
        "benchmarks": ["geneturing"],
    }
    spec = build_plan(config, mirror).find("local", "genegpt-slim").spec()
    source = snapshot_run("genegpt-2023")
    header = recorded_header(load_recording(upstream(source.file.path)))
    recorded_snapshot(header, "111111", {"kind": "recorded"}).save(tmp_path / "snapshot.json")
    spec["tasks"][0]["snapshot"] = str(tmp_path / "snapshot.json")
    return spec, questions


def test_a_server_that_goes_down_leaves_no_final_record_and_the_rerun_resumes(
    upstream, mirror, tmp_path, monkeypatch
):
    """The model server fails after 4 questions: the shard stops after 3 transient
    failures in a row (the job fails), keeps the 4 records, and the rerun asks the
    server for exactly the questions that failed and the rest."""
    from helixbench.cli import main
    from helixbench.loopback.openai import OpenAIServer

    monkeypatch.chdir(tmp_path)
    # One question at a time, so that the failures come in a known order (many in
    # flight: tests/test_concurrency.py).
    monkeypatch.setenv("HELIXBENCH_SERVING", json.dumps({"local": {"concurrency": 1}}))
    with OpenAIServer() as server:
        spec, questions = _loopback_shard(upstream, mirror, tmp_path, server)
        out = tmp_path / "shard.jsonl"
        # Each question asks once (the echo answers "Answer: ..."): 4 answers, then 500s.
        server.state.faults.extend([None] * 4 + [("500",)] * 20)
        with pytest.raises(SystemExit) as failed:
            main(_shard_command(spec, 0, questions, out))
        assert failed.value.code == 1
        assert not out.exists()
        partial = out.with_name(out.name + ".partial")
        assert len(read_records(partial)) == 4
        assert len(server.state.received) == 7  # 4 answered, then 3 failures in a row
        server.state.faults.clear()
        main(_shard_command(spec, 0, questions, out))
        records = read_records(out)
        assert len(records) == 8 and all(r["error"] is None for r in records)
        assert len(server.state.received) == 7 + 4  # only the 4 questions not recorded


def test_a_key_the_server_repeats_back_is_kept_nowhere(
    upstream, mirror, tmp_path, monkeypatch, capsys
):
    """A 401 body that quotes the API key: the run records a model_error without it,
    and no file the run writes, and no log line, holds it."""
    from helixbench.cli import main
    from helixbench.loopback.openai import OpenAIServer

    key = "sk-proj-REPEATED0123456789"
    monkeypatch.setenv("HELIXBENCH_TEST_KEY", key)
    monkeypatch.chdir(tmp_path)
    with OpenAIServer() as server:
        spec, questions = _loopback_shard(
            upstream, mirror, tmp_path, server, sample=2, api_key_env="HELIXBENCH_TEST_KEY"
        )
        body = json.dumps(
            {"error": {"message": f"Incorrect API key provided: {key}.", "code": "invalid_api_key"}}
        )
        server.state.faults.extend([("raw", 401, body.encode())] * 2)
        out = tmp_path / "shard.jsonl"
        main(
            [*_shard_command(spec, 0, questions, out), "--model-cache", str(tmp_path / "m.sqlite")]
        )
        assert server.state.received[0][2]["authorization"] == f"Bearer {key}"
    records = read_records(out)
    assert [r["error"] for r in records] == ["model_error", "model_error"]
    assert "Incorrect API key provided: ***" in records[0]["events"][0]["data"]["error"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    logged = capsys.readouterr()
    assert key not in logged.out + logged.err


def test_records_never_hold_a_registered_secret(tmp_path):
    from helixbench import secrets

    secrets.register("tok-SHARDWRITER-0123456789")
    out = tmp_path / "shard.jsonl"
    writer = ShardWriter(out, "k")
    event = {"type": "tool", "data": {"rendered": "b'echo tok-SHARDWRITER-0123456789'"}}
    writer.append({"question_id": "a", "events": [event]})
    writer.finalize(["a"])
    assert b"tok-SHARDWRITER" not in out.read_bytes()
    assert read_records(out)[0]["events"][0]["data"]["rendered"] == "b'echo ***'"


def test_a_record_the_report_cannot_sum_is_its_questions_error(tmp_path):
    """A count that is a string, a NaN, a number past any real one, an event that is not
    one: that question reads as ``record_invalid`` with no events; the others as written;
    the agents table sums them all."""
    from helixbench.report.tables.operations import agent_table

    def record(question, **data):
        event = {"type": "tool", "index": 0, "data": {"route": "refused", **data}}
        return {"question_id": question, "answer": "x", "error": None, "wall_s": 1.0,
                "events": [event]}  # fmt: skip

    bad = [
        record("string", count="9" * 5000),
        record("nan", seconds=float("nan")),
        record("huge", count=10**40),
        {**record("not-an-event"), "events": ["x"]},
        record("routes", routes={"a": "many"}),
    ]
    good = record("good", count=3, error="refused: 3 connections to x:1")
    path = tmp_path / "shard.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*bad, good]))
    read = {r["question_id"]: r for r in read_records(path)}
    for name in ("string", "nan", "huge", "not-an-event", "routes"):
        assert read[name]["error"].startswith("record_invalid: ") and read[name]["events"] == []
        assert read[name]["answer"] is None
    assert read["good"] == good
    plan = build_plan(
        {
            "benchmarks": ["geneturing"],
            "models": {"m": {"backend": "openai", "model": "x", "base_url": "http://h/v1"}},
            "methods": {"a": {"kind": "agent", "command": ["sh", "x.sh"]}},
            "runs": [{"model": "m", "method": "a", "tasks": ["Gene alias"]}],
        },
        None,
    )
    (task,) = plan.tasks
    runner = {"type": "agent", "index": 0, "data": {"runner": {"sleep": {"asked_s": "soon"}}}}
    odd = {**good, "question_id": "odd", "events": [runner]}
    (row,) = agent_table(plan, {task: [*read.values(), odd]}).to_dict("records")
    assert row["questions"] == 7 and row["refused"] == 3 and row["sleep_asked_s"] == 0.0
