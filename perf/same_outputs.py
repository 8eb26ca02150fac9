"""Does this checkout produce the same outputs as an earlier run? For restructuring
that must change no behaviour.

Run on demand, with a working directory the earlier code ran the main job in:
    HELIXBENCH_MIRROR=../shared/mirror python perf/same_outputs.py BEFORE_DIR

1. The main job (``--config``, the default config) runs with this checkout's code in
   a fresh working directory; every run record (``results/runs/``) and score
   (``results/scores/``) must equal BEFORE's, the wall-clock fields of records aside
   (latencies, wall time, finish time: ``helixbench.records.TIMING_FIELDS``).
2. BEFORE's working directory is copied and its report written anew by this
   checkout's code from BEFORE's own records: every report file must equal BEFORE's
   byte for byte, the helixbench commit it names aside. (Given the same records, the
   report's time columns are the same too.)

Prints each file that differs, and a summary; exits 1 if any does.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.datasets.jsonfiles import read_text  # noqa: E402
from helixbench.transcripts import read_records, without_timings  # noqa: E402

COMMIT = re.compile(rb"[0-9a-f]{40}(-dirty)?")


def snakemake(workdir: Path, config: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile")]
        + ["--directory", str(workdir), "--configfile", str(config), "--cores", "8", "--quiet"]
        + list(args),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(done.stdout[-2000:] + done.stderr[-3000:])


def compare_records(before: Path, after: Path) -> list[str]:
    differ = []
    for sub in ("runs", "scores"):
        names = sorted(
            {p.relative_to(before) for p in (before / "results" / sub).rglob("*.jsonl*")}
            | {p.relative_to(after) for p in (after / "results" / sub).rglob("*.jsonl*")}
        )
        for name in names:
            a, b = before / name, after / name
            if not (a.is_file() and b.is_file()):
                differ.append(f"{name}: only in {'after' if b.is_file() else 'before'}")
                continue
            if sub == "scores":
                same = read_text(a) == read_text(b)
            else:
                same = [without_timings(r) for r in read_records(a)] == [
                    without_timings(r) for r in read_records(b)
                ]
            if not same:
                differ.append(f"{name}: records differ")
    return differ


def compare_report(before: Path, rewritten: Path) -> list[str]:
    differ = []
    report = Path("results") / "report"
    names = sorted(p.name for p in (before / report).iterdir())
    for name in names:
        a, b = before / report / name, rewritten / report / name
        if not b.is_file():
            differ.append(f"{report / name}: not written again")
        elif COMMIT.sub(b"<commit>", a.read_bytes()) != COMMIT.sub(b"<commit>", b.read_bytes()):
            differ.append(f"{report / name}: differs")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a working directory of the earlier code")
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    args = parser.parse_args()
    if not os.environ.get("HELIXBENCH_MIRROR"):
        raise SystemExit("set HELIXBENCH_MIRROR to the upstream mirror (e.g. ../shared/mirror)")
    os.environ["HELIXBENCH_MIRROR"] = str(Path(os.environ["HELIXBENCH_MIRROR"]).resolve())
    before = args.before.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        after = Path(tmp) / "after"
        after.mkdir()
        snakemake(after, args.config.resolve(), "all")
        differ = compare_records(before, after)
        rewritten = Path(tmp) / "rewritten"
        shutil.copytree(before, rewritten, symlinks=True)  # file times kept
        # Only the report job, on BEFORE's records as they are.
        snakemake(
            rewritten, args.config.resolve(), "--forcerun", "report", "--rerun-triggers", "mtime"
        )
        differ += compare_report(before, rewritten)
        checked = len(filecmp.dircmp(before / "results", after / "results").common)
    for line in differ:
        print(line)
    print(
        f"{'outputs differ' if differ else 'same outputs'}: run and score records of a fresh "
        f"run, and the report rewritten from {before}'s records ({checked} result folders)"
    )
    raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
