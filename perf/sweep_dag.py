"""Seconds to build the job graph of a large sweep: 10 models x 64 masks x 12 tasks.

Run on demand:  HELIXBENCH_MIRROR=../shared/mirror python perf/sweep_dag.py
Target (issue 7): under 10 s on a 2-core machine.

The sweep is one `runs` entry: 10 OpenAI-compatible models (nothing is called: a
dry run) crossed with all 64 GeneGPT masks, on GeneTuring (9 tasks) and GeneHop
(3 tasks): 7,680 (model, mask, task) triples. A run (model x mask) is the job unit,
here in one shard: 640 run jobs, 640 score jobs, the snapshot and the report.
`--models 1 --masks 1 --shards 1000` measures the other end: one run in the
schema's largest number of shards. Prints the time `snakemake --dry-run` takes
from start to exit (the whole command: start-up, config validation, the plan, the
graph), and the plan alone.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.config import build_plan  # noqa: E402
from helixbench.datasets.fetch import resolve_mirror  # noqa: E402


def sweep_config(n_models: int = 10, n_masks: int = 64, shards: int = 1) -> dict:
    models = {
        f"model-{i}": {
            "backend": "openai",
            "model": f"model-{i}",
            "base_url": "http://localhost:8000/v1",
            "api_key_env": None,
        }
        for i in range(n_models)
    }
    masks = ["".join(bits) for bits in itertools.product("01", repeat=6)][:n_masks]
    return {
        "benchmarks": ["geneturing", "genehop"],
        "shards": shards,
        "models": models,
        "runs": [{"models": list(models), "methods": [f"genegpt-{m}" for m in masks]}],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--masks", type=int, default=64, help="the first N of the 64 masks")
    parser.add_argument("--shards", type=int, default=1, help="run jobs per run (the cap's test)")
    args = parser.parse_args()
    config = sweep_config(args.models, args.masks, args.shards)
    started = time.perf_counter()
    plan = build_plan(config, resolve_mirror(None))
    plan_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.yaml").write_text(yaml.safe_dump(config))
        command = [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "workflow" / "Snakefile"),
            "--directory",
            tmp,
            "--configfile",
            str(Path(tmp) / "config.yaml"),
            "--dry-run",
            "--quiet",
            "rules",
        ]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ)
        dry_s = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit((done.stdout + done.stderr)[-3000:])
    jobs = [line for line in done.stdout.splitlines() if line.startswith(("run_shard", "total"))]
    jobs = list(dict.fromkeys(jobs))  # Snakemake prints its job table twice
    print(f"run tasks in the plan     {len(plan.tasks)}")
    print(f"plan alone                {plan_s:.2f} s")
    print(f"snakemake --dry-run       {dry_s:.2f} s   (target < 10 s)")
    for line in jobs:
        print(f"  {line}")


if __name__ == "__main__":
    main()
