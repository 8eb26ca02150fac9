"""BixBench: the zero-shot section of the report (docs/benchmarks.md, "BixBench").

- ``bixbench.csv``: per run and task (a version and mode), BixBench's figures as its
  ``compute_metrics`` states them (accuracy with its 95% interval, precision,
  coverage, n_total, n_correct, n_sure) and, for a run BixBench published (a pinned
  source, or a user's own file with ``published_as``), the aggregates of its
  ``zero_shot_baselines.json`` beside them (``matches``: all five equal).
- ``bixbench_paired.csv``: per task, each run of the config against each published
  run, on the questions both answered (the primary score: the sign-flip test's
  difference, interval and p).
- ``bixbench_verifier.csv``: every open answer of a published run whose string or
  range verdict is not BixBench's: where helixbench's verifier disagrees, or has no
  verdict because BixBench asked its LLM (``graded_by`` says which grader BixBench used).
- ``bixbench_beside.csv``: per run, LAB-Bench, LABBench2 and BixBench side by side
  (BixBench's refusal trade-off: accuracy and coverage with and without the refusal
  option).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...benchmarks.bixbench import AGGREGATES, TASKS
from ...config.plan import Plan
from ...paths import upstream_path
from ...stats import mean_interval, paired_interval, paired_test
from ..records import primary_metric, rows_by_run
from .frontier import _rounded, verdict_metric

BENCHMARKS = ("bixbench-mcq", "bixbench-open")
FIGURES = ("accuracy", "precision", "coverage", "n_total", "n_correct", "n_sure")
COLUMNS = [
    "run", "model", "method", "task", "version", "mode", "asked", "n_total", "n_correct",
    "n_sure", "accuracy", "ci_low", "ci_high", "precision", "coverage", "judge_accuracy",
    "judge_questions", "published_as",
    *(f"published_{f}" for f in FIGURES), "matches",
]  # fmt: skip
PAIRED_COLUMNS = [
    "task", "run", "published", "questions", "score", "published_score", "difference",
    "ci_low", "ci_high", "p_value",
]  # fmt: skip
VERIFIER_COLUMNS = [
    "run", "question_id", "task", "mode", "published", "ours", "our_reason", "graded_by",
]  # fmt: skip
BESIDE_COLUMNS = [
    "run", "lab_bench", "labbench2", "bixbench_mcq_refusal", "bixbench_mcq_refusal_coverage",
    "bixbench_mcq", "bixbench_open",
]  # fmt: skip


def _published(plan: Plan, run) -> str | None:
    """The name BixBench's aggregates give a run's model (its source's ``published_as``)."""
    return plan.sources.get(run.model, {}).get("published_as") if run.imported else None


def aggregates() -> dict[str, dict]:
    """Version -> BixBench's published aggregates (``zero_shot_baselines.json``)."""
    return {v: json.loads(Path(upstream_path(f)).read_text()) for v, f in AGGREGATES.items()}


def bixbench_table(plan: Plan, scores: pd.DataFrame, summaries: dict) -> pd.DataFrame:
    published = aggregates() if any(t.benchmark in BENCHMARKS for t in plan.tasks) else {}
    rows = []
    of_run = rows_by_run(scores[scores.benchmark.isin(BENCHMARKS)])
    for run in plan.runs:
        if not any(t.benchmark in BENCHMARKS for t in run.tasks):
            continue
        asked = {f["task"]: f["questions"] for f in summaries[run.label]["tasks"]}
        own = of_run(run.label)
        for task in (t for t in run.tasks if t.benchmark in BENCHMARKS):
            version, mode = TASKS[task.task]
            figures = _figures(own[own.task == task.task], task.benchmark)
            name = _published(plan, run)
            theirs = published.get(version, {}).get(f"{name}-grader-{mode}") if name else None
            rows.append(
                {
                    "run": run.label,
                    "model": run.model,
                    "method": run.method,
                    "task": task.task,
                    "version": version,
                    "mode": mode,
                    "asked": asked.get(task.task),
                    **figures,
                    "published_as": name,
                    **{f"published_{f}": (theirs or {}).get(f) for f in FIGURES},
                    "matches": _matches(figures, theirs) if theirs else None,
                }
            )
    table = _rounded(pd.DataFrame(rows, columns=COLUMNS))
    counts = [c for c in COLUMNS if c.startswith(("n_", "published_n_"))]
    counts += ["asked", "judge_questions"]
    return table.astype(dict.fromkeys(counts, "Int64"))


def _figures(sel: pd.DataFrame, benchmark: str) -> dict:
    """compute_metrics' figures from a task's per-question scores: multiple choice by
    accuracy and coverage, an open answer by its primary score (never refused)."""
    if benchmark == "bixbench-mcq":
        right = sel[sel.metric == "accuracy"].score
        sure = int(sel[sel.metric == "coverage"].score.sum())
    else:
        right = sel[sel.metric == "bixbench"].score
        sure = len(right)
    total, correct = len(right), int(right.sum())
    interval = mean_interval(right) if total else None
    judged = sel[sel.metric == "bix_judge"].score  # (BixBench's grader's prompt, ours asked)
    return {
        "judge_accuracy": judged.mean() if not judged.empty else None,
        "judge_questions": len(judged) if not judged.empty else None,
        "n_total": total,
        "n_correct": correct,
        "n_sure": sure,
        "accuracy": correct / total if total else None,
        "ci_low": interval.low if interval else None,
        "ci_high": interval.high if interval else None,
        "precision": correct / sure if sure else None,
        "coverage": sure / total if total else None,
    }


def _matches(ours: dict, theirs: dict) -> bool:
    counts = all(ours[f] == theirs[f] for f in ("n_total", "n_correct", "n_sure"))
    fractions = all(
        ours[f] is not None and abs(ours[f] - theirs[f]) < 1e-9
        for f in ("accuracy", "precision", "coverage")
    )
    return counts and fractions


def paired_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """Each run of the config against each published run, task by task."""
    runs = [r for r in plan.runs if any(t.benchmark in BENCHMARKS for t in r.tasks)]
    rows = []
    for task in dict.fromkeys(t.task for r in runs for t in r.tasks if t.benchmark in BENCHMARKS):
        values = {}
        for run in runs:
            sel = scores[(scores.run == run.label) & (scores.task == task)]
            sel = sel[sel.metric == primary_metric(plan, task)]
            if not sel.empty:
                values[run] = dict(zip(sel.question_id, sel.score, strict=True))
        for ours in (r for r in values if not r.imported):
            for theirs in (r for r in values if r.imported):
                rows.append(_paired(task, ours, theirs, values[ours], values[theirs]))
    return _rounded(pd.DataFrame([r for r in rows if r], columns=PAIRED_COLUMNS))


def _paired(task, ours, theirs, a: dict, b: dict) -> dict | None:
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    test, interval = paired_test(a, b), paired_interval(a, b)
    return {
        "task": task,
        "run": ours.label,
        "published": theirs.label,
        "questions": len(shared),
        "score": sum(a[q] for q in shared) / len(shared),
        "published_score": sum(b[q] for q in shared) / len(shared),
        "difference": test.difference,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "p_value": test.p_value if interval.told else None,
    }


def verifier_table(summaries: dict) -> pd.DataFrame:
    rows = [
        {"run": label, **row}
        for label, summary in summaries.items()
        for row in (summary.get("bixbench") or {}).get("verifier", [])
    ]
    return pd.DataFrame(rows, columns=VERIFIER_COLUMNS)


def verifier_rows(records: list[dict], score_lines: list[dict]) -> list[dict]:
    """A run's open answers graded by string or range whose verdict by helixbench's
    verifier is not BixBench's published one (differs, or none)."""
    ours = {
        line["question_id"]: line
        for line in score_lines
        if line["metric"] == "bix_verifier" and line["benchmark"] == "bixbench-open"
    }
    found = []
    for record in records:
        published = record.get("published") or {}
        mode = published.get("mode")
        if mode not in ("str_verifier", "range_verifier"):
            continue
        line = ours.get(record["question_id"])
        if line is not None and line["score"] == published["value"]:
            continue
        found.append(
            {
                "question_id": record["question_id"],
                "task": record["task"],
                "mode": mode,
                "published": published["value"],
                "ours": line["score"] if line else None,
                "our_reason": line.get("reason") if line else "no verdict",
                "graded_by": "its LLM range grader"
                if mode == "range_verifier"
                else "its str_verifier"
                if line
                else "its LLM (no string match)",
            }
        )
    return found


def beside_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """Per run: LAB-Bench (pooled accuracy over what it asked), LABBench2 (its verdicts
    over every question it has one for) and BixBench's v1 zero-shot figures."""
    rows = []
    shown = {"v1/mcq-refusal", "v1/mcq", "v1/open"}  # (a run without them is left out)
    labbench = [b for b in scores.benchmark.unique() if str(b).startswith("labbench")]
    of_run = rows_by_run(scores[scores.benchmark.isin(labbench) | scores.task.isin(list(shown))])
    for run in plan.runs:
        if not any(t.task in shown for t in run.tasks):
            continue
        own = of_run(run.label)
        lab = own[own.benchmark.astype(str).str.startswith("labbench-")]
        lab = lab[lab.metric == "accuracy"]
        lb2 = own[(own.benchmark == "labbench2") & (own.metric == verdict_metric(run))]
        bix = {
            name: own[(own.task == task) & (own.metric == metric)].score
            for name, task, metric in (
                ("refusal", "v1/mcq-refusal", "accuracy"),
                ("refusal_coverage", "v1/mcq-refusal", "coverage"),
                ("mcq", "v1/mcq", "accuracy"),
                ("open", "v1/open", "bixbench"),
            )
        }
        if all(v.empty for v in bix.values()):
            continue  # (a run without BixBench: the frontier section has it)
        rows.append(
            {
                "run": run.label,
                "lab_bench": lab.score.mean() if not lab.empty else None,
                "labbench2": lb2.score.mean() if not lb2.empty else None,
                "bixbench_mcq_refusal": _mean(bix["refusal"]),
                "bixbench_mcq_refusal_coverage": _mean(bix["refusal_coverage"]),
                "bixbench_mcq": _mean(bix["mcq"]),
                "bixbench_open": _mean(bix["open"]),
            }
        )
    return _rounded(pd.DataFrame(rows, columns=BESIDE_COLUMNS))


def _mean(values: pd.Series):
    return values.mean() if not values.empty else None


def bixbench_shown(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """A BixBench table as the page and report.md show it: the run and task first, an
    interval beside its value, empty columns left out."""
    from ..text import fmt, fmt_bracket

    if table.empty:
        return table
    if name == "bixbench":
        spans = zip(table.accuracy, table.ci_low, table.ci_high, strict=True)
        shown = pd.DataFrame(
            {
                "task, run": [f"{t}: {r}" for t, r in zip(table.task, table.run, strict=True)],
                "accuracy": [f"{fmt(a)} {fmt_bracket(lo, hi)}" for a, lo, hi in spans],
                "precision": table.precision,
                "coverage": table.coverage,
                "n_correct": table.n_correct,
                "n_sure": table.n_sure,
                "n_total": table.n_total,
                "published": [
                    None if m is None or pd.isna(m) else "equal" if m else "differs"
                    for m in table.matches
                ],
                "published_accuracy": table.published_accuracy,
                "judge": table.judge_accuracy,
            }
        )
    elif name == "bixbench_paired":
        spans = zip(table.difference, table.ci_low, table.ci_high, strict=True)
        shown = table.assign(
            difference=[f"{fmt(d)} {fmt_bracket(lo, hi)}" for d, lo, hi in spans]
        ).drop(columns=["ci_low", "ci_high"])
    else:
        shown = table
    return shown.dropna(axis="columns", how="all")


BIXBENCH_TEXT = """\
BixBench's zero-shot baselines (Future-House/BixBench, pinned: v1's 296 questions,
v1.5's 205), asked of the config's models with BixBench's own prompts and read as its
`parse_response` reads them, and its published runs of GPT-4o and Claude 3.5 Sonnet,
every answer graded as its code grades it: multiple choice by its string rule
(coverage: answered rather than the refusal option), open answers by its string and
range verifiers and its LLM grader's prompt (`scoring.judge`). Figures as its
`compute_metrics` states them; a published run's aggregates from its
`zero_shot_baselines.json` beside ours (`published`: equal or not). The agentic mode,
which analyses the data capsules (about 19 GB on a hub), is out of reach offline."""
BIXBENCH_PARTS = {
    "bixbench": "",
    "bixbench_paired": "### The config's runs against BixBench's published ones\nPer task, "
    "on the questions both answered (primary score; the sign-flip test's interval and "
    "p).\n\n",
    "bixbench_verifier": "### Where the string and range verifiers are not BixBench's grade "
    "({rows})\nEvery open answer of a published run graded by string or range whose "
    "verdict by helixbench's verifier differs from BixBench's or is missing, with the "
    "grader BixBench used (its LLM, for every range and every string no rule "
    "matched).\n\n",
    "bixbench_beside": "### BixBench beside LAB-Bench and LABBench2\nPer run: LAB-Bench's "
    "accuracy over what it asked, LABBench2's by its verdicts, BixBench v1's zero-shot "
    "figures (with the refusal option: accuracy and coverage, the trade-off).\n\n",
}


def bixbench_markdown(tables: dict) -> str | None:
    """report.md's BixBench section (None: no BixBench run in this report)."""
    from ..text import md_section

    if tables["bixbench"].empty:
        return None
    return md_section(BIXBENCH_TEXT, BIXBENCH_PARTS, tables, bixbench_shown)
