"""LABBench2: the frontier section of the report (docs/benchmarks.md, "LABBench2").

- ``labbench2.csv``: per run and task (a tag in a mode), accuracy with its 95%
  interval and attempted accuracy, as LABBench2's summarize_report.py counts them
  (correct / (completed + failed); correct / completed), then the tokens it spent
  and, where the config prices the model, what a correct answer cost. An imported
  system is counted by LABBench2's published verdicts (beside them: the judge's, where
  one ran); a run of ours by the primary ``labbench2`` verdict, over the questions
  it was asked and a verdict exists for (``fewer`` marks a run on fewer questions
  than the task has).
- ``labbench2_tools.csv``: the effect of tools per model, paired on the questions
  both runs answered (tools minus bare: interval and p of the sign-flip test).
- ``labbench2_agreement.csv``: per tag and type, how often helixbench's verdicts (the
  deterministic one, the judge's) agree with LABBench2's published ones: counts,
  share and Cohen's kappa; ``labbench2_disagreements.csv`` lists every disagreement
  with both reasons.
- ``labbench2_successors.csv``: LAB-Bench's subsets beside their successors.
"""

from __future__ import annotations

import pandas as pd

from ...config.plan import Plan, Run
from ...stats import mean_interval, paired_interval, paired_test
from .scores import ROUND

BENCHMARK = "labbench2"
OURS = ("lb2_value", "lb2_judge")  # the verdicts set beside LABBench2's own
FRONTIER_COLUMNS = [
    "run", "model", "method", "system", "tools", "task", "verdict", "asked", "empty", "questions",
    "fewer",
    "completed", "failed", "correct", "accuracy", "ci_low", "ci_high", "attempted",
    "judge_accuracy", "judge_undecided", "tokens", "tokens_per_question",
    "tokens_per_correct", "cost_usd", "cost_per_correct",
]  # fmt: skip
TOOLS_COLUMNS = [
    "model", "bare", "tools", "task", "questions", "bare_accuracy", "tools_accuracy",
    "difference", "ci_low", "ci_high", "p_value",
]  # fmt: skip
AGREEMENT_COLUMNS = [
    "scorer", "system", "tag", "type", "pairs", "both_right", "published_only", "ours_only",
    "both_wrong", "agreement", "kappa", "undecided",
]  # fmt: skip
DISAGREEMENT_COLUMNS = [
    "run", "question_id", "task", "type", "scorer", "published", "published_reason", "ours",
    "our_reason",
]  # fmt: skip
# LAB-Bench's subsets and their successors in LABBench2.
SUCCESSORS = {
    "labbench-dbqa": ("DbQA", "dbqa2"),
    "labbench-seqqa": ("SeqQA", "seqqa2"),
    "labbench-cloning": ("CloningScenarios", "cloning"),
}
SUCCESSOR_COLUMNS = [
    "run", "subset", "lab_bench", "lab_bench_questions", "successor", "labbench2",
    "labbench2_questions",
]  # fmt: skip
WITHOUT_TOOLS = ("no-tools", "closed-book")  # method kinds that call no tool
POOLED_ROW = "all (pooled)"  # the tools table's row over every question, as shown
POOLED_SYSTEMS = "all systems (pooled)"  # the agreement table's rows over every system


def verdict_metric(run: Run) -> str:
    """Which verdict counts a run: LABBench2's published one for its systems, the
    primary one for ours."""
    return "lb2_published" if run.imported else "labbench2"


def uses_tools(run: Run) -> bool:
    """An imported system with flags (``tools,high``) or a method that calls tools."""
    spec = run.first.method_spec
    if run.imported:
        return bool(spec.get("flags"))
    return spec["kind"] not in WITHOUT_TOOLS


def _of(scores: pd.DataFrame, run: Run, metric: str) -> pd.DataFrame:
    return scores[
        (scores.run == run.label) & (scores.benchmark == BENCHMARK) & (scores.metric == metric)
    ]


def frontier_table(plan: Plan, scores: pd.DataFrame, summaries: dict, prices: dict):
    rows = []
    for run in plan.runs:
        tasks = [t.task for t in run.tasks if t.benchmark == BENCHMARK]
        if not tasks:
            continue
        facts = summaries[run.label].get("labbench2") or {}
        asked = {f["task"]: f["questions"] for f in summaries[run.label]["tasks"]}
        empty = {f["task"]: f.get("empty") for f in summaries[run.label]["tasks"]}
        chosen = _of(scores, run, verdict_metric(run))
        judged = _of(scores, run, "lb2_judge")
        for task in tasks:
            sel = chosen[chosen.task == task]
            figures = _figures(sel)
            usage = (facts.get("usage") or {}).get(task) or {}
            tokens = usage.get("total_tokens")
            cost = _cost(prices.get(run.model), usage)
            correct, scored = figures["correct"], figures["questions"]
            judge = judged[judged.task == task]
            undecided = {k: v for k, v in ((facts.get("judge") or {}).get(task) or {}).items()}
            rows.append(
                {
                    "run": run.label,
                    "model": run.model,
                    "method": run.method,
                    "system": _system((facts.get("systems") or {}).get(task), run),
                    "tools": uses_tools(run),
                    "task": task,
                    "verdict": verdict_metric(run),
                    "asked": asked.get(task),
                    "empty": empty.get(task),  # (answers empty or missing: a degenerate task)
                    **figures,
                    "judge_accuracy": _figures(judge)["accuracy"] if not judge.empty else None,
                    "judge_undecided": sum(
                        n for k, n in undecided.items() if k not in ("correct", "incorrect")
                    )
                    if undecided
                    else None,
                    "tokens": tokens,
                    "tokens_per_question": tokens / scored if tokens and scored else None,
                    "tokens_per_correct": tokens / correct if tokens and correct else None,
                    "cost_usd": cost,
                    "cost_per_correct": cost / correct if cost is not None and correct else None,
                }
            )
    table = pd.DataFrame(rows, columns=FRONTIER_COLUMNS)
    if not table.empty:
        most = table.groupby("task").questions.transform("max")
        table["fewer"] = table.questions < most
    return _rounded(table)


def _figures(sel: pd.DataFrame) -> dict:
    """summarize_report.py's counts and accuracies of a task's verdicts, with the
    accuracy's exact 95% interval."""
    failed = int((sel.error == "failed_in_source").sum())
    questions = len(sel)
    correct = int((sel.score == 1.0).sum())
    completed = questions - failed
    interval = mean_interval(sel.score) if questions else None
    return {
        "questions": questions,
        "completed": completed,
        "failed": failed,
        "correct": correct,
        "accuracy": correct / questions if questions else None,
        "ci_low": interval.low if interval else None,
        "ci_high": interval.high if interval else None,
        "attempted": correct / completed if completed else None,
    }


def _system(reported: dict | None, run: Run) -> str:
    """The model as its report names it (``openai:gpt-5.2@tools,high``), else ours."""
    if not reported or not reported.get("model"):
        return run.model
    name = f"{reported['provider']}:{reported['model']}" if reported.get("provider") else ""
    name = name or reported["model"]
    return f"{name}@{reported['flags']}" if reported.get("flags") else name


def _cost(price: dict | None, usage: dict) -> float | None:
    if not price or usage.get("total_input_tokens") is None:
        return None
    return (
        usage["total_input_tokens"] * price["prompt"]
        + usage.get("total_output_tokens", 0) * price["completion"]
    ) / 1e6


def tools_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """Per model, each run with tools against each without, per task and over all the
    tasks (every question pooled), on the questions both answered."""
    rows = []
    runs = [r for r in plan.runs if any(t.benchmark == BENCHMARK for t in r.tasks)]
    for model in dict.fromkeys(r.model for r in runs):
        own = [r for r in runs if r.model == model]
        for bare in (r for r in own if not uses_tools(r)):
            for tooled in (r for r in own if uses_tools(r)):
                a = _of(scores, tooled, verdict_metric(tooled))
                b = _of(scores, bare, verdict_metric(bare))
                tasks = sorted(set(a.task) & set(b.task))
                for task in [*tasks, "all"]:
                    of_a = a if task == "all" else a[a.task == task]
                    of_b = b if task == "all" else b[b.task == task]
                    rows.append(_paired(model, bare, tooled, task, of_a, of_b))
    return _rounded(pd.DataFrame([r for r in rows if r], columns=TOOLS_COLUMNS))


def _paired(model, bare, tooled, task, of_a, of_b) -> dict | None:
    a = dict(zip(of_a.question_id, of_a.score, strict=True))
    b = dict(zip(of_b.question_id, of_b.score, strict=True))
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    test, interval = paired_test(a, b), paired_interval(a, b)
    return {
        "model": model,
        "bare": bare.method,
        "tools": tooled.method,
        "task": task,
        "questions": len(shared),
        "bare_accuracy": sum(b[q] for q in shared) / len(shared),
        "tools_accuracy": sum(a[q] for q in shared) / len(shared),
        "difference": test.difference,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "p_value": test.p_value if interval.told else None,
    }


def agreement_table(scores: pd.DataFrame, questions: dict, summaries: dict) -> pd.DataFrame:
    """Per scorer of ours, tag and type (and each tag's ``all``): our verdicts against
    LABBench2's published ones on the cases it completed, pooled over its systems."""
    sel = scores[(scores.benchmark == BENCHMARK) & scores.metric.isin(["lb2_published", *OURS])]
    published = sel[(sel.metric == "lb2_published") & sel.error.isna()]  # (completed cases)
    if published.empty:
        return pd.DataFrame(columns=AGREEMENT_COLUMNS)
    undecided = set()
    for label, summary in summaries.items():
        undecided |= {(label, q) for q in (summary.get("labbench2") or {}).get("undecided", {})}
    key = ["run", "question_id"]
    base = published[[*key, "task", "score"]].rename(columns={"score": "published"})
    base = base.assign(
        tag=[t.split("/")[0] for t in base.task],
        type=[questions[q].subtype or "" for q in base.question_id],
        held=[k in undecided for k in zip(base.run, base.question_id, strict=True)],
    )
    rows = []
    for scorer in OURS:
        ours = sel[sel.metric == scorer][[*key, "score"]].rename(columns={"score": "ours"})
        pairs = base.merge(ours, on=key, how="left")
        groups = [
            (POOLED_SYSTEMS, tag, kind, g) for (tag, kind), g in pairs.groupby(["tag", "type"])
        ]
        groups += [
            (POOLED_SYSTEMS, tag, "all", g)
            for tag, g in pairs.groupby("tag")
            if g.type.nunique() > 1
        ]
        # Per system too, per tag: a question counts once in each (pooled, it counts once
        # a system: up to six times).
        groups += [
            (run, tag, "all", g) for (run, tag), g in pairs.groupby(["run", "tag"], sort=False)
        ]
        order = {POOLED_SYSTEMS: -1, **{r: i for i, r in enumerate(dict.fromkeys(pairs.run))}}
        for system, tag, kind, group in sorted(
            groups, key=lambda x: (order[x[0]], x[1], x[2] == "all", x[2])
        ):
            decided = group.dropna(subset=["ours"])
            held = int(group.held.sum()) if scorer == "lb2_judge" else None
            figures = _agreement(decided.published, decided.ours)
            rows.append(
                {"scorer": scorer, "system": system, "tag": tag, "type": kind, **figures,
                 "undecided": held}
            )  # fmt: skip
    return _rounded(pd.DataFrame([r for r in rows if r["pairs"]], columns=AGREEMENT_COLUMNS))


def _agreement(published: pd.Series, ours: pd.Series) -> dict:
    """Counts, share of agreement and Cohen's kappa of two right/wrong verdicts."""
    theirs, mine = (published == 1.0).to_numpy(), (ours == 1.0).to_numpy()
    n = len(theirs)
    both, neither = int((theirs & mine).sum()), int((~theirs & ~mine).sum())
    observed = (both + neither) / n if n else None
    if not n:
        return {"pairs": 0}
    p, q = theirs.mean(), mine.mean()
    expected = p * q + (1 - p) * (1 - q)  # agreement by chance
    kappa = (observed - expected) / (1 - expected) if expected < 1 else None
    return {
        "pairs": n,
        "both_right": both,
        "published_only": int((theirs & ~mine).sum()),
        "ours_only": int((~theirs & mine).sum()),
        "both_wrong": neither,
        "agreement": observed,
        "kappa": kappa,
    }


def disagreement_table(summaries: dict, questions: dict) -> pd.DataFrame:
    rows = [
        {"run": label, **d, "type": questions[d["question_id"]].subtype or ""}
        for label, summary in summaries.items()
        for d in (summary.get("labbench2") or {}).get("disagreements", [])
    ]
    return pd.DataFrame(rows, columns=DISAGREEMENT_COLUMNS)


def successors_table(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """Per run, each LAB-Bench subset it ran beside its LABBench2 successor (every mode
    pooled): the share right of each, over its questions."""
    from ..records import primary_metric, rows_by_run

    rows = []
    of_run = rows_by_run(scores[scores.benchmark.isin([*SUCCESSORS, BENCHMARK])])
    for run in plan.runs:
        own = of_run(run.label)
        if own.empty:  # (a sweep's runs of other benchmarks: nothing to look for)
            continue
        for benchmark, (subset, tag) in SUCCESSORS.items():
            old = own[own.benchmark == benchmark]  # (categories: compared as text)
            wanted = [primary_metric(plan, t) for t in old.task.astype(str)]
            old = old[old.metric.astype(str).to_numpy() == pd.Series(wanted, dtype=str).to_numpy()]
            new = own[(own.benchmark == BENCHMARK) & (own.metric == verdict_metric(run))]
            new = new[new.task.astype(str).str.split("/").str[0] == tag]
            if old.empty and new.empty:
                continue
            rows.append(
                {
                    "run": run.label,
                    "subset": subset,
                    "lab_bench": old.score.mean() if not old.empty else None,
                    "lab_bench_questions": len(old),
                    "successor": tag,
                    "labbench2": new.score.mean() if not new.empty else None,
                    "labbench2_questions": len(new),
                }
            )
    return _rounded(pd.DataFrame(rows, columns=SUCCESSOR_COLUMNS))


def _rounded(table: pd.DataFrame) -> pd.DataFrame:
    """Fractions to 7 decimals, as every CSV of the report keeps them (an interval's
    bisection leaves a bound at 1e-12 rather than 0)."""
    floats = table.select_dtypes("float").columns
    return table.assign(**{c: table[c].round(ROUND) for c in floats})


def frontier_shown(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """A frontier table as the page and report.md show it: an interval beside its
    value, a run on fewer questions marked ‡, columns with nothing in them left out."""
    from ..text import fmt, fmt_bracket

    if table.empty:
        return table
    if name == "labbench2":
        table = table.sort_values(["task", "accuracy"], ascending=[True, False], kind="stable")
        runs = [r + " ‡" * bool(f) for r, f in zip(table.run, table.fewer, strict=True)]
        shown = pd.DataFrame(
            {  # (task and run first, then the figures: a phone shows them side by side)
                "task, run": [f"{t}: {r}" for t, r in zip(table.task, runs, strict=True)],
                "accuracy": [
                    f"{fmt(a)} {fmt_bracket(lo, hi)}"
                    for a, lo, hi in zip(table.accuracy, table.ci_low, table.ci_high, strict=True)
                ],
                "attempted": table.attempted,
                "with_verdict": table.questions,
                "asked": table.asked,
                "empty": [
                    f"{int(e)} ({fmt(100 * e / a)}%)" if a and e else ""
                    for e, a in zip(table["empty"].fillna(0), table.asked.fillna(0), strict=True)
                ],
                "failed": table.failed,
                "tools": ["yes" if t else "no" for t in table.tools],
                "system": table.system,
                "judge": table.judge_accuracy,
                "judge_undecided": table.judge_undecided,
                "tokens_per_correct": table.tokens_per_correct,
                "cost_per_correct": table.cost_per_correct,
            }
        )
    elif name == "labbench2_tools":
        shown = table.assign(
            task=[POOLED_ROW if t == "all" else t for t in table.task],
            difference=[
                f"{fmt(d)} {fmt_bracket(lo, hi)}"
                for d, lo, hi in zip(table.difference, table.ci_low, table.ci_high, strict=True)
            ],
        ).drop(columns=["ci_low", "ci_high"])
    elif name == "labbench2_disagreements":
        shown = table.assign(
            published_reason=[_cut(r) for r in table.published_reason],
            our_reason=[_cut(r) for r in table.our_reason],
        )
    else:
        shown = table
    return shown.dropna(axis="columns", how="all")


def _cut(text, at: int = 160) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= at else text[: at - 1] + "…"


FRONTIER_TEXT = """\
LABBench2's paper's runs of today's frontier (EdisonScientific/labbench2, its pinned
reports: each system bare and with tools, `@tools,high`: web search, code execution,
web fetch), counted as its `summarize_report.py` counts them: accuracy = correct /
(completed + failed), with its exact 95% interval, and attempted accuracy =
correct / completed, per task (a tag in a mode: `file`, `inject` or `retrieve`, how
attached files reached the model). A system is counted by LABBench2's published
verdicts; a run of this config by its primary `labbench2` verdict over the questions
it asked that any model can ask and a verdict exists for (`with_verdict`; ‡: fewer
than the task has: a question of free text has a verdict only by a judge); `empty`:
the answers that were empty or missing, with their share of those asked. `judge`:
the same questions graded by the judge with LABBench2's own prompts, where
`scoring.judge` names one (its undecided verdicts counted apart). Tokens as the
reports state them (every file, retries too); cost where `prices` gives one."""
FRONTIER_PARTS = {
    "labbench2": "",
    "labbench2_tools": "### The effect of tools\nPer model, each run with tools against each "
    "without, on the questions both answered (tools minus bare; the 95% interval and "
    "p-value of the sign-flip test; `all (pooled)`: every question of every task pooled, "
    "each question counting once, where the headline and `helixbench compare` give the "
    "difference of macro scores, each task counting once: the two differ where the tasks "
    "differ in size).\n\n",
    "labbench2_agreement": "### helixbench's verdicts against LABBench2's\nOn the cases "
    "LABBench2 completed, per tag and type pooled over its systems (a question counts "
    "once a system), then per system and tag: helixbench's deterministic verdict "
    "(`lb2_value`, only where an answer has one right value: a rule, not a judge) and, "
    "where `scoring.judge` names one, the judge with LABBench2's prompts (`lb2_judge`), "
    "against the published one; `kappa`: Cohen's.\n\n",
    "labbench2_disagreements": "### Every disagreement ({rows})\nWith both reasons (the "
    "published one is LABBench2's grader's: its validators, or its judge, "
    "claude-sonnet-4-5).\n\n",
    "labbench2_successors": "### LAB-Bench beside its successors\nPer run, the share right "
    "on each LAB-Bench subset it ran and on its LABBench2 successor (every mode pooled; "
    "LAB-Bench by its primary metric).\n\n",
}


def frontier_markdown(frontier: dict) -> str | None:
    """report.md's LABBench2 section (None: no LABBench2 run in this report)."""
    from ..text import md_section

    if frontier["labbench2"].empty:
        return None
    return md_section(FRONTIER_TEXT, FRONTIER_PARTS, frontier, frontier_shown)
