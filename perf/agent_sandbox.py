"""What an agent's sandbox costs: the seconds from starting an agent process to its
answer, for an agent that answers at once (a shell one-liner) and for a Python agent
that makes one NCBI call through the public URL, in the sandbox and in the
cooperative fallback, each run ``--repeat`` times (one question a process). Prints
the median and the 90th percentile of each and the sandbox's added start-up.

    python perf/agent_sandbox.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.gateway import sandbox  # noqa: E402
from helixbench.gateway.gateways import Gateways  # noqa: E402
from helixbench.loopback.ncbi import NCBIServer  # noqa: E402
from helixbench.loopback.openai import OpenAIServer  # noqa: E402
from helixbench.methods.agent import Agent, AgentSettings  # noqa: E402
from helixbench.models import create_model  # noqa: E402
from helixbench.tools.executor import ToolExecutor, ToolSettings  # noqa: E402

URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=BRCA1"
AGENTS = {
    "shell, answers at once": ["sh", "-c", "echo Answer: x"],
    "python, one NCBI call": [
        "{python}",
        "-c",
        f"import urllib.request, json; urllib.request.urlopen({URL!r}).read(); "
        "print(json.dumps(dict(answer='x')))",
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    problem = sandbox.unavailable()
    if problem:
        sys.exit(problem)
    with tempfile.TemporaryDirectory() as work, NCBIServer() as ncbi, OpenAIServer() as llm:
        ncbi.state.eutils_rate = None
        settings = {"mode": "live", "cache": f"{work}/tools.sqlite", "budgets": f"{work}/b"}
        executor = ToolExecutor(ToolSettings.from_config(settings | {"routes": ncbi.routes()}))
        # (an agent is given the model gateway's URL, whether it calls a model or not)
        gateways = Gateways(create_model(llm.chat_model()), executor, "m")
        print(f"{'agent':<24} {'sandbox':<12} {'median s':>9} {'p90 s':>7}")
        medians = {}
        for name, command in AGENTS.items():
            for mode in ("isolated", "cooperative"):
                spec = {"command": command, "sandbox": mode, "timeout_s": 60}
                agent = Agent(AgentSettings.from_spec(spec), gateways, gateways.workdir)
                seconds = []
                for i in range(args.repeat):
                    started = time.perf_counter()
                    result = agent.run(f"q{i}", "Q?", None, None)
                    seconds.append(time.perf_counter() - started)
                    if result.error:
                        sys.exit(f"{name} ({mode}): {result.error}: {result.events[-1].data}")
                seconds.sort()
                medians[name, mode] = statistics.median(seconds)
                p90 = seconds[int(0.9 * (len(seconds) - 1))]
                print(f"{name:<24} {mode:<12} {medians[name, mode]:9.3f} {p90:7.3f}")
        gateways.close()
    for name in AGENTS:
        added = medians[name, "isolated"] - medians[name, "cooperative"]
        print(f"the sandbox adds {added:.3f} s a process ({name})")


if __name__ == "__main__":
    main()
