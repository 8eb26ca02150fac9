"""Agents in the sandbox (helixbench.gateway.sandbox): agents of other languages and
HTTP clients reach NCBI's public URLs unchanged, through the tool gateway, and
nothing else: every canary attempt is refused and recorded under its own question,
no key is readable, and two questions at once cannot touch each other."""

from __future__ import annotations

import json
import os
import shutil
import threading
from contextlib import contextmanager

import pytest

from helixbench import secrets
from helixbench.gateway import sandbox
from helixbench.loopback.ncbi import NCBIServer
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.agent import Agent, AgentSettings, Gateways
from helixbench.models import create_model
from helixbench.tools.executor import ToolExecutor, ToolSettings

from .conftest import REPO_ROOT

AGENTS = REPO_ROOT / "tests" / "support" / "sandbox_agents"
REAL_KEY = "sk-real-openai-key-that-must-stay-home-0123456789"
NCBI_KEY = "ncbi-key-that-must-stay-home-0123456789"

pytestmark = pytest.mark.skipif(
    bool(sandbox.unavailable()) and not os.environ.get("CI"),
    reason=f"no agent sandbox on this machine: {sandbox.unavailable()}",
)


@contextmanager
def _gateways(tmp_path, monkeypatch):
    """A run job's gateways: a loopback model, NCBI's hosts served live by a loopback
    NCBI (whose replies echo the request, key and all), and a canary listener."""
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    monkeypatch.setenv("NCBI_API_KEY", NCBI_KEY)
    secrets.register_env()
    with NCBIServer() as ncbi, OpenAIServer() as server, NCBIServer() as canary:
        ncbi.state.eutils_rate = None
        settings = {
            "mode": "live",
            "cache": str(tmp_path / "tools.sqlite"),
            "budgets": str(tmp_path / "budgets"),
            "routes": ncbi.routes(),
        }
        executor = ToolExecutor(ToolSettings.from_config(settings))
        model = create_model({**server.chat_model(), "api_key_env": "OPENAI_API_KEY"})
        gateways = Gateways(model, executor, "m")
        try:
            yield gateways, model, canary
        finally:
            gateways.close()


def _ask(gateways, model, command, question_id, canary_port) -> tuple:
    spec = {"command": command, "env": {"CANARY_PORT": str(canary_port)}, "timeout_s": 60}
    agent = Agent(AgentSettings.from_spec(spec), gateways, gateways.workdir)
    result = agent.run(question_id, f"Which gene is {question_id}?", model, None)
    tools = [e.data for e in result.events if e.type == "tool"]
    return result, tools


AGENT_COMMANDS = {
    "python-httpx": ["{python}", str(AGENTS / "probe.py"), "httpx"],
    "python-aiohttp": ["{python}", str(AGENTS / "probe.py"), "aiohttp"],
    "python-mcp": ["{python}", str(AGENTS / "probe.py"), "mcp"],
    "curl": ["sh", str(AGENTS / "probe.sh")],
    "node": ["node", str(AGENTS / "probe.mjs")],
    "java": ["java", str(AGENTS / "Probe.java")],
    "perl": ["perl", str(AGENTS / "probe.pl")],
}


def test_agents_of_any_client_reach_only_the_gateways(tmp_path, monkeypatch):
    """Each agent's NCBI call is routed (its reply from the NCBI behind the tool
    executor) and recorded; its canary attempts (connect, UDP,
    subprocess, a re-exec without the environment) reach nothing and are recorded as
    refused, its foreign lookup as unresolved; no process it can see holds a key."""
    for program in ("node", "java", "perl"):
        if shutil.which(program) is None:
            pytest.fail(f"{program} is not installed (Debian: nodejs, default-jdk-headless, perl)")
    with _gateways(tmp_path, monkeypatch) as (gateways, model, canary):
        for name, command in AGENT_COMMANDS.items():
            question_id = f"Q{name.replace('-', '')}"
            result, tools = _ask(gateways, model, command, question_id, canary.port)
            assert result.error is None, (name, result.events[-1].data["stderr_tail"])
            answer = json.loads(result.answer)
            if name != "python-mcp":
                assert f"term={question_id}" in answer["reply"], name
            routed = [t for t in tools if t["route"] not in ("refused", "unresolved")]
            assert len(routed) == 1 and question_id in routed[0]["url"], (name, tools)
            assert routed[0]["status"] == 200, name
            refused = [t for t in tools if t["url"].endswith(f":{canary.port}")]
            assert refused and all(t["route"] == "refused" for t in refused), (name, tools)
            if name != "python-mcp" and name != "curl":
                assert answer.get("connect_ex", 111) != 0 or answer.get("connected") is False
            if name not in ("curl", "java", "perl"):  # those look up no foreign name
                assert any(t["route"] == "unresolved" for t in tools), (name, tools)
                assert answer.get("resolved") is False, name
            assert REAL_KEY not in result.answer and NCBI_KEY not in result.answer
            if "environ" in answer:  # its own processes only, none of the job's
                assert answer["pids"] <= 6 and "HELIXBENCH_QUESTION_ID" in answer["environ"]
                assert answer["reexec"].strip() == "reexec 111"
        assert canary.state.received == []


def test_two_questions_at_once_see_only_their_own(tmp_path, monkeypatch):
    """Two agents at once: each question's events are its own calls, each sees its
    own folder only (not the other's, not the gateways' sockets)."""
    with _gateways(tmp_path, monkeypatch) as (gateways, model, canary):
        command = ["{python}", str(AGENTS / "probe.py"), "urllib"]
        results = {}

        def ask(question_id):
            results[question_id] = _ask(gateways, model, command, question_id, canary.port)

        threads = [threading.Thread(target=ask, args=(q,)) for q in ("QONE", "QTWO")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    for question_id, (result, tools) in results.items():
        assert result.error is None, result.events[-1].data["stderr_tail"]
        answer = json.loads(result.answer)
        assert f"term={question_id}" in answer["reply"]
        urls = [t["url"] for t in tools if t["route"] not in ("refused", "unresolved")]
        assert len(urls) == 1 and question_id in urls[0]
        assert len(answer["folders"]) == 1  # its own; the other's and the doors are hidden


def test_a_machine_without_namespaces_is_told_the_cause_and_the_fix(monkeypatch):
    """Missing programs name their package; a refused namespace names the policy
    (Ubuntu's AppArmor switch, Docker's seccomp profile) and the cooperative way."""
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sandbox, "SYSTEM_PATH", "/nonexistent")
    said = sandbox.unavailable.__wrapped__()
    assert "install" in said and "nftables" in said and "sandbox: cooperative" in said
    ubuntu = {"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}
    monkeypatch.setattr(sandbox, "_read", ubuntu.get)
    assert "apparmor_restrict_unprivileged_userns=0" in sandbox._cause()
    monkeypatch.setattr(sandbox, "_read", {}.get)
    monkeypatch.setattr(sandbox.os.path, "exists", lambda p: p == "/.dockerenv")
    assert "seccomp=unconfined" in sandbox._cause()
