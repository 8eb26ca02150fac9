"""The workflow on a real SLURM cluster: a single node started by the test from
Debian's packages (see tests/slurm_cluster.py), through Snakemake's SLURM executor
and the project's SLURM profile, must give the results a local run gives.

Where the daemons cannot start, the test fails and says why; it never skips.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helixbench.datasets.jsonfiles import read_text
from helixbench.transcripts import read_records, without_timings

from .conftest import REPO_ROOT, run_snakemake
from .support.slurm_cluster import SlurmCluster, installed

PROFILE = REPO_ROOT / "workflow" / "profiles" / "slurm"
TASKS = ["Gene alias", "SNP location"]
CONFIG = {
    "benchmarks": ["geneturing"],
    "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
    "runs": [
        {"model": "codex", "method": "genegpt-slim", "tasks": TASKS, "shards": 4},
        {"model": "codex", "method": "genegpt-full", "tasks": TASKS, "shards": 4},
    ],
    "report": {"exports": ["every-eval-ever"]},
}


def results(workdir: Path) -> dict:
    """Every shard's records (timings aside) and every run's scores, by path."""
    out = {}
    for path in sorted((workdir / "results" / "runs").rglob("*.jsonl.zst")):
        out[str(path.relative_to(workdir))] = [without_timings(r) for r in read_records(path)]
    for path in sorted((workdir / "results" / "scores").rglob("*.jsonl.zst")):
        out[str(path.relative_to(workdir))] = read_text(path)
    out["scores.csv.gz"] = read_text(workdir / "results" / "report" / "scores.csv.gz")
    return out


@pytest.mark.slow
@pytest.mark.slurm
def test_slurm_run_equals_local_run(mirror, tmp_path):
    installed()  # (a missing SLURM says so at once, not after the local run)
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    local = run_snakemake(tmp_path / "local", CONFIG, "--cores", "2", env=env)
    assert local.returncode == 0, local.stderr[-3000:]

    with SlurmCluster(tmp_path / "cluster", memory_mb=4000) as cluster:
        done = run_snakemake(
            tmp_path / "slurm",
            CONFIG,
            "--profile",
            str(PROFILE),
            "--jobs",
            "4",
            "--default-resources",
            "slurm_partition=test",
            "mem_mb=300",
            "runtime=10",
            "--set-resources",
            "run_shard:mem_mb=300",
            "--group-components",
            "shards=3",
            "--latency-wait",
            "5",
            env={**env, "SLURM_CONF": str(cluster.conf)},
        )
        log = done.stdout + done.stderr
        assert done.returncode == 0, log[-4000:] + "\n" + cluster.logs()
        jobs = subprocess.run(
            ["squeue", "-h", "-t", "all", "-o", "%i %j %T"],
            capture_output=True,
            text=True,
            env=cluster.env,
        ).stdout.split("\n")
    submitted = [j for j in jobs if j.strip()]
    # 2 runs (each over 2 tasks) x 4 shards = 8 shard jobs, grouped 3 to a SLURM job;
    # and the 2 runs' score jobs (scores and summary) and exports, grouped
    # (summaries=25) as they are ready: at least one SLURM job, at most one each.
    assert 3 + 1 <= len(submitted) <= 3 + 4, submitted
    assert all(j.endswith("COMPLETED") for j in submitted), submitted
    assert results(tmp_path / "slurm") == results(tmp_path / "local")
    scores = read_text(tmp_path / "slurm" / "results" / "report" / "scores.csv.gz")
    assert "Gene alias" in scores and "SNP location" in scores
    json.loads((tmp_path / "slurm" / "results" / "report" / "provenance.json").read_text())
