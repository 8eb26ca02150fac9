"""The seed systems run unchanged (``kind: agent`` with an ``original``): their specs,
environments and plan; and GeneGPT's cross-check, for real: helixbench's ``genegpt``
loop with SmolLM2, then upstream's ``main.py`` (fetched at the pinned commit, in its
own openai 0.27 venv built by the ``original_env`` rule) through the gateways on the
same question: every model call of main.py is the same prompt, byte for byte, so a
response-cache hit, and the answer is the same."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from helixbench.config import build_plan, resolve_method
from helixbench.datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO
from helixbench.digests import sha256_text
from helixbench.errors import ConfigError
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.originals import ORIGINALS, RUNNERS_DIR
from helixbench.models.gguf import converted_name
from helixbench.report.tables.protocols import protocol_of, protocol_runs
from helixbench.transcripts import read_records

from .conftest import REPO_ROOT, SMOLLM2, planned_run, run_snakemake

ENVS = REPO_ROOT / "workflow" / "envs" / "originals"


def pip_pins(name: str) -> dict[str, str]:
    spec = yaml.safe_load((ENVS / f"{name}.yaml").read_text())
    pins = [p for d in spec["dependencies"] if isinstance(d, dict) for p in d["pip"]]
    return {p.split("==")[0].lower(): p.split("==")[1] for p in pins}


def test_each_original_has_its_runner_environment_and_upstream_pins(upstream):
    assert sorted(ORIGINALS) == sorted(p.stem for p in ENVS.glob("*.yaml"))
    for system in ORIGINALS.values():
        assert (RUNNERS_DIR / system.runner).is_file(), system.runner
        for file in system.upstream_files():  # pinned by the manifest, sha256 known
            assert file.sha256 != "unknown", file.path
    # GeneGPT's own requirements.txt pins, as its environment pins them (pandas aside:
    # main.py never imports it, and 1.4.4 builds for no Python 3.11).
    text = upstream("requirements.txt").read_text()
    upstream_pins = dict(line.lower().split("==") for line in text.split())
    assert upstream_pins.pop("pandas") == "1.4.4"
    assert upstream_pins.items() <= pip_pins("genegpt-main").items()
    assert pip_pins("geneagent-cascade")["openai"] == "0.28.0"  # GeneAgent's README
    assert pip_pins("brad-agent")["brad-agent"] == "0.1.34"


def test_an_environment_built_by_conda_is_recorded_as_it_is(tmp_path):
    """Under --sdm conda the rule runs in the file's environment: the marker names its
    interpreter and what it holds, and installs nothing."""
    from helixbench.environments import build

    marker = build(ENVS / "genegpt-main.yaml", tmp_path / "env.json", in_place=True)
    assert marker["built_with"] == "conda" and marker["requirements"] == []
    assert Path(marker["python"]).samefile(sys.executable)
    assert any(p.startswith("pytest==") for p in marker["packages"])
    assert json.loads((tmp_path / "env.json").read_text()) == marker


def test_an_environment_gets_its_packages_from_where_pip_is_told_to_look(tmp_path, monkeypatch):
    """uv installs what pip would: a package only pip's settings find (a folder of
    wheels, every index off, both given as PIP_* variables) is installed."""
    import subprocess
    import venv
    import zipfile

    from helixbench.environments import install_packages

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    info = "hbprobe-1.0.dist-info"
    with zipfile.ZipFile(wheels / "hbprobe-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("hbprobe.py", "FOUND = 'from the folder pip was given'\n")
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: hbprobe\nVersion: 1.0\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    python = str(tmp_path / "venv" / "bin" / "python")
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_CONFIG_FILE": os.devnull}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    install_packages(python, ["hbprobe==1.0"])
    with pytest.raises(subprocess.CalledProcessError):  # nowhere else to look
        install_packages(python, ["hbprobe==2.0"])
    done = subprocess.run([python, "-c", "import hbprobe; print(hbprobe.FOUND)"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.stdout.strip() == "from the folder pip was given", done.stderr
    # Byte-compiled as installed: where PYTHONDONTWRITEBYTECODE is set nothing else would.
    assert list((tmp_path / "venv").rglob("__pycache__/hbprobe.*.pyc"))


def test_an_original_is_planned_with_its_code_environment_and_header_snapshot(mirror):
    spec = resolve_method(
        "main", {"main": {"kind": "agent", "original": "genegpt-main", "mask": "001001"}}
    )
    assert spec["python"] == "resources/envs/genegpt-main/env.json"
    assert spec["reply_cap"] == 10_000 and spec["mode"] == "per-question"
    assert "--mask" in spec["command"] and spec["command"][spec["command"].index("--mask") + 1]
    config = {
        "benchmarks": ["geneturing"],
        "models": {"smollm2": dict(SMOLLM2)},
        "methods": {"main": {"kind": "agent", "original": "genegpt-main", "mask": "001001"}},
        "runs": [{"model": "smollm2", "method": "main", "tasks": ["Gene alias"]}],
    }
    run = build_plan(config, mirror).runs[0]
    prefix = f"resources/upstream/raw.githubusercontent.com/{GENEGPT_REPO}/{GENEGPT_COMMIT}"
    assert {f"{prefix}/main.py", f"{prefix}/config.py"} <= set(run.data_paths)
    assert "resources/envs/genegpt-main/env.json" in run.data_paths
    assert run.snapshot_paths  # main.py's header calls get the snapshot's replies
    config["methods"]["slim"] = {"kind": "genegpt", "mask": "001001"}
    config["runs"][0] = {"model": "smollm2", "methods": ["slim", "main"], "tasks": ["Gene alias"]}
    (runs,) = protocol_runs(build_plan(config, mirror)).values()  # paired in Protocols
    assert [protocol_of(r) for r in runs] == ["text protocol", "GeneGPT main.py (original)"]
    config["runs"][0] = {"model": "smollm2", "method": "main", "benchmarks": ["genesets"]}
    with pytest.raises(ConfigError, match="genegpt-main answers geneturing, genehop only"):
        build_plan(config, mirror)
    with pytest.raises(ValueError, match="unknown original 'genegpt'"):
        resolve_method("x", {"x": {"kind": "agent", "original": "genegpt"}})


@pytest.mark.slow
def test_genegpt_main_py_sends_the_prompts_of_our_loop_with_smollm2(mirror, tmp_path, smollm2_dir):
    """The cross-check of issue 28 on one question (a sample of one of Protein-coding
    genes; SmolLM2 answers it in one call). main.py asks for 512 tokens, as our loop
    does: the model's own cap (``max_tokens``) holds both to 48, a few seconds a call.
    The header is the LMP10 demonstration's (858 tokens; with BLAST's, 4,108 to encode
    on one thread): main.py makes all seven header calls whatever the mask, and the
    recorded runs check the BLAST demonstration's text byte for byte."""
    models = tmp_path / "resources" / "models"  # converted once for every test
    models.mkdir(parents=True)
    (models / converted_name(SMOLLM2)).symlink_to(smollm2_dir, target_is_directory=True)
    config = {
        "benchmarks": ["geneturing"],
        "shards": 1,
        "tools": {"mode": "offline", "seed": [{"recording": "genegpt-2023", "masks": ["111111"]}]},
        "models": {"smollm2": {**SMOLLM2, "threads": 1, "max_tokens": 48}},
        "methods": {
            "genegpt-slim": {"kind": "genegpt", "mask": "001000"},
            "genegpt-main": {
                "kind": "agent",
                "original": "genegpt-main",
                "mask": "001000",
                "sleep_scale": 0,
            },
        },
        "runs": [
            {
                "model": "smollm2",
                "methods": ["genegpt-slim", "genegpt-main"],
                "tasks": ["Protein-coding genes"],
                "sample": 1,
            }
        ],
    }
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    methods = ("genegpt-slim", "genegpt-main")
    shards = {m: planned_run(config, mirror, "smollm2", m).shard_paths()[0] for m in methods}
    for method in ("genegpt-slim", "genegpt-main"):  # ours first: main.py's calls then hit
        done = run_snakemake(tmp_path, config, "--cores", "2", shards[method], env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    ours = read_records(tmp_path / shards["genegpt-slim"])
    theirs = read_records(tmp_path / shards["genegpt-main"])
    assert len(ours) == len(theirs) == 1
    ours, theirs = ours[0], theirs[0]
    assert theirs["question_id"] == ours["question_id"] and theirs["error"] is None
    assert theirs["answer"] == ours["answer"]
    our_calls = [e["data"] for e in ours["events"] if e["type"] == "model"]
    their_calls = [e["data"] for e in theirs["events"] if e["type"] == "model"]
    assert len(their_calls) == len(our_calls) >= 1
    assert all(call["completion_tokens"] <= 48 for call in our_calls)
    for mine, upstreams in zip(our_calls, their_calls, strict=True):
        assert upstreams["prompt_sha256"] == mine["prompt_sha256"]
        assert upstreams["prompt_sha256"] == sha256_text(upstreams["prompt_increment"])
        assert upstreams["cache"] == "hit"
    # main.py's header calls (7, BLAST's Put and Get among them) got the snapshot's
    # replies; its sleeps were asked, scaled to none, and recorded: 1 s before each of
    # the 7 calls, 30 s before the BLAST Get, and before the model call 3.1 s less the
    # time since main.py started its clock (so a little under 40.1 s in all).
    tools = [e["data"] for e in theirs["events"] if e["type"] == "tool"]
    assert len(tools) == 7 and {t["cache"] for t in tools} == {"snapshot"}
    agent = next(e["data"] for e in theirs["events"] if e["type"] == "agent")
    sleep = agent["runner"]["sleep"]
    assert (sleep["scale"], sleep["calls"], sleep["slept_s"]) == (0.0, 9, 0.0)
    assert 37.0 + 3.0 < sleep["asked_s"] <= 40.1
    built = json.loads((tmp_path / "resources/envs/genegpt-main/env.json").read_text())
    assert "openai==0.27.7" in built["packages"] and Path(built["python"]).is_file()


@pytest.mark.slow
def test_main_cascade_sends_geneagents_prompts_so_every_call_is_a_cache_hit(mirror, tmp_path):
    """GeneAgent's cross-check: ``geneagent`` (prompts: upstream) on one toy set with a
    scripted chat model answering in GeneAgent's formats (a Process line, JSON claims,
    legacy function calls over upstream's eight functions, a reply without "Report:",
    a call that fails, reports), then main_cascade.py itself through the gateways:
    every one of its model calls is a response-cache hit, the same number of calls,
    the same answer."""
    from .support.geneset_servers import GeneSetServer

    script = [
        "Process: Nuclear lamina maintenance\nZMPSTE24 processes prelamin A for LMNA.",
        '["ZMPSTE24,BANF1,WRN,LMNA maintain the nuclear lamina"]',
        {"tool_calls": [("get_enrichment_for_gene_set", {"gene_set": "ZMPSTE24,LMNA"})]},
        "Supported, I think.",  # no "Report: ": upstream's nudge follows
        "Report: Supported. g:Profiler lists a process of ZMPSTE24.",
        "Process: Nuclear lamina maintenance\nZMPSTE24 and LMNA keep the lamina.",
        '["LMNA encodes lamin A/C, a nuclear envelope protein."]',
        {"tool_calls": [("get_gene_summary_for_single_gene", {"gene_name": "LMNA"})]},
        "Report: Partially supported.",
        "Process: Nuclear lamina maintenance\nFinal: ZMPSTE24 and LMNA keep the lamina.",
    ]
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    with GeneSetServer() as services, OpenAIServer() as llm:
        llm.state.script.extend(script)
        config = {
            "benchmarks": ["genesets"],
            "shards": 1,
            "tools": {"mode": "live", "routes": services.routes()},
            "models": {"llm": llm.chat_model()},
            "methods": {
                "geneagent": {"kind": "geneagent"},
                "geneagent-cascade": {
                    "kind": "agent",
                    "original": "geneagent-cascade",
                    "sleep_scale": 0,
                },
            },
            "runs": [
                {
                    "model": "llm",
                    "methods": ["geneagent", "geneagent-cascade"],
                    "tasks": ["MSigDB toy"],
                    "sample": 1,
                }
            ],
        }
        methods = ("geneagent", "geneagent-cascade")
        shard = {m: planned_run(config, mirror, "llm", m).shard_paths()[0] for m in methods}
        for method in ("geneagent", "geneagent-cascade"):  # ours first: upstream's then hit
            done = run_snakemake(tmp_path, config, "--cores", "2", shard[method], env=env)
            assert done.returncode == 0, done.stderr[-3000:]
        assert not llm.state.script  # ours made every scripted call
        asked = len(llm.state.received)
    assert asked == len(script)  # main_cascade.py asked the server nothing
    (ours,) = read_records(tmp_path / shard["geneagent"])
    (theirs,) = read_records(tmp_path / shard["geneagent-cascade"])
    assert ours["error"] is None and theirs["error"] is None, theirs["events"][-1]
    assert theirs["answer"] == ours["answer"] == "Nuclear lamina maintenance"
    our_calls = [e["data"] for e in ours["events"] if e["type"] == "model"]
    their_calls = [e["data"] for e in theirs["events"] if e["type"] == "model"]
    assert len(their_calls) == len(our_calls) == len(script)
    assert all(call["cache"] == "hit" for call in their_calls), [c["cache"] for c in their_calls]
    tools = [e["data"] for e in theirs["events"] if e["type"] == "tool"]
    assert [t["route"] for t in tools] == ["biit.cs.ut.ee"]  # the one request, routed
