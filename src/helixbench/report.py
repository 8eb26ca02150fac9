"""The report: Table-2-style leaderboard, GeneHop, replay fidelity, errors and provenance.

Everything here is computed from the run and score files the plan names, so
rerunning the report on the same results gives the same numbers.
"""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd

from . import __version__
from .benchmarks import GENETURING_MODULES, tasks_of
from .digests import sha256_file
from .paper import TABLE2_MODULES, TABLE3, published
from .plan import Plan, RunTask, upstream_path
from .records import read_records
from .scoring.genegpt import SCORED_TASKS
from .stats import bootstrap_macro, bootstrap_mean

PACKAGES = ("snakemake", "pandas", "pyyaml", "jsonschema", "requests", "tabulate")
ROUND = 7  # decimals kept in scores.csv (the reference values are given to 7)


def _run_label(task: RunTask) -> str:
    return f"{task.model} / {task.method}"


def _recording(task: RunTask) -> str | None:
    return task.recorded.recording if task.recorded else None


def load_scores(plan: Plan) -> pd.DataFrame:
    rows = []
    for task in plan.tasks:
        with open(task.score_path) as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    return pd.DataFrame(
        rows,
        columns=["question_id", "model", "method", "benchmark", "task", "metric", "score", "demo"],
    )


# ci_low / ci_high: the 95% percentile bootstrap interval over questions (seed 0;
# for a macro row, questions resampled within each task: helixbench.stats).
SCORE_COLUMNS = [
    "benchmark",
    "task",
    "model",
    "method",
    "metric",
    "n",
    "score",
    "paper",
    "ci_low",
    "ci_high",
]


def score_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """scores.csv: one row per (run, task, metric), plus macro rows (n = tasks averaged)."""
    rows = []
    for task in plan.tasks:
        ran = scores[
            (scores.model == task.model)
            & (scores.method == task.method)
            & (scores.benchmark == task.benchmark)
            & (scores.task == task.task)
        ]
        variants = {}
        for scorer, per_q in ran.groupby("metric", sort=True):
            variants[scorer] = per_q
            variants[f"{scorer}_excl_demos"] = per_q[per_q.demo.isna()]
        for metric, frame in variants.items():
            if frame.empty:
                continue
            interval = bootstrap_mean(frame.score)
            rows.append(
                {
                    "benchmark": task.benchmark,
                    "task": task.task,
                    "model": task.model,
                    "method": task.method,
                    "metric": metric,
                    "n": len(frame),
                    "score": frame.score.mean(),
                    "paper": published(
                        _recording(task),
                        task.method_spec.get("mask"),
                        task.benchmark,
                        task.task,
                        metric,
                    ),
                    "ci_low": interval.low,
                    "ci_high": interval.high,
                    "_recording": _recording(task),
                    "_mask": task.method_spec.get("mask"),
                    "_scores": list(frame.score),
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    macros = []
    for (benchmark, model, method, metric), group in table.groupby(
        ["benchmark", "model", "method", "metric"], sort=False
    ):
        complete = set(group.task) == _scored_tasks(benchmark)
        interval = bootstrap_macro(dict(zip(group.task, group._scores, strict=True)))
        macros.append(
            {
                "benchmark": benchmark,
                "task": "macro",
                "model": model,
                "method": method,
                "metric": metric,
                "n": len(group),
                "score": group.score.mean(),
                # The paper's average covers every task; compare only a complete set.
                "paper": published(
                    group._recording.iloc[0], group._mask.iloc[0], benchmark, "macro", metric
                )
                if complete
                else None,
                "ci_low": interval.low,
                "ci_high": interval.high,
            }
        )
    table = pd.concat([table, pd.DataFrame(macros)], ignore_index=True)
    for column in ("score", "ci_low", "ci_high"):
        table[column] = table[column].round(ROUND)
    return table[SCORE_COLUMNS]


def _scored_tasks(benchmark: str) -> set[str]:
    return set(tasks_of(benchmark)) & SCORED_TASKS


def load_records(plan: Plan) -> dict[RunTask, list[dict]]:
    """Every run record of every planned task, read once for all the tables."""
    return {task: [r for p in task.shard_paths() for r in read_records(p)] for task in plan.tasks}


def replay_table(plan: Plan, records: dict[RunTask, list[dict]]) -> pd.DataFrame:
    rows = []
    for task in plan.tasks:
        if task.model_spec.get("backend") != "replay":
            continue
        events = [e for r in records[task] for e in r["events"]]
        model_events = [e for e in events if e["type"] == "model"]
        rows.append(
            {
                "model": task.model,
                "method": task.method,
                "benchmark": task.benchmark,
                "task": task.task,
                "calls": len(model_events),
                "hits": sum(e["data"]["cache"] == "hit" for e in model_events),
                "misses": sum(e["data"]["cache"] == "miss" for e in model_events),
            }
        )
    return pd.DataFrame(
        rows, columns=["model", "method", "benchmark", "task", "calls", "hits", "misses"]
    )


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
    "tool_s",
    "wall_s",
    "cost_usd",
]


def cost_table(plan: Plan, records: dict[RunTask, list[dict]], prices: dict) -> pd.DataFrame:
    """Per run (model x method): calls, tokens, time and cost, as BRAD profiles its modules.

    Cost counts the calls that reached the model (cache misses) at the config's
    price per million tokens; a model without a price has no cost (local, replay).
    """
    totals: dict[tuple[str, str], dict] = {}
    for task in plan.tasks:
        row = totals.setdefault(
            (task.model, task.method),
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
                    continue
                row["model_calls"] += 1
                row["model_s"] += event.get("latency_s") or 0.0
                row["cache_hits"] += data.get("cache") == "hit"
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
    for column in ("model_s", "tool_s", "wall_s"):
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
                    for how in ("replay", "hit", "miss", "stale", "none")
                },
                "tool_offline": sum(
                    (e["data"]["error"] or "").startswith("offline") for e in tool_events
                ),
            }
        )
    return pd.DataFrame(rows)


def _fmt(value) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.2f}"


def table2(plan: Plan, scores: pd.DataFrame, metric: str = "genegpt") -> pd.DataFrame:
    """GeneTuring in the paper's layout: modules, tasks, module averages, overall average."""
    runs = list(dict.fromkeys(_run_label(t) for t in plan.tasks if t.benchmark == "geneturing"))
    # Any task of a run tells its recording and mask.
    by_run = {_run_label(t): t for t in plan.tasks if t.benchmark == "geneturing"}
    sel = scores[(scores.benchmark == "geneturing") & (scores.metric == metric)]
    lookup = {(f"{r.model} / {r.method}", r.task): r for r in sel.itertuples()}
    rows = []
    for module, tasks in GENETURING_MODULES.items():
        for task in tasks:
            row = {"module": module, "task": task}
            for run in runs:
                hit = lookup.get((run, task))
                row[run] = _fmt(hit.score) if hit else "n/a"
                row[f"{run} (paper)"] = _fmt(hit.paper) if hit else ""
            rows.append(row)
        row = {"module": module, "task": "Average"}
        for run in runs:
            values = [lookup[(run, t)].score for t in tasks if (run, t) in lookup]
            row[run] = _fmt(sum(values) / len(values)) if len(values) == len(tasks) else "n/a"
            mask = by_run[run].method_spec.get("mask")
            paper = TABLE2_MODULES.get(mask, {}).get(module) if _recording(by_run[run]) else None
            row[f"{run} (paper)"] = _fmt(paper) if metric == "genegpt" else ""
        rows.append(row)
    row = {"module": "Overall", "task": "Macro average"}
    for run in runs:
        hit = lookup.get((run, "macro"))
        row[run] = _fmt(hit.score) if hit else "n/a"
        row[f"{run} (paper)"] = _fmt(hit.paper) if hit else ""
    rows.append(row)
    return pd.DataFrame(rows)


def genehop_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    runs = list(dict.fromkeys(_run_label(t) for t in plan.tasks if t.benchmark == "genehop"))
    sel = scores[(scores.benchmark == "genehop") & (scores.metric == "genegpt")]
    lookup = {(f"{r.model} / {r.method}", r.task): r for r in sel.itertuples()}
    ran = {(_run_label(t), t.task) for t in plan.tasks if t.benchmark == "genehop"}
    rows = []
    for task in tasks_of("genehop"):
        row = {"task": task}
        for run in runs:
            hit = lookup.get((run, task))
            if hit:
                row[run], row[f"{run} (paper)"] = _fmt(hit.score), _fmt(hit.paper)
            else:
                row[run] = "replayed, not scored automatically" if (run, task) in ran else "n/a"
                row[f"{run} (paper)"] = ""
        row["paper (GeneGPT, Table 3)"] = _fmt(TABLE3[task][1]) + (
            "" if task == "Disease gene location" else " (judged by hand)"
        )
        rows.append(row)
    return pd.DataFrame(rows)


def provenance(
    plan: Plan, records: dict[RunTask, list[dict]], config: dict, config_digest: str
) -> dict:
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    upstream = []
    for f in plan.upstream_files():
        local = Path(upstream_path(f))
        upstream.append(
            {
                "url": f.url,
                "sha256": sha256_file(local) if local.exists() else None,
                "pinned": f.sha256,
            }
        )
    snapshots, models = {}, {}
    for task in plan.tasks:
        if records[task]:
            first = records[task][0]
            snapshots[f"{_run_label(task)} / {task.task}"] = first["snapshot_id"]
            models.setdefault(task.model, []).append(first["model_identity"])
    return {
        "helixbench": {"version": __version__, "commit": _git_commit()},
        "config_sha256": config_digest,
        "config": config,
        "snapshots": snapshots,
        "upstream": upstream,
        "models": {
            m: [dict(t) for t in {json.dumps(i, sort_keys=True): i for i in ids}.values()]
            for m, ids in models.items()
        },
        "python": platform.python_version(),
        "packages": {p: version(p) for p in PACKAGES},
    }


def _git_commit() -> str | None:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def write_report(plan: Plan, config: dict, config_digest: str, out_dir: Path) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    scores = load_scores(plan)
    summary = score_table(plan, scores)
    summary.to_csv(out_dir / "scores.csv", index=False)
    records = load_records(plan)
    replay = replay_table(plan, records)
    replay.to_csv(out_dir / "replay.csv", index=False)
    errors = error_table(plan, records)
    errors.to_csv(out_dir / "errors.csv", index=False)
    costs = cost_table(plan, records, config.get("prices", {}))
    costs.to_csv(out_dir / "cost.csv", index=False)
    t2 = table2(plan, summary)
    t2.to_csv(out_dir / "table2.csv", index=False)
    (out_dir / "table2.md").write_text(t2.to_markdown(index=False, disable_numparse=True) + "\n")
    hop = genehop_table(plan, summary)
    (out_dir / "genehop.md").write_text(hop.to_markdown(index=False, disable_numparse=True) + "\n")
    prov = provenance(plan, records, config, config_digest)
    (out_dir / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    (out_dir / "report.md").write_text(
        _markdown(
            plan,
            summary,
            t2,
            table2(plan, summary, "genegpt_excl_demos"),
            hop,
            replay,
            errors,
            costs,
            prov,
        )
    )


def _markdown(plan, summary, t2, t2_nodemo, hop, replay, errors, costs, prov) -> str:
    hits = int(replay.hits.sum()) if not replay.empty else 0
    calls = int(replay.calls.sum()) if not replay.empty else 0
    replay_summary = replay.groupby(["model", "method"], sort=False)[
        ["calls", "hits", "misses"]
    ].sum()
    replay_summary["hit rate"] = (replay_summary.hits / replay_summary.calls).map(
        lambda v: f"{v:.1%}"
    )
    notes = "\n".join(
        f"- **{n['level']}** ({n['model']} / {n['method']}, {n['benchmark']}): {n['message']}"
        for n in plan.notes
    )
    return f"""# helixbench report

Produced by helixbench {prov["helixbench"]["version"]} (commit {prov["helixbench"]["commit"]}),
config sha256 `{prov["config_sha256"][:16]}`, Python {prov["python"]}. Full provenance
(upstream checksums, snapshot ids, model identities, package versions) is in
`provenance.json`.

## How to read this report
- Scores use GeneGPT's upstream evaluator (`genegpt` metric), per question in
  `results/scores/`; a task's score is the mean over its questions. `scores.csv` keeps
  7 decimals; the tables round to 2, as the paper does. `ci_low`/`ci_high` in
  `scores.csv` are 95% bootstrap intervals over questions (10,000 resamples,
  seed 0; a macro row resamples within each task).
- "(paper)" columns give the value the GeneGPT paper published for the same
  recording and mask. Only replayed GeneGPT runs have one.
- The four GeneGPT demonstrations are scored test items; the second table leaves
  them out (`genegpt_excl_demos` in `scores.csv`).
- Replay hit rate: the share of model calls answered by a recorded completion for
  exactly the prompt we built. Anything below 100% means our prompts differ from
  upstream's.

## Notes and warnings
{notes or "- none"}

## GeneTuring (Table 2)
{t2.to_markdown(index=False, disable_numparse=True)}

### GeneTuring without the demonstration items
{t2_nodemo.to_markdown(index=False, disable_numparse=True)}

## GeneHop (Table 3)
{hop.to_markdown(index=False, disable_numparse=True)}

## Replay fidelity
{hits} of {calls} model calls replayed byte for byte.

{replay_summary.reset_index().to_markdown(index=False, disable_numparse=True)}

## Errors per task
{errors.to_markdown(index=False, disable_numparse=True)}

## Time, tokens and cost per run
Token counts come from the model (the API's usage, or the local tokenizer); replayed
runs have none. `reused_tokens`: prompt tokens a local model served from its
key/value cache instead of encoding them. `cost_usd` prices the calls that reached
the model (cache misses) with the config's `prices`; empty where no price is set.

{costs.to_markdown(index=False, disable_numparse=True)}
"""
