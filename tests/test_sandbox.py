"""Agents in the sandbox (helixbench.gateway.sandbox): agents of other languages and
HTTP clients reach NCBI's public URLs unchanged, through the tool gateway, and
nothing else: every canary attempt is refused and recorded under its own question,
no key is readable, and two questions at once cannot touch each other. Hostile
agents (Python, shell) find no answer key, no secret of the user's home and no
other run in what they can see, meet each cap, and have the system calls the
seccomp filter refuses refused and recorded."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import pwd
import shutil
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from helixbench import secrets
from helixbench.datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO, lookup
from helixbench.errors import ConfigError
from helixbench.gateway import sandbox
from helixbench.gateway.gateways import Gateways
from helixbench.gateway.sandbox import limits, syscalls, view
from helixbench.loopback.ncbi import NCBIServer
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.agent import Agent, AgentSettings
from helixbench.models import create_model
from helixbench.tools.executor import ToolExecutor, ToolSettings
from helixbench.transcripts import read_records

from .conftest import REPO_ROOT, planned_run, run_snakemake

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


def _ask(gateways, model, command, question_id, canary_port, question=None, **spec) -> tuple:
    spec = {"command": command, "env": {"CANARY_PORT": str(canary_port)}, "timeout_s": 60} | spec
    agent = Agent(AgentSettings.from_spec(spec), gateways, gateways.workdir)
    result = agent.run(question_id, question or f"Which gene is {question_id}?", model, None)
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


@pytest.fixture(params=["cgroup", "rlimit"])
def memory_held_by(request, monkeypatch):
    """What holds the sandbox's memory cap: a cgroup (skipped where this user may make
    none) or the rlimits a machine without one falls back to."""
    monkeypatch.setenv("HELIXBENCH_SANDBOX_CGROUPS", "1" if request.param == "cgroup" else "0")
    limits.cgroups.cache_clear()
    if request.param == "cgroup" and limits.cgroups() is None:
        pytest.skip("this machine lets this user make no cgroup (rlimits hold the caps)")
    yield request.param
    limits.cgroups.cache_clear()


def test_agents_of_any_client_reach_only_the_gateways(tmp_path, monkeypatch, memory_held_by):
    """Each agent's NCBI call is routed (its reply from the NCBI behind the tool
    executor) and recorded; its canary attempts (connect, UDP,
    subprocess, a re-exec without the environment) reach nothing and are recorded as
    refused, its foreign lookup as unresolved; no process it can see holds a key. Under
    the default caps held by either, so runtimes that reserve gigabytes of address space
    they never use (Node's fetch, the JVM) start where no cgroup can be made."""
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


def _plant(project: Path, mirror: Path, home: Path) -> tuple[str, list[str]]:
    """A project as a user's looks after runs (the benchmark's file among the upstream
    copies, another run's records, the caches) and a home with secrets; returns a
    question of the benchmark and the secrets planted."""
    file = lookup(GENEGPT_REPO, "data/geneturing.json", GENEGPT_COMMIT)
    copy = project / "resources" / "upstream" / file.relpath
    copy.parent.mkdir(parents=True)
    shutil.copy(mirror / file.relpath, copy)
    question = next(iter(json.loads(copy.read_text())["Gene alias"]))
    other, home_secret, cache = (f"{kind}-{uuid.uuid4().hex}" for kind in ("RUN", "HOME", "CACHE"))
    records = project / "results" / "runs" / "m" / "other" / "shard-0-of-1.jsonl"
    records.parent.mkdir(parents=True)
    records.write_text(json.dumps({"question": question, "answer": other}) + "\n")
    (project / "resources" / "cache").mkdir()
    (project / "resources" / "cache" / "models.sqlite").write_text(cache)
    for name in (".netrc", ".ssh/id_rsa", ".cache/huggingface/token", ".config/gh/hosts.yml"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(f"machine x password {home_secret}\n")
    return question, [other, home_secret, cache]


@pytest.mark.parametrize("agent", ["python", "shell"])
def test_a_hostile_agent_sees_no_answer_key_no_secret_and_no_other_run(
    tmp_path, monkeypatch, mirror, agent
):
    """It searches every file it can read (the system's programs in /usr aside; the
    project, its mirror and the home are not there) for its question's text and the
    planted secrets: found in no file outside its own folder; the user's home, real
    and as $HOME says, reads as absent; it answers its question all the same."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    question, needles = _plant(project, mirror, home)
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    planted = real_home / f".helixbench-test-{uuid.uuid4().hex}"
    planted.write_text(f"real home {needles[1]}\n")
    for place in (project, mirror.resolve(), real_home):
        assert not str(place).startswith("/usr/")
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(home))
    commands = {
        "python": ["/usr/bin/python3", str(AGENTS / "hostile.py")],
        "shell": ["sh", str(AGENTS / "hostile.sh")],
    }
    env = {"NEEDLES": ",".join([*needles, f"real home {needles[1]}"])}
    try:
        with _gateways(tmp_path, monkeypatch) as (gateways, model, canary):
            result, tools = _ask(
                gateways,
                model,
                commands[agent],
                "Q1",
                canary.port,
                question,
                env=env,
                python="/usr/bin/python3",
            )
    finally:
        planted.unlink()
    assert result.error is None, result.events[-1].data["stderr_tail"]
    if agent == "shell":
        assert result.answer == "found=[] secrets=[] userns=refused mount=refused"
        return
    report = json.loads(result.answer)
    assert report["found"] == {} and report["secrets_read"] == []
    assert report["files_read"] > 20  # /etc's, its own code's: the search did run
    refused = {k: v for k, v in report["calls"].items() if k != "NETLINK_ROUTE"}
    assert report["calls"]["NETLINK_ROUTE"] == "allowed"
    assert refused == {
        "AF_VSOCK": "EAFNOSUPPORT",
        "AF_PACKET": "EAFNOSUPPORT",
        "NETLINK_AUDIT": "EPROTONOSUPPORT",
        **dict.fromkeys(list(refused)[3:], "EPERM"),
    }
    calls = {t["url"] for t in tools if t["route"] == "syscall"}
    assert calls == {
        "syscall:socket(AF_VSOCK)",
        "syscall:socket(AF_PACKET)",
        "syscall:socket(NETLINK_AUDIT)",
        "syscall:unshare(CLONE_NEWUSER)",
        "syscall:clone(CLONE_NEWUSER)",
        *(f"syscall:{name}" for name in ("ptrace", "bpf", "perf_event_open", "keyctl", "mount")),
    }


CAPS = {  # cap: (its limit, a program that reaches it)
    "memory": ({"memory_mb": 64}, ["{python}", "-c", "x = bytearray(256 << 20)"]),
    "processes": (
        {"processes": 16},
        ["sh", "-c", "for i in $(seq 100); do sleep 3 & done; wait; echo Answer: x"],
    ),
    "cpu": ({"cpu_s": 1}, ["sh", "-c", "while :; do :; done"]),
    "open_files": (
        {"open_files": 64},
        ["{python}", "-c", "import time; f = [open('/dev/null') for _ in range(99)]"],
    ),
    "output": ({"output_mb": 1}, ["sh", "-c", "head -c 50000000 /dev/zero"]),
    "tmp": ({"tmp_mb": 8}, ["sh", "-c", "head -c 20000000 /dev/zero > /tmp/x; echo Answer: x"]),
    "home": ({"home_mb": 8}, ["sh", "-c", "head -c 20000000 /dev/zero > ~/x; echo Answer: x"]),
    "workdir": ({"workdir_mb": 8}, ["sh", "-c", "head -c 20000000 /dev/zero > x; echo Answer: x"]),
}


def test_a_cgroup_left_by_an_earlier_process_of_the_same_id_is_replaced(tmp_path):
    """A sandbox's cgroup is named by its process's id and count: one left by a killed
    process that had the id before is removed where empty and made anew, never the
    sandbox's error (pids wrap around on a machine that runs for days)."""
    parent = tmp_path / "pids"
    (parent / "helixbench-1-0").mkdir(parents=True)
    found = limits.Cgroups({"pids": str(parent)}, 1)
    box = found.make("helixbench-1-0", limits.Limits(processes=7))
    assert (parent / "helixbench-1-0" / "pids.max").read_text() == "7"
    box.remove()  # (a folder with a file: a real cgroup's files go with it)
    (parent / "helixbench-1-1").mkdir()
    (parent / "helixbench-1-1" / "busy").write_text("")  # not empty: named, not replaced
    with pytest.raises(OSError, match="helixbench-1-1"):
        found.make("helixbench-1-1", limits.Limits())


def test_each_cap_is_reached_recorded_and_the_next_question_runs(
    tmp_path, monkeypatch, memory_held_by
):
    """Each cap of `limits`, reached by a program made to: the question's error names
    it, with what held it; the next question of the same gateways answers."""
    with _gateways(tmp_path, monkeypatch) as (gateways, model, canary):
        for cap, (limit, command) in CAPS.items():
            result, _ = _ask(gateways, model, command, f"Q{cap}", canary.port, limits=limit)
            agent = result.events[-1].data
            assert result.error == f"agent_limit: {cap}", (cap, result.error, agent)
            assert agent["limits_reached"][0] == cap
        result, _ = _ask(gateways, model, ["sh", "-c", "echo Answer: fine"], "Q", canary.port)
        assert (result.answer, result.error) == ("Answer: fine", None)
    held = limits.held(limits.Limits(), limits.cgroups())
    assert held["memory"].startswith(memory_held_by)


def test_a_timeout_is_the_wall_cap():
    """The wall time is `timeout_s` (agent_timeout, as before)."""
    assert limits.CAPS[0] == "output" and "wall" not in limits.CAPS


def test_the_filter_refers_each_refused_call_to_the_first_process():
    bpf, names = syscalls.program()
    assert len(bpf) % 8 == 0 and len(bpf) > 100
    assert set(names.values()) >= {"socket", "unshare", "clone", *syscalls.REFUSED[:5]}
    assert any("AF_UNIX, AF_INET, AF_INET6, AF_NETLINK" in rule for rule in syscalls.rules())


def test_an_agent_may_not_be_shown_what_runs_are_judged_by(tmp_path, monkeypatch):
    """A path that holds or lies in the judged places is refused with the reason; the
    agent's own code and runtime are not."""
    monkeypatch.chdir(tmp_path)
    places = view.judged_places({"/srv/cache.sqlite": "the tool cache"})
    for path, said in {
        ".": "holds the upstream copies",
        str(tmp_path.parent): "holds the upstream copies",
        "results/runs": "lies in the runs' records",
        "resources/upstream/raw.githubusercontent.com": "lies in the upstream copies",
        "/srv": "holds the tool cache",
    }.items():
        with pytest.raises(ConfigError, match=said):
            view.check_paths("methods.a.paths", [path], places)
    view.check_paths("methods.a.paths", [".venv", "resources/envs", "/opt/agent"], places)
    assert "/usr" not in view.runtime("/usr/bin/python3")


def _folder_sizes(top: Path, stop: threading.Event, seen: list[int]) -> None:
    """The sizes the question folders of ``top`` got, sampled until ``stop``."""
    while not stop.is_set():
        _folder_sizes_once(top, seen)
        time.sleep(0.01)


def _folder_sizes_once(top: Path, seen: list[int]) -> None:
    """Each question folder's size in ``top`` now, as the host stores it (every file's
    whole size: a copied-out sparse file holds its holes)."""
    for folder in top.glob("agent-*"):
        size = 0
        try:
            for path in folder.rglob("*"):
                size += path.lstat().st_size if path.is_file() else 0
        except OSError:  # (removed as it was walked: the question ended)
            pass
        seen.append(size)


def test_a_hostile_agent_reaches_past_its_question_by_none_of_six_ways(tmp_path, monkeypatch):
    """Issue 55's six ways, tried at once by a Python agent and a Node one, with a
    polite curl agent beside them on the same gateways: io_uring makes no refused
    socket (C and Python), no forged refusal is recorded, the copied-out folder stays
    under its cap, every flooded connection gets a reply while the polite agent's calls
    all succeed, a repeated parameter's two orders are two cache entries, max_tokens
    -5 and 10^30 are 400s, a 50 MB body is 413 at every door."""
    uring = tmp_path / "uring"
    built = subprocess.run(["cc", "-O", "-o", uring, AGENTS / "uring.c"], capture_output=True)
    assert built.returncode == 0, built.stderr.decode()
    outside = json.loads(json.loads(subprocess.check_output([uring]))["answer"])
    assert outside["AF_VSOCK"] == "created" or outside["NETLINK_GENERIC"] == "created"
    cap = {"workdir_mb": 64}
    agents = {
        "python": (["/usr/bin/python3", str(AGENTS / "breakout.py")], {}),
        "node": (["node", str(AGENTS / "flood.mjs")], {}),
        "c": ([str(uring)], {}),
        "polite": (["sh", str(AGENTS / "polite.sh")], {"CALLS": "15"}),
    }
    results = {}
    with _gateways(tmp_path, monkeypatch) as (gateways, model, canary):
        stop, sizes = threading.Event(), []
        sampler = threading.Thread(target=_folder_sizes, args=(gateways.workdir, stop, sizes))
        sampler.start()

        def ask(name):
            command, env = agents[name]
            results[name] = _ask(
                gateways, model, command, f"Q{name}", canary.port, env=env, limits=cap,
                paths=[str(AGENTS)], python="/usr/bin/python3", timeout_s=120,
            )  # fmt: skip

        threads = [threading.Thread(target=ask, args=(name,)) for name in agents]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        stop.set()
        sampler.join()
    every = [e for result, _ in results.values() for e in result.events]
    # 1. io_uring and userfaultfd refused, in Python and in C, and recorded.
    python, tools = results["python"]
    report = json.loads(python.answer)
    (c_result, c_tools) = results["c"]
    c_report = json.loads(c_result.answer)
    for found in (report["uring"], c_report):
        assert found == {
            **{n: "setup EPERM" for n in found if n != "userfaultfd"},
            "userfaultfd": "EPERM",
        }, found
    calls = {t["url"] for t in [*tools, *c_tools] if t["route"] == "syscall"}
    assert {"syscall:io_uring_setup", "syscall:userfaultfd"} <= calls
    # 2. nothing it wrote is a record: every /_refused was a path with no service.
    # (its requests are recorded as asked: the front's URL is an NCBI URL that names
    # the word, answered by NCBI; no refusal names it)
    forged = [e.data for e in every if "forged" in json.dumps(e.data).lower()]
    assert forged and all(d["url"].startswith("https://eutils.ncbi.nlm.nih.gov/") for d in forged)
    assert all(d["route"] == "eutils.ncbi.nlm.nih.gov" and "count" not in d for d in forged)
    assert all(e.data.get("count", 1) < 10**9 for e in every)
    assert set(report["forge"].pop("sockets seen")) == set()
    assert set(report["forge"].values()) == {404}
    assert "runner" not in python.events[-1].data  # its report held no number a float holds
    # 3. its folder, copied out, never past the cap: the cap reached, recorded.
    assert max(sizes) <= 64 << 20, max(sizes)
    assert report["folder"]["apparent_mb"] > 1000
    assert python.error == "agent_limit: workdir"
    # 4. the flood: every connection a reply, one at its cap or within it; a request
    # during the half-open ones served; the polite agent's calls all served.
    for name in ("python", "node"):
        found = json.loads(results[name][0].answer)
        flood = found.get("flood", found)
        assert sum(flood["statuses"].values()) == 500 and set(flood["statuses"]) <= {
            "200", "503"
        }, flood  # fmt: skip
        assert str(flood.get("during_half_open", flood.get("during"))) == "200", flood
        assert set(flood["bodies"].values()) == {413}, flood["bodies"]
    polite = results["polite"][0]
    assert polite.error is None and polite.answer.startswith("Answer: codes= 30 200 "), polite
    # Every 503 of the Python agent's flood is a refusal of its door, reported as counts
    # (a report a second while the agent runs: a few events, not one a connection; how
    # many of the 500 are refused, and in how many reports, is the machine's timing).
    busy = [t for t in tools if t["url"].endswith(":busy")]
    refused = sum(t.get("count", 1) for t in busy)
    flooded = json.loads(python.answer)["flood"]["statuses"]
    assert busy and refused == flooded.get("503") and len(busy) <= 10, (refused, flooded, busy)
    # 5. two orders of a repeated parameter, two requests
    assert report["keys"]["A,B"] != report["keys"]["B,A"]
    # 6. max_tokens refused before the model, a PATH of the root's folders only
    assert report["ceil"]["-5"] == 400 and report["ceil"][str(10**30)] == 400
    assert report["ceil"]["PATH exists"] and "/root" not in report["ceil"]["PATH"]


@pytest.mark.slow
def test_hostile_agents_beside_others_in_a_run_of_three_questions_leave_a_whole_report(
    tmp_path, mirror
):
    """Issue 55's acceptance as a user runs it: the six ways tried on three questions at
    once (Python; Node's flood; C's io_uring) beside a polite agent, each method a run
    job of the workflow: the report is written, no forged refusal is in any record, no
    question folder outgrew its cap on the host, each agent's figures in agents.csv are
    its own."""
    uring = tmp_path / "bin" / "uring"
    uring.parent.mkdir()
    subprocess.run(["cc", "-O", "-o", uring, AGENTS / "uring.c"], check=True)
    agent = {"kind": "agent", "timeout_s": 120, "limits": {"workdir_mb": 64}}
    with NCBIServer() as ncbi, OpenAIServer() as llm:
        ncbi.state.eutils_rate = None
        config = {
            "benchmarks": ["geneturing"],
            "shards": 1,
            "tools": {"mode": "live", "routes": ncbi.routes()},
            "models": {"llm": {**llm.chat_model(), "concurrency": 3}},
            "methods": {
                "breakout": agent
                | {"command": ["/usr/bin/python3", str(AGENTS / "breakout.py")]}
                | {"python": "/usr/bin/python3", "paths": [str(AGENTS)]},
                "flood-node": agent | {"command": ["node", str(AGENTS / "flood.mjs")]},
                "uring-c": agent | {"command": [str(uring)]},
                "polite": agent
                | {"command": ["sh", str(AGENTS / "polite.sh")], "env": {"CALLS": "10"}},
            },
            "runs": [
                {
                    "model": "llm",
                    "methods": ["breakout", "flood-node", "uring-c", "polite"],
                    "tasks": ["Gene alias"],
                    "sample": 3,
                }
            ],
        }
        jobs_tmp = tmp_path / "tmp"  # the run jobs' agents folders, watched from here
        jobs_tmp.mkdir()
        stop, sizes = threading.Event(), []

        def watch() -> None:
            while not stop.is_set():
                for top in jobs_tmp.glob("helixbench-agents-*"):
                    _folder_sizes_once(top, sizes)
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror), "TMPDIR": str(jobs_tmp)}
        try:
            done = run_snakemake(tmp_path / "work", config, "--cores", "4", env=env)
        finally:
            stop.set()
            watcher.join()
    assert done.returncode == 0, done.stderr[-3000:]
    work = tmp_path / "work"
    assert (work / "results/report/index.html").is_file()
    records = {
        method: read_records(work / planned_run(config, mirror, "llm", method).shard_paths()[0])
        for method in config["methods"]
    }
    assert all(len(r) == 3 for r in records.values())
    every = [e["data"] for rs in records.values() for r in rs for e in r["events"]]
    assert not any(
        "forged" in json.dumps(d).lower() and not d["url"].startswith("https://eutils.")
        for d in every
    )
    assert all((d.get("count") or 1) < 10**9 for d in every)
    assert sizes and max(sizes) <= 64 << 20, max(sizes or [0])
    for record in records["breakout"]:
        report = json.loads(record["answer"])
        assert set(report["uring"].values()) == {"setup EPERM", "EPERM"}, report["uring"]
        flood = report["flood"]
        assert sum(flood["statuses"].values()) == 500 and flood["during_half_open"] == 200
        assert set(flood["bodies"].values()) == {413}
        assert report["keys"]["A,B"] != report["keys"]["B,A"]
        assert record["error"] == "agent_limit: workdir"
    for record in records["polite"]:
        assert record["error"] is None and record["answer"].startswith("Answer: codes= 20 200 ")
    for record in records["uring-c"]:
        assert "created" not in record["answer"], record["answer"]
    agents = {r["method"]: r for r in csv.DictReader(open(work / "results/report/agents.csv"))}
    assert int(agents["breakout"]["syscalls"]) >= 3 and int(agents["uring-c"]["syscalls"]) >= 3
    assert int(agents["breakout"]["refused"]) < 10**6 and agents["polite"]["refused"] == "0"


def test_an_agent_that_imports_a_file_beside_it_is_told_to_name_its_folder(tmp_path, monkeypatch):
    """Only the named program is in the sandbox: an import of the file beside it fails,
    and the record (and the run's warning) says `paths:` is the fix; with the folder in
    `paths:` it answers."""
    from helixbench.run.health import error_messages

    folder = tmp_path / "my-agent"
    folder.mkdir()
    (folder / "helper.py").write_text("ANSWER = 'from the helper'\n")
    (folder / "agent.py").write_text(
        "import json, sys\nsys.path.insert(0, sys.path[0])\nimport helper\n"
        "print(json.dumps({'answer': helper.ANSWER}))\n"
    )
    command = ["{python}", str(folder / "agent.py")]
    with _gateways(tmp_path, monkeypatch) as (gateways, model, canary):
        alone, _ = _ask(gateways, model, command, "Q1", canary.port)
        shown, _ = _ask(gateways, model, command, "Q2", canary.port, paths=[str(folder)])
    hint = alone.events[-1].data["hint"]
    assert alone.error == "agent_error" and "`paths:`" in hint and str(folder) in hint
    record = {"error": "agent_error", "events": [{"type": "agent", "data": alone.events[-1].data}]}
    ((_, warning),) = error_messages([record])
    assert "1 of 1 question ended in agent_error" in warning and "`paths:`" in warning
    assert (shown.error, shown.answer) == (None, "from the helper")


def _host_segment(text: bytes) -> int:
    """A System V segment of the host's (mode 0600) holding ``text``: its id."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(0, 4096, 0o1000 | 0o600)
    assert segment >= 0, ctypes.get_errno()
    at = libc.shmat(segment, None, 0)
    ctypes.memmove(at, text, len(text))
    libc.shmdt(ctypes.c_void_p(at))
    return segment


def _sysv_ids() -> set[tuple[str, str]]:
    """Every System V object of the host's IPC namespace, by kind and id."""
    found = set()
    for kind in ("shm", "msg", "sem"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        found |= {(kind, line.split()[1]) for line in lines if line.strip()}
    return found


def test_nothing_an_agent_leaves_outlives_its_question(tmp_path, monkeypatch):
    """Issue 66, tried by a Python agent and a shell one beside a polite one: the IPC
    objects they make are their namespace's (none on the host after, no host segment
    read), the host opens inotify instances while the agent holds all it may, an
    orphan swapping a folder and a link leaves a copied-out folder and no agent_error,
    and /proc names no host path (its first process's command line, its cgroup)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    secret = b"host-secret-0123"
    host_segment = _host_segment(secret)
    before = _sysv_ids()
    agents = {
        "python": ["/usr/bin/python3", str(AGENTS / "leftovers.py")],
        "shell": ["sh", str(AGENTS / "leftovers.sh")],
        "polite": ["sh", str(AGENTS / "polite.sh")],
    }
    env = {"HOST_SHM_ID": str(host_segment), "HOLD_S": "3", "CALLS": "3"}
    results, denied = {}, []
    try:
        with _gateways(tmp_path, monkeypatch) as (gateways, model, canary):

            def ask(name):
                results[name] = _ask(
                    gateways, model, agents[name], f"Q{name}", canary.port, env=env,
                    paths=[str(AGENTS)], python="/usr/bin/python3", timeout_s=90,
                )  # fmt: skip

            threads = [threading.Thread(target=ask, args=(name,)) for name in agents]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and threads[0].is_alive():
                fd = libc.inotify_init1(os.O_CLOEXEC)
                if fd < 0:
                    denied.append(ctypes.get_errno())
                else:
                    os.close(fd)
                time.sleep(0.05)
            for thread in threads:
                thread.join(timeout=120)
    finally:
        libc.shmctl(host_segment, 0, None)  # IPC_RMID
    python, tools = results["python"]
    assert python.error is None, python.events[-1].data["stderr_tail"]
    found = json.loads(python.answer)
    # 1. its objects were made in its own namespace, the host's unread; none is left.
    assert found["ipc"]["host segment"].startswith("errno"), found["ipc"]
    assert found["ipc"]["shmget"] >= 0 and found["ipc"]["msgget"] >= 0
    queues = found["ipc"]["mq_open"]  # (a quarter of the host user's bytes: then EMFILE)
    made = [q for q in queues if isinstance(q, int)]
    assert made and set(queues) - set(made) <= {"errno 24"}, queues
    assert _sysv_ids() - before == set()
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    assert all(rt.mq_open(f"/leftover-{i}".encode(), os.O_RDONLY) < 0 for i in range(9))
    shell = results["shell"][0]
    assert shell.error is None and "segments_seen=1 " in shell.answer, shell.answer  # (its own)
    # 2. the host's inotify_init1 never failed while the agent held its instances.
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    assert 0 < found["inotify"]["instances"] <= limit // 4 and denied == []
    # 3. the race: the folder copied out once nothing runs, the link left out and
    # recorded under the question, no agent_error, no host path.
    copied = [t for t in tools if t["route"] == "copy"]
    assert any(t["url"].startswith("copy:pair/") for t in copied), tools
    assert all("left out" in t["error"] or "copied" in t["error"] for t in copied), copied
    records = json.dumps([e.data for r, _ in results.values() for e in r.events])
    for command in agents.values():  # (its own command, as configured, is recorded)
        records = records.replace(json.dumps(command[-1])[1:-1], "")
    for host_path in (str(REPO_ROOT), os.path.dirname(sys.executable)):
        assert host_path not in records, host_path
    # 4. /proc inside names no host path.
    proc = found["proc"]
    assert proc["/proc/1/cmdline"].startswith("helixbench-sandbox -I -c "), proc
    for name in ("/proc/self/cgroup", "/proc/1/cgroup"):  # (v1: a line per hierarchy)
        lines = proc[name].strip().splitlines()
        assert lines and all(line.endswith(":/") for line in lines), (name, proc[name])
    for name in ("/proc/1/exe", "/proc/1/maps", "/proc/1/environ"):
        assert proc[name].startswith("errno"), (name, proc[name])
    cgroups = shell.answer.split("cgroup=", 1)[1].split(" cmdline=", 1)[0].strip(";").split(";")
    assert all(line.endswith(":/") for line in cgroups) and str(REPO_ROOT) not in shell.answer
    assert results["polite"][0].error is None


def test_the_copy_out_refuses_what_changes_kind_or_vanishes_and_goes_on(tmp_path, monkeypatch):
    """An entry swapped for a link, or removed, after the walk listed it is refused with
    why (its path in the folder, no host path); the rest is copied."""
    from helixbench.gateway.sandbox import root

    source, target = tmp_path / "source", tmp_path / "target"
    (source / "folder" / "inner").mkdir(parents=True)
    (source / "folder" / "inner" / "kept.txt").write_text("kept")
    (source / "gone.txt").write_text("x")
    (source / "stays.txt").write_text("y")
    target.mkdir()
    listed = os.scandir

    def changing(fd):  # the walk's listing, then the world changes under it
        entries = list(listed(fd))
        if {e.name for e in entries} >= {"folder", "gone.txt"}:
            os.rename(source / "folder", tmp_path / "moved")
            os.symlink(tmp_path / "moved", source / "folder")
            (source / "gone.txt").unlink()
        return contextlib.nullcontext(entries)

    monkeypatch.setattr(root.os, "scandir", changing)
    refused = []
    flags = os.O_RDONLY | os.O_DIRECTORY
    root.copy_tree(os.open(source, flags), os.open(target, flags), root.Budget(1 << 20), refused)
    assert sorted(p.name for p in target.iterdir()) == ["stays.txt"]
    assert dict(refused) == {
        "folder": "it was a folder, then not (changed kind while it was copied)",
        "gone.txt": "it vanished while it was copied",
    }
    refused = []  # (listed at rest: the link is no surprise, and still said)
    target2 = tmp_path / "again"
    target2.mkdir()
    root.copy_tree(os.open(source, flags), os.open(target2, flags), root.Budget(1 << 20), refused)
    assert refused == [("folder", "a link (never followed): left out")]
