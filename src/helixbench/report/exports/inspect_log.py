"""Write one run as an Inspect AI eval log (``.eval``) with Inspect's own writer.

Runs in the inspect environment (``workflow/envs/peers/inspect.yaml``), not in
helixbench's: it imports nothing of helixbench. Usage::

    python inspect_log.py RUN.json OUT.eval

RUN.json (written by helixbench.report.exports.formats.inspect_log): the run's label, model,
method, when it finished, and its samples (id, input, target, messages with their
tool calls, its model and tool events with their times and tokens, start and end,
answer, error, scores by metric, metadata), the run's ids and the leaderboard's macro
figure of each metric.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from inspect_ai.event import ModelEvent, ToolEvent
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
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError


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


def when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds or 0, UTC).isoformat()


def served(run: dict) -> str:
    """The model as its provider names it (``code-davinci-002`` of
    ``openai/code-davinci-002``): Inspect's outputs carry that name, not the
    provider's prefix, and readers of a log (Every Eval Ever's converter) join the two."""
    return run["model"].split("/", 1)[-1]


def usage(events: list[dict]) -> ModelUsage | None:
    """The tokens of the model events: none where no model was asked (an enrichment
    run), None where one was and nothing counted them (a replay without its
    tokenizer's files: no figure rather than a false zero)."""
    asked = [e for e in events if e["type"] == "model"]
    calls = [e for e in asked if e["input_tokens"] is not None]
    if asked and not calls:
        return None
    i = sum(e["input_tokens"] or 0 for e in calls)
    o = sum(e["output_tokens"] or 0 for e in calls)
    return ModelUsage(input_tokens=i, output_tokens=o, total_tokens=i + o)


def events_of(run: dict, sample: dict) -> list:
    """The sample's model calls and tool calls as Inspect's transcript events, with
    their start times and durations as the run recorded them."""
    out = []
    for e in sample["events"]:
        timing = {
            "timestamp": when(e["at"]),
            "working_start": e["at"] - sample["started_at"],
            "working_time": e["seconds"],
        }
        if e["type"] == "model":
            out.append(
                ModelEvent(
                    model=run["model"],
                    input=[ChatMessageUser(content=e["prompt"])],
                    tools=[],
                    tool_choice="auto",
                    config=GenerateConfig(),
                    output=ModelOutput.from_content(served(run), e["completion"]).model_copy(
                        update={"usage": usage([e])}
                    ),
                    cache="read" if e["cache"] in ("hit", "replay") else None,
                    error=e["error"],
                    completed=when(e["at"] + e["seconds"]),
                    **timing,
                )
            )
        else:
            out.append(
                ToolEvent(
                    id=e["id"],
                    function=e["function"],
                    arguments=e["arguments"],
                    result=e["result"],
                    error=ToolCallError("unknown", e["error"]) if e["error"] else None,
                    completed=when(e["at"] + e["seconds"]),
                    **timing,
                )
            )
    return out


def main(source: str, out: str) -> None:
    run = json.loads(open(source, encoding="utf-8").read())
    samples, metrics, total = [], {}, None
    for s in run["samples"]:
        for metric, value in s["scores"].items():
            metrics.setdefault(metric, []).append(value)
        used = usage(s["events"])
        if used is not None:
            total = used if total is None else total + used
        samples.append(
            EvalSample(
                id=s["id"],
                epoch=1,
                input=s["input"],
                target=s["target"],
                messages=[message(m) for m in s["messages"]],
                output=ModelOutput.from_content(served(run), s["answer"]),
                scores={m: Score(value=v, answer=s["answer"]) for m, v in s["scores"].items()},
                metadata={**s["metadata"], "error": s["error"]},
                events=events_of(run, s),
                model_usage={run["model"]: used} if used else {},
                started_at=when(s["started_at"]),
                completed_at=when(s["finished_at"]),
                total_time=s["finished_at"] - s["started_at"],
                working_time=s["finished_at"] - s["started_at"],
            )
        )
    spec = EvalSpec(
        eval_id=run["ids"]["eval"],
        run_id=run["ids"]["run"],
        task_id=run["ids"]["task"],
        created=when(run["started_at"]),
        task=f"helixbench/{run['method']}",
        dataset=EvalDataset(name=", ".join(run["benchmarks"]), samples=len(samples)),
        model=run["model"],
        config=EvalConfig(),
        metadata={"run": run["run"], "helixbench": run["version"], "model": run["model_card"]},
    )
    results = EvalResults(
        total_samples=len(samples),
        completed_samples=len(samples),
        scores=[
            EvalScore(
                name=metric,
                scorer=metric,
                metrics={
                    "mean": EvalMetric(name="mean", value=sum(v) / len(v)),
                    # the leaderboard's: the mean of the task means
                    **(
                        {"macro": EvalMetric(name="macro", value=run["macro"][metric])}
                        if metric in run["macro"]
                        else {}
                    ),
                },
            )
            for metric, v in metrics.items()
        ],
    )
    log = EvalLog(
        status="success",
        eval=spec,
        plan=EvalPlan(),
        results=results,
        stats=EvalStats(
            started_at=when(run["started_at"]),
            completed_at=when(run["finished_at"]),
            model_usage={run["model"]: total} if total else {},
        ),
        samples=samples,
    )
    write_eval_log(log, out, format="eval")


if __name__ == "__main__":
    main(*sys.argv[1:])
