"""Time the main job (`snakemake --cores 8` on the default config) from an empty workdir.

Run on demand:  HELIXBENCH_MIRROR=../shared/mirror python perf/default_run.py
Target (issue 2): under 60 s of wall time on a 2-core machine, offline, from the mirror.
Prints the wall time of a cold run (fetch, snapshots, replay, scoring, report) and of a
rerun with nothing to do.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_run(workdir: Path, cores: int) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "workflow" / "Snakefile"),
            "--directory",
            str(workdir),
            "--configfile",
            str(ROOT / "config" / "config.yaml"),
            "--cores",
            str(cores),
            "--quiet",
            "all",
        ],
        check=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=8)
    args = parser.parse_args()
    if os.environ.get("HELIXBENCH_MIRROR"):  # snakemake runs in a temporary workdir
        os.environ["HELIXBENCH_MIRROR"] = str(Path(os.environ["HELIXBENCH_MIRROR"]).resolve())
    else:
        print("note: HELIXBENCH_MIRROR is not set; upstream files are downloaded", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        cold = timed_run(Path(tmp), args.cores)
        warm = timed_run(Path(tmp), args.cores)
    print(f"cpus available: {os.cpu_count()}, --cores {args.cores}")
    print(f"default run, cold: {cold:.1f} s (target < 60 s)")
    print(f"default run, nothing to do: {warm:.1f} s")


if __name__ == "__main__":
    main()
