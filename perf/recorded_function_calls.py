"""The function-calling protocol driven by Codex's recorded choices, offline.

A scripted chat model (the loopback OpenAI-compatible server) makes, for every
question of one recorded GeneGPT run (mask 001001 by default), the function calls
that ask what Codex asked (``esearch``/``efetch``/``esummary``/``elink`` with its
arguments, ``blast`` with its sequence), then gives Codex's recorded answer. The
tool cache is seeded as the workflow seeds it (``seed_tool_cache``), the tools run
``offline``: every call should get the reply the recording shows. Prints tool
calls, cache hits, errors by kind, replies equal to the recorded ones, per task.

    HELIXBENCH_MIRROR=../shared/mirror python perf/recorded_function_calls.py [--mask 001001]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from helixbench.datasets.fetch import resolve_mirror  # noqa: E402
from helixbench.loopback.openai import OpenAIServer  # noqa: E402
from helixbench.methods.function_calling import FunctionCalling  # noqa: E402
from helixbench.models import create_model  # noqa: E402
from helixbench.sources.recordings import RecordingReader, local_recorded_files  # noqa: E402
from helixbench.tools.cache import ReplyCache  # noqa: E402
from helixbench.tools.executor import ToolExecutor, ToolSettings  # noqa: E402
from helixbench.tools.functions import NCBIFunctions, reply_text  # noqa: E402
from helixbench.tools.recorded_calls import recorded_function_calls  # noqa: E402
from helixbench.tools.seed import seed_from_recordings  # noqa: E402


def drive(mask: str, mirror: Path, work: Path) -> list[dict]:
    """One row per task: calls, hits, errors by kind, replies equal to the recorded."""
    os.chdir(work)
    files = local_recorded_files("genegpt-2023", "geneturing", mask, mirror)
    cache = ReplyCache(work / "tools.sqlite")
    seed_from_recordings("genegpt-2023", cache, [f for _, f in files])
    settings = ToolSettings.from_config(
        {"mode": "offline", "cache": str(work / "tools.sqlite"), "budgets": str(work / "b")}
    )
    functions = NCBIFunctions(ToolExecutor(settings, cache))
    method, reader, rows = FunctionCalling(), RecordingReader(), []
    with OpenAIServer() as server:
        model = create_model({**server.chat_model(), "retries": 0})
        for task, path in sorted(files):
            loop = reader.loop(path, [f for _, f in files])
            row = collections.Counter(task=task)
            for q, item in enumerate(reader.items(path)):
                calls = recorded_function_calls(item, loop.url_rule)
                server.state.script.extend([{"tool_calls": [(c.name, c.arguments)]} for c in calls])
                server.state.script.append(item.final_text)
                result = method.run(f"{task}/{q}", item.question, model, functions)
                events = [e.data for e in result.events if e.type == "tool"]
                for call, event in zip(calls, events, strict=True):
                    row["calls"] += 1
                    row[f"{call.name} calls"] += call.name == "blast"
                    hit = bool(event["requests"]) and all(
                        r["cache"] == "hit" for r in event["requests"]
                    )
                    row["hits"] += hit and event["error"] is None
                    if event["error"]:
                        row[f"error: {event['error']}"] += 1
                    elif call.reply is not None:
                        row["as recorded"] += event["rendered"] == reply_text(
                            call.reply, method.reply_cap
                        )
                row["answers as recorded"] += result.answer == item.final_text.strip()
                row["questions"] += 1
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mask", default="001001")
    args = parser.parse_args()
    mirror = resolve_mirror(None)
    if mirror is None:
        sys.exit("set HELIXBENCH_MIRROR to a mirror holding GeneGPT's recorded runs")
    with tempfile.TemporaryDirectory() as tmp:
        rows = drive(args.mask, Path(mirror).resolve(), Path(tmp))
    total = collections.Counter()
    for row in rows:
        total.update({k: v for k, v in row.items() if k != "task"})
    for row in [*rows, {**total, "task": "all"}]:
        detail = ", ".join(f"{k} {v}" for k, v in sorted(row.items()) if k.startswith("error"))
        print(
            f"{row['task']:<30} questions {row.get('questions', 0):>3}  calls "
            f"{row.get('calls', 0):>4}  hits {row.get('hits', 0):>4}  as recorded "
            f"{row.get('as recorded', 0):>4}  blast {row.get('blast calls', 0):>3}  answers "
            f"{row.get('answers as recorded', 0):>3}" + (f"  [{detail}]" if detail else "")
        )


if __name__ == "__main__":
    main()
