"""One run's LABBench2 facts, for its summary (:mod:`.run_summary`): what the
frontier section (:mod:`..tables.frontier`) needs beyond the per-question scores.

- ``usage``: per task, the tokens the system spent: an imported run's as its report
  states them (every file's, retries too), a run of ours from its model calls;
- ``systems``: per task, the model as the report names it (its runner, maker, flags);
- ``judge``: per task, the judge's verdicts counted, and ``undecided``: the questions
  it could not decide (``unsure``, or a reply with no verdict: never scored as wrong);
- ``disagreements``: every question where the published verdict and ours (the
  deterministic one, the judge's) differ, with both reasons.
"""

from __future__ import annotations

from ...config.plan import Plan
from ..tables.frontier import BENCHMARK, OURS


def labbench2_facts(
    plan: Plan, records: dict, score_lines: list[dict], judge_calls: list[dict]
) -> dict | None:
    tasks = [t for t in plan.tasks if t.benchmark == BENCHMARK]
    if not tasks:
        return None
    usage, systems, judge, undecided = {}, {}, {}, {}
    task_of = {}
    for task in tasks:
        of_task = records[task]
        task_of.update({r["question_id"]: task.task for r in of_task})
        first = of_task[0] if of_task else {}
        systems[task.task] = first.get("reported_model")
        usage[task.task] = first.get("reported_usage") or _calls_usage(of_task)
        judge[task.task] = {}
    for call in judge_calls:
        if call.get("scorer") == "lb2_judge" and call["question_id"] in task_of:
            counts = judge[task_of[call["question_id"]]]
            counts[call["verdict"]] = counts.get(call["verdict"], 0) + 1
            if call["verdict"] not in ("correct", "incorrect"):
                undecided[call["question_id"]] = call["verdict"]
    return {
        "usage": usage,
        "systems": systems,
        "judge": judge,
        "undecided": undecided,
        "disagreements": disagreements(score_lines),
    }


def _calls_usage(of_task: list[dict]) -> dict:
    """A run of ours: its model calls' tokens (as LABBench2's ``usage`` counts them)."""
    calls = [e["data"] for r in of_task for e in r["events"] if e["type"] == "model"]
    prompt = sum(d.get("prompt_tokens") or 0 for d in calls)
    completion = sum(d.get("completion_tokens") or 0 for d in calls)
    return {
        "total_requests": len(calls),
        "total_input_tokens": prompt,
        "total_output_tokens": completion,
        "total_tokens": prompt + completion,
    }


def disagreements(score_lines: list[dict]) -> list[dict]:
    """Every question where LABBench2's published verdict and one of ours differ."""
    by_question: dict[str, dict] = {}
    for line in score_lines:
        if line["benchmark"] == BENCHMARK and line["metric"] in ("lb2_published", *OURS):
            by_question.setdefault(line["question_id"], {})[line["metric"]] = line
    found = []
    for question_id, lines in by_question.items():
        published = lines.get("lb2_published")
        if published is None or published.get("error"):  # (a failure: no answer to judge)
            continue
        for metric in OURS:
            ours = lines.get(metric)
            if ours is not None and ours["score"] != published["score"]:
                found.append(
                    {
                        "question_id": question_id,
                        "task": published["task"],
                        "scorer": metric,
                        "published": published["score"],
                        "published_reason": published.get("reason"),
                        "ours": ours["score"],
                        "our_reason": ours.get("reason"),
                    }
                )
    return found
