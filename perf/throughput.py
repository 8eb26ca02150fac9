"""A served model at the speed of its server: the whole workflow against a loopback
OpenAI-compatible server of a given latency and capacity.

Starts the server (every completion takes ``--latency`` s; past ``--capacity``
requests at once it answers 429; ``--refuse-rate`` of the others too), runs the
workflow from an empty working directory on ``--questions`` GeneTuring questions
(``snakemake --cores``, upstream files from the mirror) and prints the wall time
from the command to its exit, the server's peak and mean requests in flight, the
floor (model calls x latency / the width the server allows) and the ratio to it.

``--protocol``: ``no-tools`` (one chat call a question), ``function-calling`` (the
server calls ``esearch`` ``--tool-rounds`` times, answered by a loopback NCBI that
enforces 3 requests/s: the floor is then the larger of the model's and NCBI's;
with ``--tool blast`` each call is a BLAST search instead: Put, status checks
after RTOE 2 s, Get, BLAST contacts limited to ``--blast-rate`` a second, a
faster clock than NCBI's one per 10 s) or ``genegpt`` (GeneGPT's text protocol,
legacy completions; the server answers at once with an answer line).
``--vs-inspect PYTHON``: the same questions through Inspect AI (installed in a
scratch venv whose Python is given; never a dependency of helixbench), on the
same server, with ``--max-connections`` = ``--concurrency``.

    HELIXBENCH_MIRROR=../shared/mirror python perf/throughput.py \\
        --questions 450 --latency 1 --concurrency 64
    ... --capacity 32 --concurrency 64            # a server that allows 32
    ... --protocol function-calling --questions 90 --concurrency 16

Targets on 2 cores: 450 no-tools questions at 1 s and 64 in flight within 1.5x the
floor plus 10 s and faster than Inspect's wall; capacity 32 with 64 asked: 0 lost
questions and within 1.5x of the 32-wide floor.

Measured on 2 cores (2026-12-06, `--warm --pairs 3`, the mirror): helixbench 17.2 s
median for the whole `snakemake` command (17.2, 16.4, 17.4; 8.1 s of requests, the
floor 7.0 s), Inspect AI 0.3.285 18.2 s (18.2, 17.4, 19.5) on the same server,
alternating; helixbench ahead in each pair. Of helixbench's rest: Snakemake's own
start and exit (about 1.8 s on a run with nothing to do), the DAG, a run shard's start
1.3 s, the score job (scores and the run's summary) 0.5 s and the report job 1.9 s.
Before the score job wrote the summary and before Snakemake stopped hashing the
report's inputs once per output, the same pairs gave 18.1 s against Inspect's 16.9 s.
Again on 2026-12-07 (the report reading the runs' question files in place): helixbench
16.3 s (16.3, 15.1, 17.9), Inspect AI 22.5 s (19.4, 22.5, 23.9).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.datasets.fetch import resolve_mirror  # noqa: E402
from helixbench.loopback.ncbi import NCBIServer, NCBIServerState  # noqa: E402
from helixbench.loopback.openai import OpenAIServer, OpenAIServerState  # noqa: E402

TASKS = 9  # GeneTuring's
QUESTIONS = "resources/benchmarks/questions.jsonl"


def snakemake(work: Path, configfile: Path, cores: int, *args: str) -> list[str]:
    """The workflow's command line in ``work``."""
    snakefile = ROOT / "workflow" / "Snakefile"
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(work)]
    return [*command, "--configfile", str(configfile), "--cores", str(cores), *args]


def config(args, server: OpenAIServer, ncbi: NCBIServer | None) -> dict:
    chat = args.protocol != "genegpt"
    model = {
        "backend": "openai",
        "api": "chat" if chat else "completions",
        "model": "m",
        "base_url": server.base_url,
        "api_key_env": None,
        "concurrency": args.concurrency,
        "retries": 8,
    }
    method = {"no-tools": "no-tools", "function-calling": "fc", "genegpt": "genegpt-slim"}
    cfg = {
        "benchmarks": ["geneturing"],
        "shards": args.shards,
        "models": {"served": model},
        "methods": {"fc": {"kind": "function-calling", "demonstrations": False}},
        "runs": [
            {
                "model": "served",
                "method": method[args.protocol],
                "sample": math.ceil(args.questions / TASKS),
            }
        ],
    }
    if ncbi is not None:
        cfg["tools"] = {"mode": "live", "routes": ncbi.routes()}
        if args.tool == "blast":  # NCBI's BLAST rules on a faster clock
            cfg["tools"]["rates"] = {"blast.ncbi.nlm.nih.gov": args.blast_rate}
            cfg["tools"]["blast"] = {"poll_interval_s": 1.0}
    return cfg


def run_helixbench(args, mirror: Path) -> dict:
    state = OpenAIServerState(
        latency_s=args.latency,
        capacity=args.capacity,
        refuse_rate=args.refuse_rate,
        tool_rounds=args.tool_rounds if args.protocol == "function-calling" else 0,
    )
    ncbi_state = NCBIServerState(eutils_rate=3.0, rtoe=2, blast_interval=1 / args.blast_rate)
    state.tool_name = args.tool
    with OpenAIServer(state) as server, NCBIServer(ncbi_state) as ncbi:
        use_ncbi = args.protocol == "function-calling"
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "config.yaml").write_text(
                yaml.safe_dump(config(args, server, ncbi if use_ncbi else None))
            )
            command = snakemake(work, work / "config.yaml", args.cores, "--quiet", "rules")
            env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
            if args.warm:  # upstream files and questions in place, as on a second run
                questions = [*command[:-2], QUESTIONS]
                warmed = subprocess.run(questions, capture_output=True, text=True, env=env)
                if warmed.returncode != 0:
                    sys.exit((warmed.stdout + warmed.stderr)[-4000:])
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            wall = time.perf_counter() - started
            if done.returncode != 0:
                sys.exit((done.stdout + done.stderr)[-4000:])
            errors = list(csv.DictReader(gzip.open(work / "results/report/errors.csv.gz", "rt")))
            questions = sum(int(r["questions"]) for r in errors)
            ncbi_calls = len(ncbi.state.received)
            ncbi_429 = sum(r.status == 429 for r in ncbi.state.received)
            mono_offset = time.time() - time.monotonic()  # the model server logs monotonic
            times = [t + mono_offset for t, _ in state.in_flight_log]
            times += [r.at for r in ncbi.state.received]
    calls = sum(1 for p, _, _ in state.received if p.endswith("completions"))
    served = calls - state.refused
    width = min(args.concurrency, args.capacity or args.concurrency)
    floor = served * args.latency / width
    if use_ncbi:  # NCBI's own limit, where it binds: E-utils 3/s, BLAST contacts
        rate = args.blast_rate if args.tool == "blast" else 3.0
        floor = max(floor, ncbi_calls / rate)
    return {
        "wall_s": wall,
        "requests_s": max(times) - min(times) if times else 0.0,
        "questions": questions,
        "model_calls": served,
        "refused_429": state.refused,
        "peak": state.peak_in_flight,
        "mean": server.mean_in_flight(),
        "floor_s": floor,
        "ncbi_requests": ncbi_calls,
        "ncbi_429": ncbi_429,
    }


INSPECT_TASK = """
import json
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.solver import generate

@task
def geneturing():
    rows = [json.loads(line) for line in open({questions!r})]
    return Task(dataset=[Sample(input=r["text"], target=str(r["gold"])) for r in rows],
                solver=generate())
"""


def run_inspect(args, python: str, mirror: Path) -> dict:
    """The same questions through Inspect AI's generate() against the same server."""
    from helixbench.datasets.questions import read_questions
    from helixbench.datasets.selection import sample_questions

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # The questions helixbench asks: built by the workflow's own questions rule.
        subprocess.run(
            snakemake(work, ROOT / "config" / "config.yaml", args.cores, QUESTIONS),
            capture_output=True,
            env={**os.environ, "HELIXBENCH_MIRROR": str(mirror)},
            check=True,
        )
        every = read_questions(work / QUESTIONS)
        chosen = []
        for task in sorted({q.task for q in every if q.benchmark == "geneturing"}):
            of_task = [q for q in every if q.benchmark == "geneturing" and q.task == task]
            chosen += sample_questions(of_task, math.ceil(args.questions / TASKS))
        questions = work / "questions.jsonl"
        questions.write_text(
            "".join(json.dumps({"text": q.text, "gold": q.gold}) + "\n" for q in chosen)
        )
        task_file = textwrap.dedent(INSPECT_TASK.format(questions=str(questions)))
        (work / "task.py").write_text(task_file)
        state = OpenAIServerState(latency_s=args.latency, capacity=args.capacity)
        with OpenAIServer(state) as server:
            env = {
                **os.environ,
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "not-needed",
                "INSPECT_LOG_DIR": str(work / "logs"),
            }
            command = [
                python,
                "-m",
                "inspect_ai",
                "eval",
                "task.py",
                "--model",
                "openai/m",
                "-M",
                "responses_api=false",  # chat completions, as helixbench sends
                "--max-connections",
                str(args.concurrency),
                "--display",
                "none",
            ]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)
            wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit("inspect failed: " + (done.stdout + done.stderr)[-3000:])
    served = sum(1 for p, _, _ in state.received if p.endswith("completions")) - state.refused
    width = min(args.concurrency, args.capacity or args.concurrency)
    return {
        "wall_s": wall,
        "questions": len(chosen),
        "model_calls": served,
        "refused_429": state.refused,
        "peak": state.peak_in_flight,
        "mean": server.mean_in_flight(),
        "floor_s": served * args.latency / width,
    }


def show(name: str, row: dict) -> None:
    ratio = row["wall_s"] / row["floor_s"] if row["floor_s"] else float("nan")
    extra = ""
    if "ncbi_requests" in row and row["ncbi_requests"]:
        extra = f"  NCBI {row['ncbi_requests']} requests, {row['ncbi_429']} x 429"
    if row.get("requests_s"):
        extra += (
            f"\n{'':<11} requests from the first to the last: {row['requests_s']:.1f} s, "
            f"{row['requests_s'] / row['floor_s']:.2f}x the floor"
        )
    print(
        f"{name:<11} wall {row['wall_s']:6.1f} s  questions {row['questions']:>4}  "
        f"calls {row['model_calls']:>4}  429s {row['refused_429']:>4}  in flight peak "
        f"{row['peak']:>3} mean {row['mean']:5.1f}  floor {row['floor_s']:5.1f} s  "
        f"ratio {ratio:4.2f}{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=450)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--capacity", type=int, default=None)
    parser.add_argument("--refuse-rate", type=float, default=0.0)
    parser.add_argument(
        "--protocol", choices=["no-tools", "function-calling", "genegpt"], default="no-tools"
    )
    parser.add_argument("--tool-rounds", type=int, default=2)
    parser.add_argument("--tool", choices=["esearch", "blast"], default="esearch")
    parser.add_argument(
        "--blast-rate", type=float, default=4.0, help="BLAST contacts a second (NCBI: 0.1)"
    )
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--vs-inspect", metavar="PYTHON", help="a Python with inspect-ai")
    parser.add_argument(
        "--warm", action="store_true", help="fetch and build the questions before the clock"
    )
    parser.add_argument(
        "--pairs", type=int, default=1, help="alternating helixbench / Inspect runs (medians)"
    )
    args = parser.parse_args()
    mirror = resolve_mirror(None)
    if mirror is None:
        sys.exit("set HELIXBENCH_MIRROR to the upstream mirror")
    mirror = Path(mirror).resolve()
    walls: dict[str, list[float]] = {"helixbench": [], "inspect": []}
    for _ in range(args.pairs):
        row = run_helixbench(args, mirror)
        show("helixbench", row)
        walls["helixbench"].append(row["wall_s"])
        if args.vs_inspect:
            row = run_inspect(args, args.vs_inspect, mirror)
            show("inspect", row)
            walls["inspect"].append(row["wall_s"])
    if args.pairs > 1:
        for name, seen in walls.items():
            if seen:
                shown = ", ".join(f"{s:.1f}" for s in seen)
                print(f"{name:<11} median wall {statistics.median(seen):.1f} s ({shown})")


if __name__ == "__main__":
    main()
