"""What the code tools cost a call: the seconds of a ``python`` call through
:class:`helixbench.gateway.code.CodeTools` (a fresh sandboxed process, the scratch
folder digested, the execution packed and cached) against the same interpreter run
bare, for a question's first call and for a repeated call on the same question (its
scratch folder holding a file), and what a replayed call (a cache hit) takes.
Prints the median and the 90th percentile of each and the overhead per call (goal:
under 0.3 s on 2 cores).

    python perf/code_tools.py [--repeat 20] [--python PATH]

``--python``: the tools environment's interpreter (its env.json's, by default this
one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.gateway import sandbox  # noqa: E402
from helixbench.gateway.code import CodeSettings, CodeTools, ExecutionCache  # noqa: E402
from helixbench.gateway.gateways import Gateways  # noqa: E402
from helixbench.tools.executor import ToolExecutor, ToolSettings  # noqa: E402

CODE = "import sys\nopen('out.txt', 'a').write('x')\nprint({n})\n"


def _summary(seconds: list[float]) -> tuple[float, float]:
    seconds = sorted(seconds)
    return statistics.median(seconds), seconds[int(0.9 * (len(seconds) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    problem = sandbox.unavailable()
    if problem:
        sys.exit(problem)
    with tempfile.TemporaryDirectory() as work:
        marker = Path(work) / "env.json"
        marker.write_text(json.dumps({"python": args.python, "packages": []}))
        settings = {"mode": "offline", "cache": f"{work}/tools.sqlite", "budgets": f"{work}/b"}
        executor = ToolExecutor(ToolSettings.from_config(settings))
        gateways = Gateways(None, executor, "")
        tools = CodeTools(
            gateways, str(marker), ExecutionCache(f"{work}/code.sqlite"), "offline", CodeSettings()
        )
        timings: dict[str, list[float]] = {"bare": [], "first": [], "repeated": [], "replayed": []}
        for i in range(args.repeat):
            started = time.perf_counter()
            subprocess.run([args.python, "-"], input=CODE.format(n=i).encode(), cwd=work,
                           capture_output=True, check=True)  # fmt: skip
            timings["bare"].append(time.perf_counter() - started)
            for kind, question, n in (("first", f"q{i}", 2 * i), ("repeated", f"q{i}", 2 * i + 1)):
                started = time.perf_counter()
                done = tools.run("python", CODE.format(n=n), question)
                timings[kind].append(time.perf_counter() - started)
                if done.exit_code != 0 or done.cache != "miss":
                    sys.exit(f"{kind}: {done.text}")
            tools.begin(f"q{i}")  # the question again from the start: its calls replayed
            started = time.perf_counter()
            done = tools.run("python", CODE.format(n=2 * i), f"q{i}")
            timings["replayed"].append(time.perf_counter() - started)
            if done.cache != "hit":
                sys.exit(f"replayed: not a cache hit ({done.text})")
        gateways.close()
    print(f"{'call':<10} {'median s':>9} {'p90 s':>7}")
    medians = {}
    for kind, seconds in timings.items():
        medians[kind], p90 = _summary(seconds)
        print(f"{kind:<10} {medians[kind]:9.3f} {p90:7.3f}")
    for kind in ("first", "repeated"):
        print(f"overhead of a {kind} call: {medians[kind] - medians['bare']:.3f} s")


if __name__ == "__main__":
    main()
