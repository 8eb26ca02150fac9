"""Code as a tool (helixbench.gateway.code): a scripted model that writes the ten lines
of Biopython a researcher would answers three SeqQA subtasks right through the
``bash`` and ``python`` tools, every execution recorded, and a rerun replays them
all; hostile code meets its caps or is refused, recorded under its question, and
the shard goes on; code sees no answer key, no home and no other run; agents get
the same tools over MCP.

The code runs with this test environment's Python, which holds the tools
environment's Biopython 1.88 (building workflow/envs/tools/code.yaml takes 40 s:
tests/test_envs.py checks the file)."""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from helixbench.benchmarks import local_question_table
from helixbench.config import build_plan
from helixbench.datasets.questions import write_questions
from helixbench.gateway import sandbox
from helixbench.gateway.code import CodeSettings, ExecutionCache
from helixbench.gateway.gateways import Gateways
from helixbench.gateway.sandbox import limits
from helixbench.loopback.ncbi import NCBIServer
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.choices import write_templates
from helixbench.paths import CODE_CACHE, CODE_ENV, PEER_TEMPLATES
from helixbench.report.tables.scores import score_table
from helixbench.run.shard import run_shard
from helixbench.scoring import DEFAULT_SCORING
from helixbench.scoring.run_scores import score_run
from helixbench.tools.executor import ToolExecutor, ToolSettings

pytestmark = [
    pytest.mark.xdist_group("inspect"),  # (the peers' wording: its environment, built once)
    pytest.mark.skipif(
        bool(sandbox.unavailable()), reason=f"no sandbox here: {sandbox.unavailable()}"
    ),
]
SUBTASKS = ("ORF-seq-AAid", "RE-seq-numfrags", "Prop-seq-gcpercent")
OPTION = re.compile(r"^([A-Z])\) (.*)$", re.M)

ORF = """import re
from Bio.Seq import Seq
from Bio.Data.IUPACData import protein_letters_1to3
FULL = {"A": "Alanine", "R": "Arginine", "N": "Asparagine", "D": "Aspartic acid",
    "C": "Cysteine", "E": "Glutamic acid", "Q": "Glutamine", "G": "Glycine",
    "H": "Histidine", "I": "Isoleucine", "L": "Leucine", "K": "Lysine", "M": "Methionine",
    "F": "Phenylalanine", "P": "Proline", "S": "Serine", "T": "Threonine",
    "W": "Tryptophan", "Y": "Tyrosine", "V": "Valine"}
seq = open("seq.txt").read().strip()
best = ""
for frame in range(3):  # the forward strand: ATG to a stop codon
    part = seq[frame:]
    protein = str(Seq(part[: len(part) - len(part) % 3]).translate())
    for orf in re.findall(r"M[^*]*\\*", protein):
        best = max(best, orf, key=len)
aa = best[POSITION - 1]
print(aa, protein_letters_1to3[aa], FULL[aa], sep="\\n")
"""
RE = """from Bio import Restriction
from Bio.Seq import Seq
seq = Seq(open("seq.txt").read().strip())
batch = Restriction.RestrictionBatch(ENZYMES)
cuts = {site for sites in batch.search(seq, linear=True).values() for site in sites}
print(len(cuts) + 1)
"""
GC = """from Bio.SeqUtils import gc_fraction
print(round(gc_fraction(open("seq.txt").read().strip()) * 100))
"""


def program(question: str) -> tuple[str, str]:
    """(sequence, the Python that answers) for a question of the three subtasks."""
    orf = re.search(r"position (\d+) in the longest ORF .* sequence ([ACGT]+)", question)
    if orf:
        return orf.group(2), ORF.replace("POSITION", orf.group(1))
    digest = re.search(r"digest the sequence ([ACGT]+) with the enzymes? ([^?]+)\?", question)
    if digest:
        enzymes = [e.strip() for e in digest.group(2).split(",")]
        return digest.group(1), RE.replace("ENZYMES", repr(enzymes))
    return re.search(r"sequence ([ACGT]+)", question).group(1), GC


def researcher(messages: list) -> str | dict:
    """A model that stores the sequence with bash, computes with Biopython, and picks
    the option its program printed."""
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    sequence, code = program(prompt)
    if not results:
        return {"tool_calls": [("bash", {"code": f"printf '%s' {sequence} > seq.txt; ls"})]}
    if len(results) == 1:
        return {"tool_calls": [("python", {"code": code})]}
    printed = set(results[-1].split("stdout:\n", 1)[-1].splitlines())
    letter = next(letter for letter, text in OPTION.findall(prompt) if text in printed)
    return f"The program printed it.\nANSWER: {letter}"


@pytest.fixture
def workdir(tmp_path, monkeypatch, mirror, inspect_env):
    """A project folder: the question bank, the peers' wording and a tools environment
    (this Python)."""
    monkeypatch.chdir(tmp_path)
    write_templates(inspect_env, Path(PEER_TEMPLATES))
    marker = Path(CODE_ENV)
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({"python": sys.executable, "packages": ["biopython==1.88"]}))
    write_questions(local_question_table(mirror), tmp_path / "questions.jsonl")
    return tmp_path


def _run(mirror, server, method: dict, name: str, sample: int, tasks=SUBTASKS):
    config = {
        "benchmarks": ["labbench-seqqa"],
        "models": {"m": {**server.chat_model(), "concurrency": 4}},
        "methods": {"code": method},
        "runs": [{"model": "m", "method": "code", "sample": sample, "tasks": list(tasks)}],
    }
    plan = build_plan(config, mirror)
    (run,) = plan.runs
    shard, scores = Path(f"{name}.jsonl"), Path(f"{name}-scores.jsonl")
    run_shard(run.spec(), 0, Path("questions.jsonl"), shard, model_cache=Path(f"{name}.sqlite"))
    score_run(run.spec(), Path("questions.jsonl"), [shard], scores, DEFAULT_SCORING)
    records = [json.loads(line) for line in shard.read_text().splitlines()]
    rows = pd.DataFrame([json.loads(line) for line in scores.read_text().splitlines()])
    return plan, records, score_table(plan, rows.assign(run="m / code"))


def _code_events(record: dict) -> list[dict]:
    return [e["data"] for e in record["events"] if e["data"].get("route") == "code"]


@pytest.mark.slow
def test_a_model_that_writes_biopython_scores_one_and_a_rerun_executes_nothing(workdir, mirror):
    method = {"kind": "function-calling", "tools": ["python", "bash"], "demonstrations": False}
    with OpenAIServer() as server:
        server.state.chat = researcher
        plan, records, table = _run(mirror, server, method, "first", sample=4)
        accuracy = table[table.metric == "accuracy"].set_index("task").score
        assert {t: accuracy[t] for t in SUBTASKS} == dict.fromkeys(SUBTASKS, 1.0)
        assert len(records) == 12
        for record in records:
            bash, python = _code_events(record)
            assert (bash["tool"], python["tool"]) == ("bash", "python")
            assert bash["stdout"] == "seq.txt\n" and python["exit_code"] == 0
            assert python["cache"] == "miss" and len(python["stdout_sha256"]) == 64
            assert python["code"].startswith(("import re", "from Bio"))
        executed = len(ExecutionCache(CODE_CACHE).export(
            [e["key"] for r in records for e in _code_events(r)]
        ))  # fmt: skip
        assert executed == 24
        # The same config again (its model replies from a cache of its own): every
        # execution replayed, the scratch folder put back as the bash call left it.
        _, again, table = _run(mirror, server, method, "again", sample=4)
    assert {e["cache"] for r in again for e in _code_events(r)} == {"hit"}
    assert set(table[table.metric == "accuracy"].score) == {1.0}
    assert len(ExecutionCache(CODE_CACHE).export(
        [e["key"] for r in again for e in _code_events(r)]
    )) == executed  # fmt: skip


HOSTILE = {
    "loop": ("python", "while True:\n    pass\n"),
    "memory": ("python", "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n"),
    "fork": (
        "python",
        "import os, time\nfor _ in range(10000):\n    if os.fork() == 0:\n"
        "        time.sleep(60)\n        os._exit(0)\n",
    ),
    "print": ("bash", "head -c 1000000000 /dev/zero | tr '\\0' x"),
    "socket": (
        "python",
        "import socket\nfor host in ('127.0.0.1', '198.51.100.7'):\n"
        "    s = socket.socket()\n    s.settimeout(3)\n"
        "    print(host, s.connect_ex((host, CANARY)))\n",
    ),
    "look": (
        "bash",
        'for f in ANSWER_KEY HOME_SECRET OTHER_RUN; do cat "$f" 2>/dev/null && echo READ $f;'
        " done; ls ~ /root 2>&1; echo done",
    ),
}


def test_hostile_code_meets_its_caps_is_recorded_and_the_shard_goes_on(workdir, mirror, tmp_path):
    """Six questions, each a hostile program the model sends once before answering."""
    secret = Path.home() / ".helixbench-code-test-secret"
    other = tmp_path / "results" / "runs" / "other" / "shard-0-of-1.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text('{"answer": "OTHER RUN"}\n')
    secret.write_text("HOME SECRET\n")
    given, lock = {}, threading.Lock()
    try:
        with OpenAIServer() as server, NCBIServer() as canary:
            programs = {
                name: (language, code.replace("CANARY", str(canary.port))
                       .replace("ANSWER_KEY", str(tmp_path / "questions.jsonl"))
                       .replace("HOME_SECRET", str(secret)).replace("OTHER_RUN", str(other)))
                for name, (language, code) in HOSTILE.items()
            }  # fmt: skip
            names = list(programs)

            def hostile(messages):
                prompt = next(m["content"] for m in messages if m["role"] == "user")
                with lock:
                    name = given.setdefault(prompt, names[len(given) % len(names)])
                if not any(m["role"] == "tool" for m in messages):
                    language, code = programs[name]
                    return {"tool_calls": [(language, {"code": code})]}
                return "ANSWER: A"

            server.state.chat = hostile
            method = {
                "kind": "function-calling",
                "tools": ["python", "bash"],
                "demonstrations": False,
                "code": {
                    "timeout_s": 20,
                    "limits": {"memory_mb": 256, "processes": 64, "cpu_s": 4, "output_mb": 1},
                },
            }
            _, records, _ = _run(mirror, server, method, "hostile", 2, SUBTASKS)
            assert canary.state.received == []
    finally:
        secret.unlink()
    assert len(records) == 6 and all(r["answer"] == "A" for r in records)
    by_name = {}
    for record in records:
        (execution,) = _code_events(record)
        name = next(n for n, (_, code) in programs.items() if code == execution["code"])
        by_name[name] = (execution, record)
    assert set(by_name) == set(HOSTILE)
    stopped = {name: by_name[name][0]["limit"] for name in ("loop", "memory", "fork", "print")}
    assert stopped == {"loop": "cpu", "memory": "memory", "fork": "processes", "print": "output"}
    printed = by_name["print"][0]
    assert printed["stdout_bytes"] <= 1 << 20 and len(printed["stdout"]) <= 20_000
    execution, record = by_name["socket"]
    assert re.search(r"127\.0\.0\.1 \d+\n198\.51\.100\.7 \d+", execution["stdout"])
    assert " 0\n" not in execution["stdout"]
    refused = [e["data"] for e in record["events"] if e["data"].get("route") == "code:refused"]
    assert {e["url"] for e in refused} == {
        f"socket:127.0.0.1:{canary.port}",
        f"socket:198.51.100.7:{canary.port}",
    }
    looked = by_name["look"][0]
    assert "READ" not in looked["stdout"] and "SECRET" not in looked["stdout"]
    assert looked["stdout"].rstrip().endswith("done")


def test_agents_get_the_code_tools_over_mcp(tmp_path, monkeypatch):
    """An MCP client (the SDK's, as an agent's would be) runs Python through the
    gateway; the execution and the request its code made are the session's events."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    monkeypatch.chdir(tmp_path)
    marker = Path(CODE_ENV)
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({"python": sys.executable, "packages": []}))
    with NCBIServer() as ncbi:
        ncbi.state.eutils_rate = None
        settings = ToolSettings.from_config(
            {"mode": "live", "cache": str(tmp_path / "t.sqlite"), "routes": ncbi.routes(),
             "code_cache": str(tmp_path / "code.sqlite"), "budgets": str(tmp_path / "b")}
        )  # fmt: skip
        caps = CodeSettings(("python",), 30, limits.Limits(cpu_s=20))
        gateways = Gateways(None, ToolExecutor(settings), "", code=caps)
        session = gateways.sessions.open("QMCP", "q", {"max_model_calls": 1, "max_tool_calls": 5})
        code = (  # NCBI's public URL: the sandbox sends it to the tool gateway
            "import urllib.request\nprint(urllib.request.urlopen('https://eutils.ncbi.nlm.nih"
            ".gov/entrez/eutils/esearch.fcgi?db=gene&term=QMCP').status)\n"
        )

        async def call():
            async with streamable_http_client(gateways.mcp.url(session.token)) as streams:
                async with ClientSession(streams[0], streams[1]) as client:
                    await client.initialize()
                    names = {t.name for t in (await client.list_tools()).tools}
                    reply = await client.call_tool("python", {"code": code})
                    return names, reply.content[0].text

        try:
            names, text = asyncio.run(call())
        finally:
            gateways.close()
    assert {"python", "esearch", "blast"} <= names and "bash" not in names
    assert "exit status 0" in text and "200" in text
    routes = [e.data["route"] for e in session.events]
    assert routes[-1] == "mcp:python" and any(r.startswith("code:") for r in routes[:-1])
