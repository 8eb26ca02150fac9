"""Write one run as an Inspect AI eval log (``.eval``) with Inspect's own writer.

Runs in the inspect environment (``workflow/envs/peers/inspect.yaml``), not in
helixbench's: it imports nothing of helixbench. Usage::

    python inspect_log.py RUN.json OUT.eval

RUN.json (written by helixbench.report.exports.inspect_log): the run's label, model,
method, when it finished, and its samples (id, input, target, messages with their
tool calls, answer, error, scores by metric, metadata).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall


def message(m: dict):
    if m["role"] == "assistant":
        calls = [
            ToolCall(id=c["id"], function=c["name"], arguments=c["arguments"])
            for c in m.get("tool_calls") or []
        ]
        return ChatMessageAssistant(content=m["content"], tool_calls=calls or None)
    if m["role"] == "tool":
        return ChatMessageTool(
            content=m["content"], tool_call_id=m.get("tool_call_id"), function=m.get("function")
        )
    return ChatMessageUser(content=m["content"])


def main(source: str, out: str) -> None:
    run = json.loads(open(source, encoding="utf-8").read())
    when = datetime.fromtimestamp(run["finished_at"] or 0, UTC).isoformat()
    samples, metrics = [], {}
    for s in run["samples"]:
        for metric, value in s["scores"].items():
            metrics.setdefault(metric, []).append(value)
        samples.append(
            EvalSample(
                id=s["id"],
                epoch=1,
                input=s["input"],
                target=s["target"],
                messages=[message(m) for m in s["messages"]],
                output=ModelOutput.from_content(run["model"], s["answer"]),
                scores={m: Score(value=v, answer=s["answer"]) for m, v in s["scores"].items()},
                metadata={**s["metadata"], "error": s["error"]},
            )
        )
    spec = EvalSpec(
        created=when,
        task=f"helixbench/{run['method']}",
        dataset=EvalDataset(name="helixbench question bank", samples=len(samples)),
        model=run["model"],
        config=EvalConfig(),
        metadata={"run": run["run"], "helixbench": run["version"]},
    )
    results = EvalResults(
        total_samples=len(samples),
        completed_samples=len(samples),
        scores=[
            EvalScore(
                name=metric,
                scorer=metric,
                metrics={"mean": EvalMetric(name="mean", value=sum(v) / len(v))},
            )
            for metric, v in metrics.items()
        ],
    )
    log = EvalLog(
        status="success",
        eval=spec,
        plan=EvalPlan(),
        results=results,
        stats=EvalStats(started_at=when, completed_at=when),
        samples=samples,
    )
    write_eval_log(log, out, format="eval")


if __name__ == "__main__":
    main(*sys.argv[1:])
