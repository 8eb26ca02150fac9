"""Replay every recorded GeneGPT run the mirror holds through the workflow, and time it.

Run on demand:  HELIXBENCH_MIRROR=../shared/mirror python perf/replay_all.py
Target (issue 14): all 14 upstream GeneTuring masks in under 60 s on 2 cores
(`--cores 2`). The mirror may hold only some of them: the script replays what it
holds (every GeneTuring mask and GeneHop run), from an empty working directory
(fetch, snapshots, replay, scoring, report), and prints the wall time, the model
calls replayed and calls per second and the hit rate. To project the time for all
14 GeneTuring masks it also replays the first mirrored mask alone (with GeneHop):
the difference is the cost of each further mask, the rest is fixed (start-up,
questions, GeneHop, the report). A rerun with nothing to do is timed too.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.datasets.fetch import available, resolve_mirror  # noqa: E402
from helixbench.sources.recordings import recorded_runs  # noqa: E402

UPSTREAM_GENETURING_MASKS = 14  # upstream recorded 14 masks of GeneTuring


def mirrored_masks(mirror: Path | None) -> dict[str, list[str]]:
    """Benchmark -> the masks of its recorded runs the mirror holds (all task files)."""
    masks: dict[str, list[str]] = {}
    for benchmark in ("geneturing", "genehop"):
        runs = recorded_runs("genegpt-2023", benchmark, None)
        for mask in sorted({r.mask for r in runs}):
            files = [r.file for r in runs if r.mask == mask]
            if all(available(f.url, mirror) for f in files):
                masks.setdefault(benchmark, []).append(mask)
    return masks


def replay_config(masks: dict[str, list[str]]) -> dict:
    runs = [
        {"model": "codex", "method": f"genegpt-{mask}", "benchmarks": [benchmark]}
        for benchmark, of_benchmark in masks.items()
        for mask in of_benchmark
    ]
    return {
        "benchmarks": ["geneturing", "genehop"],
        "shards": 1,
        "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
        "runs": runs,
    }


def timed(workdir: Path, config: Path, cores: int) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile")]
        + ["--directory", str(workdir), "--configfile", str(config), "--cores", str(cores)]
        + ["--quiet", "all"],
        check=True,
    )
    return time.perf_counter() - started


def replay(masks: dict[str, list[str]], cores: int) -> tuple[float, float, list[dict]]:
    """Cold and nothing-to-do wall times of replaying ``masks``, and replay.csv."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        config = workdir / "replay.yaml"
        config.write_text(yaml.safe_dump(replay_config(masks)))
        cold = timed(workdir, config, cores)
        warm = timed(workdir, config, cores)
        with open(workdir / "results" / "report" / "replay.csv") as fh:
            return cold, warm, list(csv.DictReader(fh))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    if not os.environ.get("HELIXBENCH_MIRROR"):
        raise SystemExit("set HELIXBENCH_MIRROR to the upstream mirror (e.g. ../shared/mirror)")
    os.environ["HELIXBENCH_MIRROR"] = str(Path(os.environ["HELIXBENCH_MIRROR"]).resolve())
    masks = mirrored_masks(resolve_mirror(None))
    cold, warm, rows = replay(masks, args.cores)
    calls = sum(int(r["calls"]) for r in rows)
    hits = sum(int(r["hits"]) for r in rows)
    print(f"cpus available: {os.cpu_count()}, --cores {args.cores}")
    print(
        "replayed: "
        + "; ".join(f"{b} masks {', '.join(m)}" for b, m in masks.items())
        + f" ({len(rows)} task files)"
    )
    print(f"model calls: {calls}, hits: {hits} ({hits / calls:.2%})")
    print(f"wall time, cold: {cold:.1f} s ({calls / cold:.0f} calls/s)")
    print(f"wall time, nothing to do: {warm:.1f} s")
    geneturing = masks.get("geneturing", [])
    if len(geneturing) > 1:
        one, _, _ = replay({**masks, "geneturing": geneturing[:1]}, args.cores)
        per_mask = (cold - one) / (len(geneturing) - 1)
        projected = one + per_mask * (UPSTREAM_GENETURING_MASKS - 1)
        print(
            f"one GeneTuring mask (with GeneHop): {one:.1f} s; each further mask "
            f"{per_mask:.1f} s; projected for all {UPSTREAM_GENETURING_MASKS}: "
            f"{projected:.0f} s (target < 60 s)"
        )


if __name__ == "__main__":
    main()
