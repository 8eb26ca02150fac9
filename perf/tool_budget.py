"""How close 8 processes sharing one E-utils budget come to NCBI's limit, without a 429.

Run on demand:  python perf/tool_budget.py [--workers 8] [--requests 90] [--rate 3]
Target (issue 3): achieved requests/s at least 0.95 of the limit, zero 429s.

A loopback stand-in for E-utils (helixbench.loopback.ncbi) answers 429 whenever more
than ``--rate`` requests arrive within one second; 8 worker processes send distinct
E-utils requests through the tool executor (live mode, fresh cache), which shares
one file-based budget between them. Prints the achieved rate over the server's
first-to-last request, its ratio to the limit, and the count of 429s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.loopback.ncbi import NCBIServer, NCBIServerState  # noqa: E402
from helixbench.tools import ToolRequest  # noqa: E402
from helixbench.tools.executor import ToolExecutor, ToolSettings  # noqa: E402

ESEARCH = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&retmax=5&term="


def worker(config: dict, worker_id: int, count: int) -> None:
    executor = ToolExecutor(ToolSettings.from_config(config))
    for i in range(count):
        result = executor.call(ToolRequest(f"{ESEARCH}W{worker_id}R{i}", f"w{worker_id}", i))
        if result.error:
            print(f"worker {worker_id}: {result.error}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--requests", type=int, default=90, help="in all, split over workers")
    parser.add_argument("--rate", type=float, default=3.0, help="requests/s the server allows")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        NCBIServer(NCBIServerState(eutils_rate=args.rate)) as server,
    ):
        config = {
            "mode": "live",
            "cache": str(Path(tmp) / "tools.sqlite"),
            "budgets": str(Path(tmp) / "budgets"),
            "routes": server.routes(),
            "rates": {"eutils.ncbi.nlm.nih.gov": args.rate},
            "http": {"retries": 0},  # a 429 must show, not be retried away
        }
        per_worker = args.requests // args.workers
        ctx = multiprocessing.get_context("fork")
        procs = [
            ctx.Process(target=worker, args=(config, w, per_worker)) for w in range(args.workers)
        ]
        started = time.perf_counter()
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        wall = time.perf_counter() - started
        received = server.state.received
    times = sorted(r.at for r in received)
    achieved = (len(times) - 1) / (times[-1] - times[0])
    too_many = sum(r.status == 429 for r in received)
    print(f"workers                {args.workers}")
    print(f"requests               {len(received)} in {wall:.1f} s")
    print(f"limit                  {args.rate:g} requests/s")
    print(f"achieved               {achieved:.3f} requests/s")
    print(f"achieved / limit       {achieved / args.rate:.3f}   (target >= 0.95)")
    print(f"429 replies            {too_many}   (target 0)")


if __name__ == "__main__":
    main()
