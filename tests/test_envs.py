"""Deployment: the per-rule conda environments (snakemake --sdm conda), the workflow
catalog's file and the test config (.test/config/config.yaml)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import yaml
from packaging.utils import canonicalize_name

from .conftest import REPO_ROOT
from .envs import ENVS_DIR, blocked_modules, env_files, env_requirements, helixbench_in_env
from .envs import project_requirements as project

RULES_DIR = REPO_ROOT / "workflow" / "rules"


def rule_names() -> list[str]:
    return [
        m for p in RULES_DIR.glob("*.smk") for m in re.findall(r"^rule (\w+):", p.read_text(), re.M)
    ]


def test_every_environment_parses_and_names_only_project_dependencies():
    assert [p.stem for p in env_files()] == ["fetch", "local", "report", "run", "score"]
    for path in env_files():
        spec = yaml.safe_load(path.read_text())
        assert set(spec) == {"channels", "dependencies"}, path.name
        assert spec["channels"][0] == "conda-forge" and "nodefaults" in spec["channels"]
        assert "python=3.11" in spec["dependencies"], path.name
        for requirement in env_requirements(path):
            name = canonicalize_name(requirement.name)
            assert name in project(), f"{path.name}: {name} is not a dependency of the project"
            # The same constraint as pyproject.toml's: an environment never drifts.
            assert requirement.specifier == project()[name].specifier, (path.name, name)


def test_fetch_and_report_need_no_torch_and_local_models_do():
    names = {p.stem: {canonicalize_name(r.name) for r in env_requirements(p)} for p in env_files()}
    heavy = {"torch", "transformers", "sentence-transformers", "chromadb"}
    assert not heavy & (names["fetch"] | names["report"] | names["run"])
    assert heavy <= names["local"] and "torch" in names["score"]
    assert "torch" in blocked_modules(ENVS_DIR / "report.yaml")


def test_every_rule_names_an_environment_and_every_environment_is_used():
    directives = []
    for path in sorted(RULES_DIR.glob("*.smk")):
        directives += re.findall(r"^    conda:\n        (\S+)\n", path.read_text(), re.M)
    assert len(directives) == len(rule_names())  # every rule of the workflow
    named = {m for d in directives for m in re.findall(r'ENVS\["(\w+)"\]', d)}
    assert "get_run_env" in directives  # run jobs: local.yaml or run.yaml by the run
    assert named | {"run", "local"} == {p.stem for p in env_files()}


def test_fetch_jobs_run_with_only_the_fetch_environment(mirror, tmp_path):
    """The fetch environment's jobs, for real, with every other package missing: fetch
    a recorded run, extract its snapshot, seed the tool cache from it."""
    from helixbench import paths
    from helixbench.sources.recordings import recorded_runs

    run = recorded_runs("genegpt-2023", "geneturing", "001001")[0]
    local = paths.upstream_path(run.file)
    steps = [
        ["fetch", local, "--mirror", str(mirror), "--lock", "lock.tsv"],
        ["snapshot", "--recording", local, "--recording-name", "genegpt-2023"]
        + ["--url", run.file.url, "--mask", "001001", "--out", "snapshot.json"],
        ["seed-cache", "--recording", "genegpt-2023", "--cache", "tools.sqlite"]
        + ["--out", "seed.json", local],
    ]
    for args in steps:
        done = helixbench_in_env("fetch", args, cwd=tmp_path)
        assert done.returncode == 0, (args[0], done.stderr[-2000:])
    assert json.loads((tmp_path / "seed.json").read_text())["files"][0]["replies"] > 0
    # The blocker works: a package the environment lacks cannot be imported.
    probe = helixbench_in_env("fetch", ["index", "--settings", "{}", "--out", "x"], cwd=tmp_path)
    assert probe.returncode != 0 and "not in this environment" in probe.stderr


def test_the_catalog_file_states_conda_and_the_report():
    catalog = yaml.safe_load((REPO_ROOT / ".snakemake-workflow-catalog.yml").read_text())
    usage = catalog["usage"]
    assert usage["software-stack-deployment"] == {
        "conda": True,
        "apptainer": False,
        "apptainer+conda": False,
    }
    assert usage["report"] is True and usage["mandatory-flags"]["flags"]
    for path in ("workflow/Snakefile", "config/README.md", "config/config.yaml"):
        assert (REPO_ROOT / path).is_file(), path


def _stand_in_conda(bin_dir: Path) -> None:
    """No conda on these machines: a stand-in for the three queries Snakemake makes
    before a dry run (version, info, channel priority). It builds nothing; a dry run
    creates no environment."""
    bin_dir.mkdir()
    script = bin_dir / "conda"
    info = {"conda_prefix": str(bin_dir.parent / "conda"), "platform": "linux-64"}
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  --version) echo 'conda 25.1.1';;\n"
        f"  info) echo '{json.dumps(info)}';;\n"
        """  config) echo '{"get": {"channel_priority": "strict"}}';;\n"""
        "  *) echo 'stand-in conda: only answers --version, info and config' >&2; exit 1;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def _dry_run(mirror: Path, *args: str, env: dict | None = None):
    environment = {**os.environ, "HELIXBENCH_MIRROR": str(mirror), **(env or {})}
    command = [sys.executable, "-m", "snakemake", "-n", "--directory", ".test", *args]
    return subprocess.run(
        command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=300
    )


def test_the_test_config_plans_every_rule_and_snakemake_finds_its_environments(mirror, tmp_path):
    """.test/config/config.yaml plans a job of every rule (but a seed system's own
    build, which config/examples/seed-systems.yaml plans), and under --sdm conda
    Snakemake finds each rule's environment file."""
    _stand_in_conda(tmp_path / "bin")
    path = f"{tmp_path / 'bin'}:{os.environ['PATH']}"
    done = _dry_run(
        mirror,
        "--sdm",
        "conda",
        "--conda-prefix",
        str(tmp_path / "envs"),
        "--printshellcmds",
        env={"PATH": path},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", out.split("Job stats:")[1], re.M))
    assert set(jobs) - {"all", "total"} == set(rule_names()) - {"prepare_original"}
    seeds = _dry_run(mirror, "--configfile", "config/examples/seed-systems.yaml")
    assert "prepare_original" in seeds.stdout + seeds.stderr, seeds.stderr[-2000:]
    created = {Path(p).name for p in re.findall(r"Conda environment (\S+) will be created", out)}
    assert created == {
        "fetch.yaml",
        "local.yaml",
        "run.yaml",
        "score.yaml",
        "report.yaml",
        "genegpt-main.yaml",
        "inspect.yaml",
    }


def test_run_jobs_take_the_local_stack_only_for_local_models_and_indexes(mirror):
    """Which environment a run job gets (workflow/rules/common.smk, get_run_env)."""
    from helixbench.config import build_plan

    config = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())
    api = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    config["models"]["api"] = api
    config["methods"]["brad-api"] = {"kind": "brad"}
    config["runs"].append({"model": "api", "methods": ["genegpt-slim", "brad-api"]})
    local = {r.label: r.needs_local_stack for r in build_plan(config, mirror).runs}
    assert local == {
        "codex / genegpt-slim": False,
        "codex / genegpt-full": False,
        "codex / genegpt-101110": False,
        "smollm2 / genegpt-slim-short": True,
        "smollm2-chat / closed-book-short": True,
        "gprofiler / gsea-top1": False,
        "api / genegpt-slim": False,
        "api / brad-api": True,  # embeds its queries against the corpus index
    }
