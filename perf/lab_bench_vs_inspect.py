"""helixbench and Inspect on the same LAB-Bench questions, against the same server.

A loopback OpenAI-compatible server answers every completion after ``--latency``
seconds. helixbench asks LAB-Bench's DbQA and SeqQA (1,120 questions) with the
``no-tools`` method in its ``inspect`` variant (inspect_evals' template), the whole
workflow to its report (``snakemake --cores``, ``concurrency`` in flight); then Inspect
runs inspect_evals 0.26.0's own ``lab_bench_dbqa`` and ``lab_bench_seqqa`` on the same
rows (``tests/support/inspect_lab_bench.py``, ``--max-connections`` as many) from
Inspect's environment. Prints each harness's wall time, all included, its requests,
and the floor (questions x latency / requests in flight).

The first call prepares a working directory (the upstream files, the question table,
Inspect's environment from the package registry, the peers' templates), untimed;
each timed run starts without a model cache or results.

    HELIXBENCH_MIRROR=../shared/mirror python perf/lab_bench_vs_inspect.py \\
        [--latency 1] [--concurrency 64] [--workdir .perf-lab-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.datasets.fetch import resolve_mirror  # noqa: E402
from helixbench.environments import environment_python  # noqa: E402
from helixbench.loopback.openai import OpenAIServer, OpenAIServerState  # noqa: E402
from helixbench.paths import PEER_ENV, PEER_TEMPLATES  # noqa: E402

DRIVER = ROOT / "tests" / "support" / "inspect_lab_bench.py"
QUESTIONS = 1120


def snakemake(work: Path, config: Path, cores: int, *targets: str) -> list[str]:
    snakefile = ROOT / "workflow" / "Snakefile"
    return [
        sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(work),
        "--configfile", str(config), "--cores", str(cores), *targets,
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=ROOT / ".perf-lab-bench")
    args = parser.parse_args()
    mirror = resolve_mirror(os.environ.get("HELIXBENCH_MIRROR"))
    work = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    state = OpenAIServerState(latency_s=args.latency, replies=lambda prompt: "ANSWER: A")
    with OpenAIServer(state) as server:
        config = {
            "benchmarks": ["labbench-dbqa", "labbench-seqqa"],
            "shards": 1,
            "models": {
                "served": {
                    "backend": "openai",
                    "api": "chat",
                    "model": "m",
                    "api_key_env": None,
                    "base_url": server.base_url,
                    "concurrency": args.concurrency,
                },  # fmt: skip
            },
            "methods": {"asked": {"kind": "no-tools", "choices": "inspect"}},
            "runs": [{"model": "served", "method": "asked"}],
        }
        configfile = work / "lab-bench.yaml"
        configfile.write_text(yaml.safe_dump(config))
        print("preparing (untimed): upstream files, Inspect's environment, the templates")
        targets = (PEER_TEMPLATES, "resources/benchmarks/questions.jsonl")
        ready = subprocess.run(
            snakemake(work, configfile, args.cores, *targets),
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        if ready.returncode != 0:
            sys.exit(ready.stderr[-3000:])
        for stale in ("results", "resources/cache"):
            shutil.rmtree(work / stale, ignore_errors=True)
        before = len(server.state.received)
        started = time.perf_counter()
        ours = subprocess.run(snakemake(work, configfile, args.cores), env=env,
                              capture_output=True, text=True)  # fmt: skip
        ours_s = time.perf_counter() - started
        if ours.returncode != 0:
            sys.exit(ours.stderr[-3000:])
        ours_requests = len(server.state.received) - before

        root = next((mirror / "raw.githubusercontent.com/ScienceOne-AI/ScienceEval").glob(
            "*/benchmarks/LAB-Bench"))  # fmt: skip
        python = environment_python(str(work / PEER_ENV))
        peer_env = {
            "PATH": os.environ["PATH"], "HOME": str(work), "HF_HOME": str(work / "hf"),
            "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
            "LOOP_BASE_URL": server.base_url, "LOOP_API_KEY": "none",
        }  # fmt: skip
        out = work / "inspect.json"
        before = len(server.state.received)
        started = time.perf_counter()
        peer = subprocess.run(
            [python, str(DRIVER), str(root), "DbQA,SeqQA", "openai-api/loop/m", str(out),
             "--max-connections", str(args.concurrency), "--log-dir", str(work / "inspect-logs")],
            env=peer_env, capture_output=True, text=True,
        )  # fmt: skip
        theirs_s = time.perf_counter() - started
        if peer.returncode != 0:
            sys.exit(peer.stderr[-3000:])
        theirs_requests = len(server.state.received) - before
    statuses = {part: r["status"] for part, r in json.loads(out.read_text()).items()}
    floor = QUESTIONS * args.latency / args.concurrency
    print(f"{QUESTIONS} LAB-Bench questions (DbQA, SeqQA), {args.latency:g} s a completion, "
          f"{args.concurrency} in flight; floor {floor:.1f} s")  # fmt: skip
    print(f"{'harness':<34} {'wall s':>7} {'requests':>9} {'x floor':>8}")
    rows = [
        ("helixbench (snakemake, to report)", ours_s, ours_requests),
        ("Inspect (inspect_evals lab_bench)", theirs_s, theirs_requests),
    ]
    for name, seconds, requests in rows:
        print(f"{name:<34} {seconds:>7.1f} {requests:>9} {seconds / floor:>8.2f}")
    print(f"Inspect's tasks: {statuses}; helixbench / Inspect: {ours_s / theirs_s:.2f}")


if __name__ == "__main__":
    main()
