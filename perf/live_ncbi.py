"""A live run of all 450 GeneTuring questions as fast as NCBI's rules allow, and how
close it comes to the floor those rules set.

Run on demand:  HELIXBENCH_MIRROR=../shared/mirror python perf/live_ncbi.py
Target (issue 15): wall time at most 1.15x the floor.

The model answers instantly: GeneGPT-slim's recorded Codex run (replay), with its
tool calls made live (``tools: live``) through the tool executor against a loopback
NCBI stand-in (helixbench.loopback.ncbi) that serves the replies the recording shows,
recorded BLAST searches included (each Put answers the recorded RID, whose status
checks say WAITING once, then READY), with a realistic latency per request, and
that enforces NCBI's limits itself (429 past them). The workflow runs it in
``--shards`` run jobs.

NCBI's rules: E-utils at most 3 requests/s (no key), BLAST one contact every 10 s,
a RID's status checked at most once a minute. A real run would take over an hour
(BLAST binds: 100 searches, 4 contacts each), so the clock is scaled: every
interval, latency and RTOE is divided by ``--speed`` (default 50: a BLAST contact
every 0.2 s, E-utils 150 requests/s), the limits the executor keeps and the ones
the stand-in enforces alike. The floor is computed from the requests the stand-in
received: E-utils requests / rate and BLAST contacts x interval, whichever binds
(the two budgets run side by side); the wall time is the span from the first
request to the last. Prints both, their ratio, the 429s and the replay hit rate
(every prompt must still match the recording).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.datasets.fetch import mirror_path, resolve_mirror  # noqa: E402
from helixbench.genegpt_format import is_blast_put, parse_rendered_reply  # noqa: E402
from helixbench.loopback.ncbi import NCBIServer, NCBIServerState  # noqa: E402
from helixbench.sources.recordings import load_recording, recorded_runs, recorded_tool_replies  # noqa: E402
from helixbench.tools.urls import canonical_url  # noqa: E402

EUTILS_RATE = 3.0  # requests/s, no API key
BLAST_INTERVAL = 10.0  # s between BLAST contacts
POLL_INTERVAL = 60.0  # s between status checks of one RID
LATENCY = {"eutils": 0.3, "blast": 0.8}  # s a reply takes


def recorded_service(mirror: Path, state: NCBIServerState) -> int:
    """Fill the stand-in with every reply GeneGPT-slim's recording shows; returns the
    number of recorded searches."""
    searches = 0
    for run in recorded_runs("genegpt-2023", "geneturing", "001001"):
        for item in load_recording(mirror_path(run.file.url, mirror)):
            for url, rendered in recorded_tool_replies(item).values():
                if rendered is None:
                    continue
                key = canonical_url(url.replace(" ", "+"))
                value = parse_rendered_reply(rendered)
                if is_blast_put(url):  # recorded as its RID alone
                    state.put_rids[key] = rendered
                    state.known_rids.add(rendered)
                    searches += 1
                elif isinstance(value, bytes):
                    state.replies[key] = value
    return searches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=50.0, help="clock scale (1: real time)")
    parser.add_argument("--shards", type=int, default=8)
    args = parser.parse_args()
    if not os.environ.get("HELIXBENCH_MIRROR"):
        raise SystemExit("set HELIXBENCH_MIRROR to the upstream mirror (e.g. ../shared/mirror)")
    os.environ["HELIXBENCH_MIRROR"] = str(Path(os.environ["HELIXBENCH_MIRROR"]).resolve())
    speed = args.speed
    state = NCBIServerState(
        eutils_rate=EUTILS_RATE * speed,
        blast_interval=BLAST_INTERVAL / speed * 0.95,  # the stand-in's own check, with slack
        # RTOE is whole seconds on NCBI's wire: at a scaled clock it is 0, and the first
        # status check says WAITING, the next (a poll interval later) READY.
        waiting_polls=1,
        rtoe=0,
        latency_s={k: v / speed for k, v in LATENCY.items()},
    )
    searches = recorded_service(resolve_mirror(None), state)
    with tempfile.TemporaryDirectory() as tmp, NCBIServer(state) as server:
        workdir = Path(tmp)
        config = {
            "benchmarks": ["geneturing"],
            "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
            "runs": [
                {"model": "codex", "method": "genegpt-slim", "tools": "live", "shards": args.shards}
            ],
            "tools": {
                "mode": "live",
                "cache": str(workdir / "tools.sqlite"),
                "budgets": str(workdir / "budgets"),
                "routes": server.routes(),
                "rates": {
                    "eutils.ncbi.nlm.nih.gov": EUTILS_RATE * speed,
                    "blast.ncbi.nlm.nih.gov": speed / BLAST_INTERVAL,
                },
                "blast": {"poll_interval_s": POLL_INTERVAL / speed},
                "http": {"timeout_s": 30.0},
            },
        }
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile")]
            + ["--directory", str(workdir), "--configfile", str(workdir / "config.yaml")]
            + ["--cores", str(args.shards), "--quiet", "all"],
            check=True,
        )
        total = time.perf_counter() - started
        with gzip.open(workdir / "results" / "report" / "errors.csv.gz", "rt") as fh:
            errors = list(csv.DictReader(fh))
        with gzip.open(workdir / "results" / "report" / "scores.csv.gz", "rt") as fh:
            macro = [r for r in csv.DictReader(fh) if r["task"] == "macro"]
        received = list(server.state.received)
    eutils = [r for r in received if r.path.startswith("/entrez/")]
    blast = [r for r in received if r.path.startswith("/blast/")]
    times = sorted(r.at for r in received)
    span = times[-1] - times[0]
    floors = {
        "E-utils": len(eutils) / (EUTILS_RATE * speed),
        "BLAST": len(blast) * BLAST_INTERVAL / speed,
    }
    floor = max(floors.values())
    binds = max(floors, key=floors.get)
    hits = sum(int(r["tool_miss"]) + int(r["tool_hit"]) for r in errors)
    print(f"cpus available: {os.cpu_count()}, shards {args.shards}, clock x{speed:g}")
    print(
        f"requests: {len(eutils)} E-utils, {len(blast)} BLAST contacts "
        f"({searches} recorded searches); 429 replies: {sum(r.status == 429 for r in received)}"
    )
    print(
        f"floor: E-utils {floors['E-utils']:.1f} s, BLAST {floors['BLAST']:.1f} s -> "
        f"{floor:.1f} s ({binds} binds; x{speed:g} = {floor * speed / 60:.0f} min real)"
    )
    ratio = span / floor
    print(f"wall, first to last request: {span:.1f} s = {ratio:.3f}x the floor (target <= 1.15)")
    print(f"whole workflow: {total:.1f} s; tool calls answered live or from the cache: {hits}")
    for row in macro:
        if row["metric"] == "genegpt":
            print(f"macro (genegpt): {float(row['score']):.4f} (the replay's: 0.8290)")


if __name__ == "__main__":
    main()
