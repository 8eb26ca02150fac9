"""``kind: agent``: an agent of someone else's (tests/support/agent.py: the openai
client and urllib to NCBI's public URLs) answers GeneTuring questions unchanged behind
the model and tool gateways, offline; and the gateways' routes on their own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from helixbench.benchmarks import local_question_table
from helixbench.config import build_plan
from helixbench.datasets.questions import write_questions
from helixbench.datasets.upstream import GENEGPT_COMMIT
from helixbench.errors import ConfigError
from helixbench.gateway import Sessions
from helixbench.gateway.model_api import ModelGateway
from helixbench.loopback.ncbi import NCBIServer
from helixbench.loopback.openai import OpenAIServer
from helixbench.models import create_model
from helixbench.report.tables.operations import agent_table
from helixbench.run.shard import run_shard
from helixbench.sources.recordings import (
    load_recording,
    local_recorded_files,
    recorded_tool_replies,
)
from helixbench.tools import SETTINGS_ENV
from helixbench.tools.cache import ReplyCache
from helixbench.tools.seed import seed_from_recordings
from helixbench.transcripts import read_records

from .conftest import REPO_ROOT

AGENT = str(REPO_ROOT / "tests" / "support" / "agent.py")


@pytest.fixture(scope="module")
def seeded(mirror, tmp_path_factory):
    """The question table, a tool cache seeded as the workflow seeds it (mask 001001),
    and the agent's script: for each Gene alias question, the URLs Codex called and
    its recorded answer, derived from the recorded file."""
    root = tmp_path_factory.mktemp("seeded")
    questions = root / "questions.jsonl"
    write_questions(local_question_table(mirror), questions)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        local = local_recorded_files("genegpt-2023", "geneturing", "001001", mirror, ["Gene alias"])
        files = [path for _, path in local]
        seed_from_recordings("genegpt-2023", ReplyCache(root / "tools.sqlite"), files)
    finally:
        os.chdir(cwd)
    script = {}
    for item in load_recording(root / files[0]):
        urls = [u for u, reply in recorded_tool_replies(item).values() if reply is not None]
        script[item.question] = {"urls": urls, "answer": item.final_text}
    (root / "script.json").write_text(json.dumps(script))
    return root, questions, script


def _agent_run(server, seeded, work: Path, monkeypatch, sample=4, concurrency=4, **method):
    root, questions, _ = seeded
    monkeypatch.setenv(
        SETTINGS_ENV,
        json.dumps({"cache": str(root / "tools.sqlite"), "budgets": str(work / "budgets")}),
    )
    spec = {
        "kind": "agent",
        "command": ["{python}", AGENT],
        "env": {"TEST_AGENT_SCRIPT": str(root / "script.json")},
        "timeout_s": 60,
        **method,
    }
    config = {
        "benchmarks": ["geneturing"],
        "models": {"served": {**server.chat_model(), "retries": 0}},
        "methods": {"mine": spec},
        "runs": [{"model": "served", "method": "mine", "tasks": ["Gene alias"], "sample": sample}],
    }
    plan = build_plan(config, None)
    (run,) = plan.runs
    output = work / "shard.jsonl"
    run_shard(
        run.spec(),
        0,
        questions,
        output,
        model_cache=work / "models.sqlite",
        serving={"concurrency": concurrency},
    )
    return read_records(output), plan


def test_an_unchanged_agent_answers_through_both_gateways_offline(seeded, tmp_path, monkeypatch):
    """Codex's URL choices, replayed by the agent through urllib to the public hosts,
    get the recorded replies (every call a cache hit, offline) and its recorded answers
    come back as the replay's; a rerun asks the model server nothing."""
    _, _, script = seeded
    with OpenAIServer() as server:
        records, plan = _agent_run(server, seeded, tmp_path, monkeypatch)
        asked = len(server.state.received)
        (tmp_path / "shard.jsonl").unlink()  # the same questions again, the caches kept
        again, _ = _agent_run(server, seeded, tmp_path, monkeypatch)
        assert len(server.state.received) == asked  # the response cache answered all
    assert len(records) == 4
    for record in records:
        assert record["error"] is None, record["events"][-1]["data"]
        tools = [e["data"] for e in record["events"] if e["type"] == "tool"]
        models = [e["data"] for e in record["events"] if e["type"] == "model"]
        (agent,) = [e["data"] for e in record["events"] if e["type"] == "agent"]
        assert tools and all(t["cache"] == "hit" and t["error"] is None for t in tools)
        assert len(models) == 1 and models[0]["cache"] == "miss"
        assert agent["routes"]["/v1/chat/completions"] == 1
        assert agent["routes"]["eutils.ncbi.nlm.nih.gov"] == len(tools)
        assert "OPENAI_API_KEY" not in agent["stderr_tail"]
    assert not any("header" in r for r in records)  # no prompt header: none logged
    texts = {r["question_id"]: r["answer"] for r in records}
    assert sorted(texts.values()) == sorted(
        script[q]["answer"] for q in script if any(script[q]["answer"] == a for a in texts.values())
    )
    assert [r["answer"] for r in again] == [r["answer"] for r in records]
    assert all(
        e["data"]["cache"] == "hit" for r in again for e in r["events"] if e["type"] == "model"
    )
    (task,) = plan.tasks  # the report's agents table
    (row,) = agent_table(plan, {task: records}).to_dict("records")
    assert (row["questions"], row["answered"], row["model_calls"]) == (4, 4, 4)
    assert row["tool_hits"] == row["tool_calls"] > 0 and row["refused"] == 0
    assert "/v1/chat/completions 4" in row["routes"] and "eutils.ncbi.nlm.nih.gov" in row["routes"]


@pytest.mark.parametrize(
    "mode, error, seen",
    [
        ("hang", "agent_timeout", None),
        ("crash", "agent_error", "the agent fell over"),
        ("garbage", "agent_no_answer", None),
        ("deep", "agent_no_answer", None),
        ("huge", "agent_answer_too_long", None),
    ],
)
def test_an_agent_that_misbehaves_is_a_recorded_error_and_the_shard_goes_on(
    seeded, tmp_path, monkeypatch, mode, error, seen
):
    with OpenAIServer() as server:
        records, _ = _agent_run(
            server,
            seeded,
            tmp_path,
            monkeypatch,
            sample=1,
            timeout_s=5 if mode == "hang" else 60,
            env={"TEST_AGENT_MODE": mode},
        )
    assert [r["error"] for r in records] == [error]
    if seen:
        assert seen in records[0]["events"][-1]["data"]["stderr_tail"]


@pytest.mark.parametrize("sandbox", ["isolated", "cooperative"])
def test_a_foreign_host_is_refused_recorded_and_nothing_leaves(
    seeded, tmp_path, monkeypatch, sandbox
):
    """In the sandbox the foreign name does not resolve and the socket is refused; in
    the cooperative fallback the sitecustomize refuses both; either way both are the
    question's events. A cooperative run is marked unsandboxed where its scores show."""
    with NCBIServer() as canary, OpenAIServer() as server:
        records, plan = _agent_run(
            server,
            seeded,
            tmp_path,
            monkeypatch,
            sample=1,
            env={"TEST_AGENT_MODE": "foreign", "TEST_AGENT_CANARY": str(canary.port)},
            sandbox=sandbox,
        )
        assert canary.state.received == []
    (record,) = records
    refused = [e["data"] for e in record["events"] if e["type"] == "tool" and e["data"]["error"]]
    assert any("example.org" in r["url"] and "allowlist" in r["error"] for r in refused)
    assert any(r["url"] == f"socket:127.0.0.1:{canary.port}" for r in refused)
    assert record["error"] is None  # the agent went on and answered
    (task,) = plan.tasks
    (row,) = agent_table(plan, {task: records}).to_dict("records")
    assert row["sandbox"] == sandbox and row["refused"] >= 1
    assert task.label.endswith("[unsandboxed]") == (sandbox == "cooperative")
    assert row["unresolved"] == (1 if sandbox == "isolated" else 0)


def test_a_long_lived_agent_killed_mid_shard_resumes(seeded, tmp_path, monkeypatch):
    """One process for the shard, questions as JSON lines; the run job killed after two
    records; the rerun answers the rest and asks nothing twice."""
    root, questions, _ = seeded
    with OpenAIServer() as server:
        server.state.latency_s = 0.3
        spec = {
            "kind": "agent",
            "command": ["{python}", AGENT, "--long-lived"],
            "mode": "long-lived",
            "env": {"TEST_AGENT_SCRIPT": str(root / "script.json")},
        }
        config = {
            "benchmarks": ["geneturing"],
            "models": {"served": server.chat_model()},
            "methods": {"mine": spec},
            "runs": [{"model": "served", "method": "mine", "tasks": ["Gene alias"], "sample": 6}],
        }
        (run,) = build_plan(config, None).runs
        output = tmp_path / "shard.jsonl"
        partial = output.with_name(output.name + ".partial")
        command = [sys.executable, "-m", "helixbench", "run", "--spec", json.dumps(run.spec())]
        command += ["--shard", "0", "--questions", str(questions), "--out", str(output)]
        command += ["--model-cache", str(tmp_path / "models.sqlite")]
        tools = {"cache": str(root / "tools.sqlite"), "budgets": str(tmp_path / "b")}
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src"), SETTINGS_ENV: json.dumps(tools)}
        job = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline and (
            not partial.exists() or partial.read_bytes().count(b"\n") < 2
        ):
            time.sleep(0.05)
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
        kept = len(read_records(partial))
        asked = len(server.state.received)
        subprocess.run(command, env=env, check=True, timeout=120, stderr=subprocess.DEVNULL)
        records = read_records(output)
        assert len(records) == 6 and all(r["error"] is None for r in records)
        assert len(server.state.received) - asked <= 6 - kept + 1  # one in flight at the kill
    modes = {e["data"]["mode"] for r in records for e in r["events"] if e["type"] == "agent"}
    assert modes == {"long-lived"}


@contextmanager
def _model_gateway(served_name: str):
    """A loopback model server, one question's session and the model gateway in front."""
    with OpenAIServer() as server:
        sessions = Sessions()
        session = sessions.open("q1", "Q?", {"max_model_calls": 5, "max_tool_calls": 5})
        model = create_model(server.chat_model())
        with ModelGateway(model, sessions, served_name) as gateway:
            yield server, session, gateway


def test_the_model_gateways_routes(tmp_path):
    """Chat with tools, the legacy functions answered in kind, legacy completions, the
    Azure deployment route of openai<1, /v1/models; an unknown key is refused."""
    with _model_gateway("code-davinci-002") as (server, session, gateway):
        headers = {"Authorization": f"Bearer {session.token}"}
        listed = requests.get(f"{gateway.base_url}/models", headers=headers).json()
        assert listed["data"][0]["id"] == "code-davinci-002"
        server.state.script.append({"tool_calls": [("esearch", {"db": "gene"})]})
        functions = [{"name": "esearch", "parameters": {"type": "object"}}]
        body = {"messages": [{"role": "user", "content": "Q?"}], "functions": functions}
        url = f"{gateway.base}/openai/deployments/gpt35/chat/completions?api-version=2023-05-15"
        reply = requests.post(url, json=body, headers={"api-key": session.token}).json()
        message = reply["choices"][0]["message"]
        assert message["function_call"]["name"] == "esearch"
        assert reply["choices"][0]["finish_reason"] == "function_call"
        # the tools the server got were today's form of the legacy functions
        assert server.state.received[-1][1]["tools"][0]["function"]["name"] == "esearch"
        done = requests.post(
            f"{gateway.base_url}/completions",
            json={"prompt": "Question: x\n", "stop": ["->"]},
            headers=headers,
        ).json()
        assert done["object"] == "text_completion" and done["choices"][0]["text"]
        refused = requests.post(f"{gateway.base_url}/completions", json={"prompt": "x"}, headers={})
        assert refused.status_code == 401
        assert [e.data["route"] for e in session.events] == [
            "/openai/deployments/gpt35/chat/completions",
            "/v1/completions",
        ]


def test_an_mcp_client_lists_and_calls_ncbis_functions_through_the_gateway(seeded, tmp_path):
    """The mcp SDK's own client, over streamable HTTP: the five functions, a call that
    asks what Codex asked answered from the seeded cache, a bad call refused alike."""
    import asyncio

    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from helixbench.gateway.mcp_tools import MCPGateway
    from helixbench.tools.executor import ToolExecutor, ToolSettings
    from helixbench.tools.functions import NCBIFunctions, call_of_url

    root, _, script = seeded
    url = next(u for entry in script.values() for u in entry["urls"] if "esearch" in u)
    name, arguments = call_of_url(url)
    settings = {"mode": "offline", "cache": str(root / "tools.sqlite"), "budgets": str(tmp_path)}
    functions = NCBIFunctions(ToolExecutor(ToolSettings.from_config(settings)))
    sessions = Sessions()
    session = sessions.open("q1", "Q?", {"max_model_calls": 5, "max_tool_calls": 5})

    async def use(gateway):
        async with streamable_http_client(gateway.url(session.token)) as streams:
            async with ClientSession(streams[0], streams[1]) as client:
                await client.initialize()
                listed = await client.list_tools()
                good = await client.call_tool(name, arguments)
                bad = await client.call_tool("efetch", {"db": "gene", "id": "1/../x"})
                return [t.name for t in listed.tools], good, bad

    with MCPGateway(functions, sessions) as gateway:
        names, good, bad = asyncio.run(use(gateway))
    assert names == ["esearch", "efetch", "esummary", "elink", "blast"]
    assert good.content[0].text.startswith("{") and not good.is_error
    assert bad.content[0].text.startswith("Error: id: record ids")
    calls = [e.data for e in session.events]
    assert [c["route"] for c in calls] == [f"mcp:{name}", "mcp:efetch"]
    assert calls[0]["cache"] == "hit" and calls[1]["requests"] == []


def test_the_tool_gateway_reads_a_public_url_from_each_form():
    from helixbench.gateway.tool_api import public_url

    assert public_url("/eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene") == (
        None,
        "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene",
    )
    assert public_url("/s/hb-agent-1/blast/Blast.cgi?CMD=Put") == (
        "hb-agent-1",
        "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?CMD=Put",
    )
    assert public_url("/Enrichr/addList")[1] == "https://maayanlab.cloud/Enrichr/addList"
    assert public_url("/gprofiler/api/gost/profile/")[1].startswith("https://biit.cs.ut.ee/")
    assert public_url("/example.org/x")[1] == "https://example.org/x"  # refused downstream
    assert public_url("/nothing-here") == (None, None)


def test_a_malformed_model_request_is_a_400_recorded_and_counted_once():
    with _model_gateway("gpt") as (server, session, gateway):
        headers = {"Authorization": f"Bearer {session.token}"}
        chat = f"{gateway.base_url}/chat/completions"
        for body in ([], {"messages": "hello"}, {"messages": [], "max_tokens": "9"}):
            reply = requests.post(chat, json=body, headers=headers, timeout=10)
            assert reply.status_code == 400, body
            assert reply.json()["error"]["type"] == "invalid_request_error"
        deep = b"[" * 100_000 + b"]" * 100_000
        reply = requests.post(chat, data=deep, headers=headers, timeout=10)
        assert reply.status_code == 400
        assert "not a JSON object" in reply.json()["error"]["message"]
        assert server.state.received == []  # none reached the model
    assert session.model_calls == 4 and len(session.events) == 4
    assert all(e.data["error"].startswith("invalid_request: ") for e in session.events)


class _EchoingExecutor:
    """A tool executor whose every live reply repeats the run's key (as a server that
    echoes ``api_key`` does)."""

    def call(self, request):
        from helixbench.tools import ToolResult

        body = b'{"error": "bad key abcdefgh-secret-key-1234"}'
        return ToolResult(request.url, request.index, body=body, status=200, cache="miss")


def test_the_tool_gateway_records_every_refusal_and_hides_every_key(monkeypatch):
    from helixbench import secrets
    from helixbench.gateway.tool_api import ToolGateway

    monkeypatch.setattr(secrets, "_secrets", {"abcdefgh-secret-key-1234"})
    sessions = Sessions()
    session = sessions.open("q1", "Q?", {"max_model_calls": 5, "max_tool_calls": 50})
    with ToolGateway(_EchoingExecutor(), sessions) as gateway:
        base = f"{gateway.base}/s/{session.token}"
        live = requests.get(f"{base}/entrez/eutils/esearch.fcgi?db=gene&term=x", timeout=10)
        assert live.status_code == 200 and b"secret" not in live.content
        assert b"***" in live.content
        for path in ("/nothing-here", "/localhost:8080/x", "/[::1]/x", "/127.0.0.1:9/x"):
            requests.get(base + path, timeout=10)
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as raw:
            # (past the server's head limit; a sandbox's door answers it 431, recorded:
            # tests/test_sandbox.py)
            raw.sendall(f"GET /s/{session.token}/{'a' * 70_000} HTTP/1.1\r\n\r\n".encode())
            assert b" 400 " in raw.recv(200)
        # Its refusals are its sandbox's first process's to report: an agent's own report
        # is one more path with no service, and records nothing else.
        forged = requests.get(f"{base}/_refused?syscall=x&count=99999", timeout=10)
        assert forged.status_code == 404
    urls = [e.data["url"] for e in session.events]
    assert urls[0].startswith("https://eutils.ncbi.nlm.nih.gov/") and len(urls) == 6
    assert urls[1] == "path:/s/<token>/nothing-here"
    assert urls[5] == "path:/s/<token>/_refused"
    assert not any(e.data.get("count") or e.data["route"] == "syscall" for e in session.events)
    # Each a URL handed to the executor (which refuses what is off its allowlist).
    assert urls[2:5] == ["https://localhost:8080/x", "https://[::1]/x", "https://127.0.0.1:9/x"]


def test_an_agent_shown_the_answer_key_is_a_config_error(tmp_path, monkeypatch, mirror):
    """`paths` that hold or lie in what runs are judged by, and `upstream` files that
    are a benchmark's questions or a recorded run, are refused before anything runs."""
    monkeypatch.chdir(tmp_path)

    def plan(**method):
        config = {
            "benchmarks": ["geneturing"],
            "models": {"m": {"backend": "openai", "model": "x", "base_url": "http://h/v1"}},
            "methods": {"mine": {"kind": "agent", "command": ["sh", "x.sh"], **method}},
            "runs": [{"model": "m", "method": "mine", "tasks": ["Gene alias"]}],
        }
        return build_plan(config, mirror)

    for paths, said in {
        ".": "holds the upstream copies",
        "~/..": "holds",
        "results": "lies in the runs' records",
        str(mirror): "lies in the mirror",
    }.items():
        with pytest.raises(ConfigError, match=f"methods.mine.paths: .*{said}"):
            plan(paths=[paths])
    relpath = "raw.githubusercontent.com/ncbi/GeneGPT/{}/{}"
    for path, said in {
        "data/geneturing.json": "a benchmark's questions and answers",
        "geneturing_results/001001/gene_alias.json": "recorded runs",
    }.items():
        with pytest.raises(ConfigError, match=f"methods.mine.upstream: .*{said}"):
            plan(upstream=[relpath.format(GENEGPT_COMMIT, path)])
    assert plan(paths=["tools", "{runners}"], upstream=[relpath.format(GENEGPT_COMMIT, "main.py")])
