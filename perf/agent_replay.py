"""The agent gateways driven by Codex's recorded choices: an unchanged agent
(tests/support/agent.py: the openai client, urllib to NCBI's public URLs) fetches,
for every question of a recorded GeneGPT run, the URLs Codex called, asks its model
once (a loopback server) and answers Codex's recorded answer, in ``long-lived`` mode
(one process), offline from the cache the workflow seeds. Prints per task the
questions, tool calls and cache hits, answers equal to the recorded ones, and
GeneGPT's score of the agent's answers beside the replay's (the recorded answers).

    HELIXBENCH_MIRROR=../shared/mirror python perf/agent_replay.py [--mask 001001]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.benchmarks import local_question_table  # noqa: E402
from helixbench.config import build_plan  # noqa: E402
from helixbench.datasets.fetch import resolve_mirror  # noqa: E402
from helixbench.datasets.questions import read_questions, write_questions  # noqa: E402
from helixbench.loopback.openai import OpenAIServer  # noqa: E402
from helixbench.run.shard import run_shard  # noqa: E402
from helixbench.scoring.genegpt import genegpt_score  # noqa: E402
from helixbench.sources.recordings import (  # noqa: E402
    RecordingReader,
    local_recorded_files,
    recorded_tool_replies,
)
from helixbench.tools import SETTINGS_ENV  # noqa: E402
from helixbench.tools.cache import ReplyCache  # noqa: E402
from helixbench.tools.seed import seed_from_recordings  # noqa: E402
from helixbench.transcripts import read_records  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mask", default="001001")
    args = parser.parse_args()
    mirror = resolve_mirror(None)
    if mirror is None:
        sys.exit("set HELIXBENCH_MIRROR to a mirror holding GeneGPT's recorded runs")
    mirror = Path(mirror).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.chdir(work)
        local = local_recorded_files("genegpt-2023", "geneturing", args.mask, mirror)
        files = [path for _, path in local]
        seed_from_recordings("genegpt-2023", ReplyCache(work / "tools.sqlite"), files)
        reader, script = RecordingReader(), {}
        for path in files:
            loop = reader.loop(path, files)
            for item in reader.items(path):
                urls = [
                    u
                    for u, reply in recorded_tool_replies(item, loop.url_rule).values()
                    if reply is not None
                ]
                script[item.question] = {"urls": urls, "answer": item.final_text}
        (work / "script.json").write_text(json.dumps(script))
        questions_path = work / "questions.jsonl"
        write_questions(local_question_table(mirror), questions_path)
        os.environ[SETTINGS_ENV] = json.dumps(
            {"cache": str(work / "tools.sqlite"), "budgets": str(work / "budgets")}
        )
        with OpenAIServer() as server:
            agent = str(ROOT / "tests" / "support" / "agent.py")
            method = {
                "kind": "agent",
                "command": ["{python}", agent, "--long-lived"],
                "mode": "long-lived",
                "reply_cap": 10_000,  # the loop it replays keeps 10,000 bytes of a reply
                "timeout_s": 60,
                "env": {"TEST_AGENT_SCRIPT": str(work / "script.json")},
            }
            config = {
                "benchmarks": ["geneturing"],
                "models": {"served": server.chat_model()},
                "methods": {"replayer": method},
                "runs": [
                    {"model": "served", "method": "replayer", "tasks": [task for task, _ in local]}
                ],
            }
            (run,) = build_plan(config, None).runs
            started = time.perf_counter()
            run_shard(
                run.spec(), 0, questions_path, work / "shard.jsonl", model_cache=work / "m.sqlite"
            )
            seconds = time.perf_counter() - started
        records = read_records(work / "shard.jsonl")
        every = {q.id: q for q in read_questions(questions_path)}
    rows = collections.defaultdict(collections.Counter)
    agent_scores, replay_scores = collections.defaultdict(list), collections.defaultdict(list)
    for record in records:
        task, question = record["task"], every[record["question_id"]]
        entry, row = script[question.text], rows[task]
        tools = [e["data"] for e in record["events"] if e["type"] == "tool"]
        row["questions"] += 1
        row["model calls"] += sum(e["type"] == "model" for e in record["events"])
        row["tool calls"] += len(tools)
        row["hits"] += sum(t["cache"] == "hit" and t["error"] is None for t in tools)
        row["as recorded"] += record["answer"] == entry["answer"]
        agent_scores[task].append(genegpt_score(task, record["answer"], question.gold))
        replay_scores[task].append(genegpt_score(task, entry["answer"], question.gold))
    print(f"{len(records)} questions in {seconds:.1f} s ({seconds / len(records):.2f} s each)")
    for record in records:
        if record["error"]:
            agent = [e["data"] for e in record["events"] if e["type"] == "agent"][-1]
            tail = agent["stderr_tail"].strip().splitlines()[-1:]
            print(f"  {record['question_id']}: {record['error']} {tail}")
    for task, row in sorted(rows.items()):
        agent = sum(agent_scores[task]) / len(agent_scores[task])
        replay = sum(replay_scores[task]) / len(replay_scores[task])
        print(
            f"{task:<28} questions {row['questions']:>3}  model calls {row['model calls']:>3}  "
            f"tool calls {row['tool calls']:>4}  hits {row['hits']:>4}  as recorded "
            f"{row['as recorded']:>3}  genegpt {agent:.3f} (replay {replay:.3f})"
        )
    total = collections.Counter()
    for row in rows.values():
        total.update(row)
    macro = [sum(v) / len(v) for v in agent_scores.values()]
    replayed = [sum(v) / len(v) for v in replay_scores.values()]
    print(
        f"all: {total['tool calls']} tool calls, {total['hits']} hits; answers as recorded "
        f"{total['as recorded']} of {total['questions']}; macro {sum(macro) / len(macro):.4f} "
        f"(replay {sum(replayed) / len(replayed):.4f})"
    )


if __name__ == "__main__":
    main()
