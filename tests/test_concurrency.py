"""Many questions in flight in one run job, against a loopback server that takes time:
the records do not depend on scheduling, the server's limit holds across processes,
the window adapts to 429s without losing a question, and retries are ours alone."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from helixbench.benchmarks import local_question_table
from helixbench.config import build_plan
from helixbench.datasets.questions import write_questions
from helixbench.loopback.openai import OpenAIServer, OpenAIServerState
from helixbench.models import CompletionRequest, ModelError, create_model
from helixbench.models.limits import RequestLimit
from helixbench.run.shard import run_shard
from helixbench.transcripts import read_records, without_timings


@pytest.fixture(scope="module")
def questions(mirror, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("questions") / "questions.jsonl"
    write_questions(local_question_table(mirror), path)
    return path


def _run(server, questions, work: Path, concurrency: int, sample: int = 4, **model):
    spec = {**server.chat_model(), "retries": 6, "backoff_s": 0.05, **model}
    config = {
        "benchmarks": ["geneturing"],
        "models": {"served": spec},
        "runs": [{"model": "served", "method": "no-tools", "sample": sample}],
    }
    (run,) = build_plan(config, None).runs
    output = work / "shard.jsonl"
    # The model cache's directory holds the locks: the machine-wide slots.
    serving = {"concurrency": concurrency}  # as the workflow passes it down
    run_shard(run.spec(), 0, questions, output, model_cache=work / "models.sqlite", serving=serving)
    return read_records(output)


def test_16_in_flight_give_the_records_of_one_at_a_time(questions, tmp_path):
    with OpenAIServer(OpenAIServerState(latency_s=0.1)) as server:
        wide = _run(server, questions, tmp_path / "wide", 16)
        assert 8 < server.state.peak_in_flight <= 16  # many at once, never past the limit
        server.state.peak_in_flight = 0
        narrow = _run(server, questions, tmp_path / "narrow", 1)
        assert server.state.peak_in_flight == 1
    assert len(wide) == 36 and [r["question_id"] for r in wide] == [
        r["question_id"] for r in narrow
    ]
    assert [without_timings(r) for r in wide] == [without_timings(r) for r in narrow]


def test_a_server_that_goes_down_mid_shard_stops_it_and_the_rerun_asks_the_rest(
    questions, tmp_path
):
    """16 in flight, then the server fails every call: no question is started once 3
    fail in a row, what was running finishes (recorded where it got an answer), the
    job fails, and the rerun asks exactly the questions not recorded."""
    with OpenAIServer(OpenAIServerState(latency_s=0.05)) as server:
        server.state.faults.extend([None] * 20 + [("500",)] * 100)
        with pytest.raises(ModelError, match="run the workflow again to resume"):
            _run(server, questions, tmp_path, 16, retries=0)
        partial = read_records(tmp_path / "shard.jsonl.partial")
        asked = len(server.state.received)
        assert len(partial) == 20 and asked <= 36  # one call a question: 20 answered
        server.state.faults.clear()
        records = _run(server, questions, tmp_path, 16)
        assert len(records) == 36 and all(r["error"] is None for r in records)
        assert len(server.state.received) - asked == 36 - len(partial)


def test_a_server_that_serves_4_refuses_the_rest_and_no_question_is_lost(questions, tmp_path):
    """8 asked, 4 served at once, 429 above: the window shrinks to what the server
    takes, every question is answered, and the server never had more than 4."""
    state = OpenAIServerState(latency_s=0.1, capacity=4)
    with OpenAIServer(state) as server:
        records = _run(server, questions, tmp_path, 8)
    assert len(records) == 36 and all(r["error"] is None for r in records)
    assert state.refused > 0 and state.peak_in_flight <= 4
    served = sum(p.endswith("completions") for p, _, _ in state.received) - state.refused
    assert served == 36  # a refused call was asked again, never given up


def test_the_limit_holds_across_processes(tmp_path):
    """Two processes' limits (each its own slot files) on one lock directory: together
    never more than the ceiling in flight."""
    limits = [RequestLimit("endpoint-x", 3, tmp_path) for _ in range(2)]
    in_flight, peak, lock = [0], [0], threading.Lock()

    def work(limit):
        for _ in range(5):
            with limit.request():
                with lock:
                    in_flight[0] += 1
                    peak[0] = max(peak[0], in_flight[0])
                time.sleep(0.02)
                with lock:
                    in_flight[0] -= 1

    threads = [threading.Thread(target=work, args=(limits[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 2 <= peak[0] <= 3


def test_retries_are_ours_alone_and_honour_retry_after(tmp_path):
    """The SDK retries nothing: two 429s are two of our retries (after Retry-After),
    three are a transient error after exactly three requests."""
    with OpenAIServer() as server:
        spec = {**server.chat_model(), "retries": 2, "backoff_s": 0.01, "concurrency": 2}
        model = create_model(spec)
        request = CompletionRequest("Q?", (), 8, 0.0, "q", "Q?", 0)
        server.state.faults.extend([("429", 0.3), ("429", 0.3)])
        started = time.perf_counter()
        assert model.complete(request).text == "Answer: Q?"
        assert time.perf_counter() - started >= 0.6
        assert len(server.state.received) == 3
        server.state.faults.extend([("429", 0)] * 3)
        with pytest.raises(ModelError) as failed:
            model.complete(request)
        assert failed.value.transient and len(server.state.received) == 6
        assert model.limit.shrinks >= 1


def test_concurrency_defaults_to_the_servers_slots():
    with OpenAIServer(OpenAIServerState(slots=6)) as server:
        assert create_model(server.chat_model()).max_in_flight == 6
    with OpenAIServer() as server:  # no /props: the documented default
        assert create_model(server.chat_model()).max_in_flight == 16
