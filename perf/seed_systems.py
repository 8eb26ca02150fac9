"""The seed systems beside their re-implementations: runs a config
(``config/examples/seed-systems.yaml`` by default) in a working directory, then
prints, for each original (``kind: agent`` with an ``original``) and the run of its
re-implementation on the same model: questions, model calls and response-cache
hits, calls whose prompt is the re-implementation's at the same step (byte for
byte, by sha256), answers equal, errors by name, and each built environment's
install time. GeneGPT's cross-check passes where every call of main.py is a hit
of the same prompt and every answer is equal.

    HELIXBENCH_MIRROR=../shared/mirror python perf/seed_systems.py \
        [--config config/examples/seed-systems.yaml] [--workdir DIR] [--cores 2]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.config import build_plan  # noqa: E402
from helixbench.datasets.fetch import resolve_mirror  # noqa: E402
from helixbench.methods.originals import ORIGINALS  # noqa: E402
from helixbench.transcripts import read_records  # noqa: E402


def records(workdir: Path, run) -> dict[str, dict]:
    out = {}
    for path in run.shard_paths():
        for record in read_records(workdir / path):
            if "events" in record:
                out[record["question_id"]] = record
    return out


def model_calls(record: dict) -> list[dict]:
    return [e["data"] for e in record["events"] if e["type"] == "model"]


def compare(original: dict, ours: dict) -> dict:
    """The figures of one original's run against its re-implementation's."""
    figures = collections.Counter()
    errors = collections.Counter()
    for qid, theirs in original.items():
        figures["questions"] += 1
        calls = model_calls(theirs)
        figures["model calls"] += len(calls)
        figures["hits"] += sum(c.get("cache") == "hit" for c in calls)
        mine = ours.get(qid)
        if mine is None:
            continue
        figures["paired"] += 1
        mine_calls = model_calls(mine)
        figures["same prompt"] += sum(
            a.get("prompt_sha256") == b.get("prompt_sha256")
            for a, b in zip(calls, mine_calls, strict=False)
        )
        figures["answers equal"] += theirs["answer"] == mine["answer"]
        if theirs["error"]:
            errors[theirs["error"]] += 1
    return {**figures, "errors": dict(errors)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "config/examples/seed-systems.yaml"))
    parser.add_argument("--workdir", default=str(ROOT / ".seed-systems"))
    parser.add_argument("--cores", default="2")
    args = parser.parse_args()
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "workflow/Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(Path(args.config).resolve()),
        "--cores",
        args.cores,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    print(f"workflow: {time.perf_counter() - started:.0f} s ({workdir})")
    config = yaml.safe_load(Path(args.config).read_text())
    plan = build_plan(config, resolve_mirror(None))
    for run in plan.runs:
        name = run.first.method_spec.get("original")
        if not name:
            continue
        system = ORIGINALS[name]
        mates = [
            r
            for r in plan.runs
            if r.model == run.model and r.first.method_spec.get("kind") == system.reimplementation
        ]
        ours = records(workdir, mates[0]) if mates else {}
        figures = compare(records(workdir, run), ours)
        against = mates[0].label if mates else "(no re-implementation run)"
        print(f"\n{run.label} vs {against}")
        for key, value in figures.items():
            print(f"  {key}: {value}")
        marker = workdir / run.environment if run.environment else None
        if marker and marker.is_file():
            built = json.loads(marker.read_text())
            print(
                f"  environment: {built['built_with']}, {len(built['packages'])} packages, "
                f"built in {built['install_s']} s"
            )


if __name__ == "__main__":
    main()
