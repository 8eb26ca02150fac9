"""How the runs went: replay fidelity, time, tokens and cost, and errors per task
(the warnings about runs with too many errors: :mod:`helixbench.run.health`)."""

from __future__ import annotations

import math

import pandas as pd

from ...config.plan import Plan, RunTask

REPLAY_COLUMNS = [
    "model",
    "method",
    "benchmark",
    "task",
    "calls",
    "hits",
    "misses",
    "max_calls",
    "url_rule",
]


def replay_table(plan: Plan, records: dict[RunTask, list[dict]]) -> pd.DataFrame:
    """Per replayed task: model calls, hits and misses, and the loop variant the
    recording was made with (read off its files: recordings.infer_loop)."""
    rows = []
    for task in plan.tasks:
        if task.model_spec.get("backend") != "replay":
            continue
        events = [e for r in records[task] for e in r["events"]]
        model_events = [e for e in events if e["type"] == "model"]
        loop = records[task][0].get("loop", {}) if records[task] else {}
        rows.append(
            {
                "model": task.model,
                "method": task.method,
                "benchmark": task.benchmark,
                "task": task.task,
                "calls": len(model_events),
                "hits": sum(e["data"]["cache"] == "hit" for e in model_events),
                "misses": sum(e["data"]["cache"] == "miss" for e in model_events),
                "max_calls": loop.get("max_calls"),
                "url_rule": loop.get("url_rule"),
            }
        )
    return pd.DataFrame(rows, columns=REPLAY_COLUMNS)


COST_COLUMNS = [
    "model",
    "method",
    "questions",
    "model_calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "reused_tokens",
    "model_s",
    "cached_model_s",
    "tool_s",
    "wall_s",
    "cost_usd",
]


def cost_table(plan: Plan, records: dict[RunTask, list[dict]], prices: dict) -> pd.DataFrame:
    """Per run (model x method): calls, tokens, time and cost, as BRAD profiles its modules.

    ``model_s`` is the time this run waited on its model; ``cached_model_s`` the time
    the calls it found in the response cache took when they were made, so the
    latency per model call (``s_per_model_call``) is the model's, cached or not.
    Cost counts the calls that reached the model (cache misses) at the config's
    price per million tokens; a model without a price has no cost (local, replay).
    """
    totals: dict[tuple[str, str], dict] = {}
    tool_calls: dict[tuple[str, str], int] = {}
    fresh_s: dict[tuple[str, str], float] = {}  # seconds of the calls that reached the model
    for task in plan.tasks:
        key = (task.model, task.method)
        row = totals.setdefault(
            key,
            {c: 0 for c in COST_COLUMNS[2:]} | {"model": task.model, "method": task.method},
        )
        price = prices.get(task.model)
        for record in records[task]:
            row["questions"] += 1
            row["wall_s"] += record.get("wall_s") or 0.0
            for event in record["events"]:
                data = event["data"]
                if event["type"] == "tool":
                    row["tool_s"] += event.get("latency_s") or 0.0
                    tool_calls[key] = tool_calls.get(key, 0) + 1
                    continue
                if event["type"] != "model":  # a claim, a retrieval, an agent's process
                    continue
                row["model_calls"] += 1
                row["model_s"] += event.get("latency_s") or 0.0
                row["cache_hits"] += data.get("cache") == "hit"
                if data.get("cache") == "hit":
                    row["cached_model_s"] += data.get("original_latency_s") or 0.0
                else:
                    fresh_s[key] = fresh_s.get(key, 0.0) + (event.get("latency_s") or 0.0)
                prompt, completion = data.get("prompt_tokens"), data.get("completion_tokens")
                row["prompt_tokens"] += prompt or 0
                row["completion_tokens"] += completion or 0
                row["reused_tokens"] += data.get("reused_tokens") or 0
                if price and data.get("cache") == "miss":
                    row["cost_usd"] += (
                        (prompt or 0) * price["prompt"] + (completion or 0) * price["completion"]
                    ) / 1e6
        if not price:
            row["cost_usd"] = None
    table = pd.DataFrame(list(totals.values()), columns=COST_COLUMNS)
    # Latency: mean seconds per model call, per tool call and per question.
    calls = table.model_calls.where(table.model_calls > 0)
    fresh = pd.Series(
        [fresh_s.get((m, t), 0.0) for m, t in zip(table.model, table.method, strict=True)]
    )
    table["s_per_model_call"] = ((fresh + table.cached_model_s) / calls).round(3)
    n_tools = pd.Series(
        [tool_calls.get((m, t), 0) for m, t in zip(table.model, table.method, strict=True)]
    )
    table["s_per_tool_call"] = (table.tool_s / n_tools.where(n_tools > 0)).round(3)
    table["s_per_question"] = (table.wall_s / table.questions.where(table.questions > 0)).round(3)
    for column in ("model_s", "cached_model_s", "tool_s", "wall_s"):
        table[column] = table[column].round(1)
    table["cost_usd"] = table["cost_usd"].map(lambda v: None if v is None else round(v, 4))
    return table


def error_table(plan: Plan, records: dict[RunTask, list[dict]]) -> pd.DataFrame:
    rows = []
    for task in plan.tasks:
        task_records = records[task]
        tool_events = [e for r in task_records for e in r["events"] if e["type"] == "tool"]
        rows.append(
            {
                "model": task.model,
                "method": task.method,
                "benchmark": task.benchmark,
                "task": task.task,
                "questions": len(task_records),
                "lengthError": sum(r["error"] == "lengthError" for r in task_records),
                "numError": sum(r["error"] == "numError" for r in task_records),
                "model_miss": sum(r["error"] == "model_miss" for r in task_records),
                "model_error": sum(r["error"] == "model_error" for r in task_records),
                "tools": task.tools_mode,
                "tool_calls": len(tool_events),
                "tool_errors": sum(e["data"]["error"] is not None for e in tool_events),
                # How each call was answered: replay, cache hit, network (miss), stale
                # cache after a network failure, or refused before any lookup (none).
                **{
                    f"tool_{how}": sum(
                        (e["data"].get("cache") or "none") == how for e in tool_events
                    )
                    for how in ("replay", "hit", "miss", "stale", "recorded", "imported", "none")
                },
                "tool_offline": sum(
                    (e["data"]["error"] or "").startswith("offline") for e in tool_events
                ),
            }
        )
    return pd.DataFrame(rows)


AGENT_COLUMNS = [
    "model",
    "method",
    "questions",
    "answered",
    "agent_timeout",
    "agent_error",
    "agent_no_answer",
    "agent_limit",  # stopped by a cap of the method's limits (which ones: `limits_reached`)
    "model_calls",
    "model_hits",  # answered from the response cache (depends on which run went first)
    # Calls whose prompt (its digest) another run of the same model sent on the same
    # question: the seed systems' cross-check, whatever the jobs' order.
    "prompts_shared",
    "sandbox",  # isolated (its own namespaces) or cooperative (marked unsandboxed)
    "tool_calls",  # served through the tool gateway (the routed ones)
    "tool_hits",
    "refused",  # refused requests, connections and datagrams
    "unresolved",  # lookups of names that are not allowlisted hosts
    "syscalls",  # system calls the sandbox's seccomp filter refused
    "s_per_question",
    "original",  # a seed system run unchanged (methods.originals), else ""
    "sleep_asked_s",  # its fixed sleeps, as written and as slept (sleep_scale)
    "sleep_slept_s",
    "routes",
    "limits_reached",  # cap: questions that reached it
    "limits",  # each cap, and what held it on the machine that ran it
]


def agent_table(plan: Plan, records: dict[RunTask, list[dict]]) -> pd.DataFrame:
    """Per agent run: how its questions ended, its calls through the gateways, and
    which routes it used (model API paths, tool hosts, MCP functions) how often."""
    rows: dict[tuple[str, str], dict] = {}
    for task in plan.tasks:
        if task.method_spec.get("kind") != "agent":
            continue
        row = rows.setdefault(
            (task.model, task.method),
            {c: 0 for c in AGENT_COLUMNS[2:]}
            | {"model": task.model, "method": task.method}
            | {"original": task.method_spec.get("original") or ""}
            | {"sandbox": task.method_spec.get("sandbox", "isolated")},
        )
        routes = row["routes"] if isinstance(row["routes"], dict) else {}
        reached = row["limits_reached"] if isinstance(row["limits_reached"], dict) else {}
        for record in records[task]:
            row["questions"] += 1
            row["answered"] += record["error"] is None
            if record["error"] in ("agent_timeout", "agent_error", "agent_no_answer"):
                row[record["error"]] += 1
            if (record["error"] or "").startswith("agent_limit"):
                row["agent_limit"] += 1
            if not row["limits"] and (record.get("agent") or {}).get("limits"):
                row["limits"] = held_limits(record["agent"])
            for event in record["events"]:
                data = event["data"]
                if event["type"] == "model":
                    row["model_calls"] += 1
                    row["model_hits"] += data.get("cache") == "hit"
                elif event["type"] == "tool":
                    route, count = data.get("route"), data.get("count") or 1
                    if route == "unresolved":
                        row["unresolved"] += count
                    elif route == "syscall":
                        row["syscalls"] += count
                    elif (data.get("error") or "").startswith("refused"):
                        row["refused"] += count
                    else:
                        row["tool_calls"] += 1
                        row["tool_hits"] += data.get("cache") == "hit"
                elif event["type"] == "agent":
                    row["s_per_question"] += data.get("seconds") or 0.0
                    sleep = _mapping(_mapping(data.get("runner")).get("sleep"))
                    row["sleep_asked_s"] += _seconds(sleep.get("asked_s"))
                    row["sleep_slept_s"] += _seconds(sleep.get("slept_s"))
                    for route, n in (data.get("routes") or {}).items():
                        routes[route] = routes.get(route, 0) + n
                    for cap in data.get("limits_reached") or []:
                        reached[cap] = reached.get(cap, 0) + 1
        row["routes"], row["limits_reached"] = routes, reached
    for row in rows.values():
        row["s_per_question"] = round(row["s_per_question"] / max(row["questions"], 1), 3)
        for key in ("sleep_asked_s", "sleep_slept_s"):
            row[key] = round(row[key], 1)
        row["routes"] = "; ".join(f"{k} {v}" for k, v in sorted(row["routes"].items()))
        row["limits_reached"] = "; ".join(f"{k} {v}" for k, v in row["limits_reached"].items())
        row["limits"] = row["limits"] or ""
    return pd.DataFrame(list(rows.values()), columns=AGENT_COLUMNS)


def _mapping(value) -> dict:
    """A runner's report, as the agent wrote it: a mapping, or nothing."""
    return value if isinstance(value, dict) else {}


def _seconds(value) -> float:
    """Seconds a runner reports, where they are a finite number of them (else none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and abs(value) < 1e12 else 0.0


def prompt_digests(records: dict[RunTask, list[dict]]) -> dict[str, list[str]]:
    """Per question, the digests of the prompts the run's model calls sent (a run's
    summary keeps them, so the report can pair two runs' calls)."""
    sent: dict[str, list[str]] = {}
    for task_records in records.values():
        for record in task_records:
            digests = [
                e["data"]["prompt_sha256"]
                for e in record["events"]
                if e["type"] == "model" and e["data"].get("prompt_sha256")
            ]
            if digests:
                sent.setdefault(record["question_id"], []).extend(digests)
    return sent


def with_shared_prompts(
    agents: pd.DataFrame, summaries: dict[str, dict], prompts_of
) -> pd.DataFrame:
    """``prompts_shared`` of each agent run: its model calls whose prompt another run of
    the same model sent on the same question (the seed systems' cross-check, which
    unlike cache hits does not depend on which job ran first). ``prompts_of(label)``:
    a run's prompt digests (its ``prompts.json``), read for these models' runs only."""
    if agents.empty:
        return agents
    shared = []
    for row in agents.itertuples():
        runs = [label for label, s in summaries.items() if s["model"] == row.model]
        mine = next((prompts_of(r) for r in runs if summaries[r]["method"] == row.method), {})
        others = [prompts_of(r) for r in runs if summaries[r]["method"] != row.method]
        count = 0
        for question, digests in mine.items():
            theirs = {d for other in others for d in other.get(question, ())}
            count += sum(d in theirs for d in digests)
        shared.append(count)
    return agents.assign(prompts_shared=shared)


# How a cap reads in agents.csv and the report: its value, its unit.
LIMIT_UNITS = {
    "memory_mb": ("memory", "MB"),
    "processes": ("processes", ""),
    "cpu_s": ("CPU", "s"),
    "open_files": ("open files", ""),
    "output_mb": ("output", "MB"),
    "tmp_mb": ("/tmp", "MB"),
    "home_mb": ("HOME", "MB"),
    "workdir_mb": ("question folder", "MB"),
    "connections": ("requests in flight", ""),
    "body_mb": ("request body", "MB"),
    "timeout_s": ("wall", "s"),
}


def held_limits(agent: dict) -> str:
    """An agent run's caps and what held each (a record's ``agent``), in one line."""
    held = agent.get("limits_held") or {}
    keys = {"memory_mb": "memory", "processes": "processes", "cpu_s": "cpu"}
    keys |= {"open_files": "open_files", "output_mb": "output", "tmp_mb": "tmp"}
    keys |= {"home_mb": "home", "workdir_mb": "workdir"}
    keys |= {"connections": "connections", "body_mb": "body"}
    parts = []
    for key, value in agent["limits"].items():
        name, unit = LIMIT_UNITS.get(key, (key, ""))
        how = held.get(keys.get(key, ""))
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        parts.append(f"{name} {shown}{' ' + unit if unit else ''}{f' ({how})' if how else ''}")
    return "; ".join(parts)
