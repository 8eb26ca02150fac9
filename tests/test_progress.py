"""Progress of run shards: whole lines in the job's log, and ``helixbench status`` over
the working directory's shards, running, stopped or done, without touching them."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import zstandard

from helixbench.benchmarks import local_question_table
from helixbench.config import build_plan
from helixbench.datasets.questions import write_questions
from helixbench.loopback.openai import OpenAIServer
from helixbench.run.progress import (
    ShardProgress,
    format_statuses,
    read_counts,
    shard_statuses,
    sidecar_path,
)
from helixbench.transcripts import partial_path

from .conftest import REPO_ROOT


def _record(qid: str, models: int, tools: int, error: str | None = None) -> dict:
    events = [{"type": "model"}] * models + [{"type": "tool"}] * tools
    return {"question_id": qid, "events": events, "error": error}


def test_progress_lines_are_whole_lines_with_counts_and_an_eta(tmp_path):
    output = tmp_path / "shard-0-of-1.jsonl"
    stream = io.StringIO()
    progress = ShardProgress("m / x shard-0-of-1", output, 4, [_record("a", 2, 1)], stream)
    state = json.loads(sidecar_path(output).read_text())
    assert (state["total"], state["done"], state["resumed_from"]) == (4, 1, 1)
    assert state["pid"] == os.getpid()
    progress.question_done(_record("b", 3, 2, error="numError"))
    progress.question_failed()
    progress.question_done(_record("c", 1, 0))
    progress.close(finished=False)
    text = stream.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].startswith("m / x shard-0-of-1: 1/4 questions (25%), model calls 2,")
    last = lines[-1]
    assert "3/4 questions (75%), model calls 6, tool calls 3, errors 1, 1 failed" in last
    assert "| elapsed 00:00, ETA" in last
    assert sidecar_path(output).exists()  # unfinished: status still reads it
    ShardProgress("m / x", output, 1, [], io.StringIO()).close(finished=True)
    assert not sidecar_path(output).exists()


def test_status_reads_without_touching_a_torn_partial_file(tmp_path):
    runs = tmp_path / "results" / "runs"
    done = runs / "m" / "a" / "0123abcd" / "shard-0-of-2.jsonl.zst"  # (compressed)
    done.parent.mkdir(parents=True)
    text = "".join(json.dumps(_record(q, 1, 0)) + "\n" for q in "xyz")
    done.write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    partial = runs / "m" / "a" / "0123abcd" / "shard-1-of-2.jsonl.partial"
    lines = [json.dumps(_record("p", 2, 3)), json.dumps(_record("q", 1, 1, "tool_error"))]
    torn = ("\n".join(lines) + "\n" + '{"question_id": "r", "ev').encode()
    partial.write_bytes(torn)
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(finished.stdout)  # a process that has exited: its job was killed
    now = time.time()
    state = {
        "total": 5,
        "resumed_from": 0,
        "started_at": now - 20,
        "updated_at": now - 10,
        "pid": dead,
        "host": socket.gethostname(),
    }
    sidecar_path(partial.with_name("shard-1-of-2.jsonl.zst")).write_text(json.dumps(state))
    statuses = {s.shard: s for s in shard_statuses(runs, now=now)}
    assert partial.read_bytes() == torn  # read only: the torn line stays for the job
    assert read_counts(partial).done == 2
    first, second = statuses["0 of 2"], statuses["1 of 2"]
    assert (first.state, first.done, first.total) == ("done", 3, 3)
    assert (second.state, second.done, second.total) == ("stopped", 2, 5)
    assert (second.model_calls, second.tool_calls, second.errors) == (3, 4, 1)
    assert second.s_per_question == 5.0 and second.eta_s is None  # (stopped: no ETA)
    assert round(second.updated_s_ago) == 10


def _status(runs: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "helixbench", "status", "--runs", str(runs), "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {s["run"] + " " + s["shard"]: s for s in json.loads(out)}


def test_status_of_a_running_shard_then_killed_then_resumed(mirror, tmp_path):
    """A real shard against a slow model server: status sees it running with its ETA,
    then stopped after a kill (the partial file untouched), and the resumed job's first
    progress line starts where the killed one stopped."""
    questions = tmp_path / "questions.jsonl"
    write_questions(local_question_table(mirror), questions)
    with OpenAIServer() as llm:
        llm.state.faults.extend([("stall", 0.5)] * 40)  # every reply takes half a second
        config = {
            "benchmarks": ["geneturing"],
            "shards": 1,
            "models": {"llm": llm.chat_model()},
            "runs": [{"model": "llm", "method": "no-tools", "tasks": ["Gene alias"], "sample": 8}],
        }
        run = build_plan(config, mirror).runs[0]
        output = (
            tmp_path
            / "results"
            / "runs"
            / "llm"
            / "no-tools"
            / "0123abcd"
            / "shard-0-of-1.jsonl.zst"
        )
        partial = partial_path(output)
        command = [sys.executable, "-m", "helixbench", "run", "--spec", json.dumps(run.spec())]
        command += ["--shard", "0", "--questions", str(questions), "--out", str(output)]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
        env["HELIXBENCH_SERVING"] = json.dumps({"llm": {"concurrency": 1}})  # one at a time
        with open(tmp_path / "first.log", "w") as log:
            job = subprocess.Popen(command, cwd=tmp_path, stderr=log, env=env)
            deadline = time.time() + 60
            while time.time() < deadline and (
                not partial.exists() or partial.read_bytes().count(b"\n") < 2
            ):
                time.sleep(0.1)
            running = _status(tmp_path / "results" / "runs")["llm / no-tools 0 of 1"]
            before = partial.read_bytes()
            job.send_signal(signal.SIGKILL)
            job.wait(timeout=30)
        assert running["state"] == "running" and running["total"] == 8
        assert 2 <= running["done"] < 8 and running["eta_s"] > 0
        assert running["model_calls"] == running["done"]
        stopped = _status(tmp_path / "results" / "runs")["llm / no-tools 0 of 1"]
        assert stopped["state"] == "stopped" and partial.read_bytes().startswith(before)
        kept = stopped["done"]
        llm.state.faults.clear()
        # The resumed job as the workflow starts it: its log a file of its own, the
        # console (its standard error) sparse progress lines only.
        second_job = [*command, "--log", str(tmp_path / "second.log")]
        console = subprocess.run(
            second_job, cwd=tmp_path, env=env, check=True, timeout=120, capture_output=True
        ).stderr.decode()
    finished = _status(tmp_path / "results" / "runs")["llm / no-tools 0 of 1"]
    assert (finished["state"], finished["done"], finished["total"]) == ("done", 8, 8)
    assert not sidecar_path(output).exists() and not partial.exists()
    first = (tmp_path / "first.log").read_text()
    assert "\r" not in first and "llm / no-tools shard-0-of-1: 0/8 questions (0%)" in first
    second = (tmp_path / "second.log").read_text().splitlines()
    second = [line for line in second if "questions (" in line]
    assert second[0].startswith(f"llm / no-tools shard-0-of-1: {kept}/8 questions")
    assert second[-1].startswith("llm / no-tools shard-0-of-1: 8/8 questions (100%)")
    assert "HTTP Request" not in (tmp_path / "second.log").read_text()  # no line per request
    shown = console.splitlines()
    assert all(line.startswith("[progress] llm / no-tools shard-0-of-1: ") for line in shown)
    assert f"{kept}/8 questions" in shown[0] and "8/8 questions (100%)" in shown[-1]


def test_status_lists_every_planned_shard_started_or_not(tmp_path):
    runs = tmp_path / "results" / "runs"
    done = runs / "m" / "x" / "0123abcd" / "shard-0-of-2.jsonl"
    done.parent.mkdir(parents=True)
    done.write_text(json.dumps(_record("a", 1, 0)) + "\n")
    # (done: an earlier version's uncompressed output, which the shard's job compresses)
    planned = [("m / x", "results/runs/m/x/0123abcd/shard-0-of-2.jsonl.zst")]
    planned += [("m / x", "results/runs/m/x/0123abcd/shard-1-of-2.jsonl.zst")]
    planned += [("n / y", "results/runs/n/y/4567cdef/shard-0-of-1.jsonl.zst")]
    statuses = shard_statuses(runs, planned=planned)
    assert [(s.run, s.shard, s.state) for s in statuses] == [
        ("m / x", "0 of 2", "done"),
        ("m / x", "1 of 2", "not started"),
        ("n / y", "0 of 1", "not started"),
    ]
    assert "3 shard(s): 1 done, 0 running, 0 stopped, 2 not started" in format_statuses(statuses)


def test_the_eta_leaves_out_the_first_questions_warm_up(tmp_path):
    """The first question also loads the model (36 s here); the ETA and the rate come
    from the questions after it (2 in 10 s: 5 s each), so 7 left take 35 s, not the
    107 s that 3 questions in 46 s would say."""
    progress = ShardProgress("m / x", tmp_path / "shard-0-of-1.jsonl", 10, [], io.StringIO())
    progress.started, progress.first_at = 100.0, 136.0
    progress.answered = progress.counts.done = 1
    assert progress.pace(136.0) == "elapsed 00:36, ETA ?"
    progress.answered = progress.counts.done = 3
    assert progress.pace(146.0) == "elapsed 00:46, ETA 00:35, 5.0 s/question"
    progress.answered = progress.counts.done = 10
    assert progress.pace(3700.0) == "elapsed 1:00:00, ETA 00:00, 360.0 s/question"
