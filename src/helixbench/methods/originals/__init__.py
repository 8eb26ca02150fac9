"""The seed systems as their authors wrote them, run unchanged as ``kind: agent``.

A method ``{kind: agent, original: <name>}`` runs one of these through helixbench's
gateways: its code is fetched like every pinned upstream file (by URL at the pinned
commit, sha256 checked) into ``resources/upstream/``, its packages are the versions
upstream pins, in an environment of its own that the ``original_env`` rule builds
(``workflow/envs/originals/<name>.yaml``), and a small runner beside this file (one
per system, standard library only, run by that environment's Python) starts it: it
points the system's client at the model gateway, feeds it the question the way the
system reads its data, and reads the answer where the system writes it.

What the runners change, all of it outside the systems' code, is listed in each
runner's docstring and reported in every record: the client's base URL and key (the
gateway's, never a real key), the data file the system reads (one question), what
it would download on start (GeneAgent's tiktoken ranks, BRAD's hub models: from
installed packages, offline), and upstream's fixed sleeps, scaled by
``sleep_scale`` (1: as written; GeneGPT sleeps 3.1 s between model calls, 1 s
before each NCBI call and 30 s before each BLAST Get, so a question takes a minute
at 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ...datasets.upstream import (
    GENEAGENT_COMMIT,
    GENEAGENT_REPO,
    GENEGPT_COMMIT,
    GENEGPT_REPO,
    lookup,
)
from ...environments import environment_python
from ...paths import ORIGINAL_ENV, ORIGINAL_PREPARED, UPSTREAM_DIR
from ...retrieval import GENEAGENT_SYNOPSES

RUNNERS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Original:
    """One seed system: its upstream code, its environment, its runner, and the method
    kind helixbench re-implements it as (the report pairs the two)."""

    name: str
    label: str  # how the report names it
    repo: str  # the upstream repository of its files
    commit: str
    files: tuple[str, ...]  # what it reads (its code; BRAD: the corpus), pinned paths of repo
    runner: str  # file beside this one
    reimplementation: str  # the method kind of helixbench's own version
    benchmarks: tuple[str, ...]  # the benchmarks it answers (a config error elsewhere)
    reply_cap: int | None = None  # bytes of a tool reply the system keeps
    mode: str = "per-question"
    extra_args: tuple[str, ...] = ()  # more of the runner's arguments
    paths: tuple[str, ...] = ()  # more it reads (placeholders as in command), read-only
    # Whether its runner builds something first (``--prepare``: BRAD-Agent's database),
    # run by the prepare_original rule outside the sandbox (:func:`prepare`).
    prepares: bool = False
    timeout_s: float = 900.0

    @property
    def environment(self) -> str:
        return self.name

    @property
    def env_marker(self) -> str:
        return ORIGINAL_ENV.format(env=self.environment)

    @property
    def prepared_marker(self) -> str | None:
        return ORIGINAL_PREPARED.format(original=self.name) if self.prepares else None

    def upstream_files(self) -> list:
        return [lookup(self.repo, path, self.commit) for path in self.files]

    def command(self) -> list[str]:
        # {runners} and {upstream_dir} are filled in by the run job (methods.agent), so
        # a moved checkout or working directory changes no run's spec.
        return ["{python}", "{runners}/" + self.runner, "{answer_file}"]


ORIGINALS = {
    o.name: o
    for o in (
        Original(
            "genegpt-main",
            "GeneGPT main.py (original)",
            GENEGPT_REPO,
            GENEGPT_COMMIT,
            ("main.py", "config.py"),
            "genegpt_main.py",
            "genegpt",
            ("geneturing", "genehop"),
            reply_cap=10_000,  # main.py keeps a reply's first 10,000 bytes
        ),
        Original(
            "geneagent-cascade",
            "GeneAgent main_cascade.py (original)",
            GENEAGENT_REPO,
            GENEAGENT_COMMIT,
            (
                "main_cascade.py",
                "worker.py",
                *(
                    f"apis/{name}.py"
                    for name in (
                        "get_complex_for_gene_set",
                        "get_disease_for_single_gene",
                        "get_domain_for_single_gene",
                        "get_enrichment_for_gene_set",
                        "get_gene_summary_for_single_gene",
                        "get_interactions_for_gene_set",
                        "get_pathway_for_gene_set",
                        "get_pubmed_articles",
                    )
                ),
            ),
            "geneagent_cascade.py",
            "geneagent",
            ("genesets",),
        ),
        Original(
            "brad-agent",
            "BRAD-Agent 0.1.34 (original)",
            GENEAGENT_REPO,  # the package is BRAD's code; the corpus is GeneAgent's
            GENEAGENT_COMMIT,
            GENEAGENT_SYNOPSES,
            "brad_agent.py",
            "brad",
            ("geneturing", "genehop", "genesets"),
            mode="long-lived",  # BRAD takes a minute to start (router, database)
            extra_args=("--db-dir", "{upstream_dir}/../index/brad-agent"),
            prepares=True,
        ),
    )
}


def original(name: str) -> Original:
    try:
        return ORIGINALS[name]
    except KeyError:
        raise ValueError(f"unknown original {name!r}; available: {', '.join(ORIGINALS)}") from None


def complete_spec(spec: dict) -> dict:
    """An ``agent`` method spec naming an ``original``, with what runs it filled in
    (settings the config states are kept): the runner as ``command``, the built
    environment as ``python``, and the upstream files the run job reads."""
    system = original(spec["original"])
    files = [f.relpath for f in system.upstream_files()]
    args = ["--upstream", "{upstream_dir}/" + str(Path(files[0]).parent), *system.extra_args]
    if "mask" in spec:
        args += ["--mask", spec["mask"]]
    args += ["--sleep-scale", str(spec.get("sleep_scale", 1))]
    filled = {
        "command": system.command() + args,
        "python": system.env_marker,
        "mode": system.mode,
        "timeout_s": system.timeout_s,
        "upstream": files,
        "paths": ["{runners}", *system.paths],  # (runner_common.py beside each runner)
    }
    if system.reply_cap is not None:
        filled["reply_cap"] = system.reply_cap
    if system.prepared_marker:
        filled["prepared"] = system.prepared_marker
    return {**filled, **spec}


def prepare(name: str, env_marker: str, out: Path) -> dict:
    """Run an original's ``--prepare`` step in its own environment, outside the agent
    sandbox (the ``prepare_original`` job), and write its marker ``out``."""
    spec = complete_spec({"original": name})
    values = {
        "python": environment_python(env_marker),
        "runners": str(RUNNERS_DIR),
        "upstream_dir": os.path.abspath(UPSTREAM_DIR),
        "answer_file": "-",
    }
    argv = [a.format(**values) for a in spec["command"]] + ["--prepare"]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{name} --prepare failed: {done.stderr[-3000:]}")
    marker = {
        "original": name,
        "built": done.stdout.strip().splitlines()[-1:],
        "seconds": round(time.perf_counter() - started, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(marker, indent=1) + "\n")
    return marker
