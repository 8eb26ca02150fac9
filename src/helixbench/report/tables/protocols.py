"""One model's ways of answering side by side (``protocols.csv``) and paired tests
between them (``protocol_tests.csv``): GeneGPT's text protocol (URLs in brackets
inside the reply), native function calling, BRAD's retrieval from a corpus, and no
tools (on gene sets: closed book), on the same questions; and each seed system run
unchanged (GeneGPT's main.py, GeneAgent's cascade, BRAD-Agent: ``kind: agent`` with
an ``original``) beside helixbench's re-implementation of it.

A model appears when it ran at least two protocols on a benchmark (any benchmark:
GeneTuring, GeneHop, the gene sets, the question bank's). Each row is a run on a
benchmark: its macro score on the benchmark's leaderboard metric (extracted answers;
for gene sets, embedding similarity to the curated name; for the question bank's,
each task's primary score) with its interval, and what the protocol cost: tool
calls, tool errors, tokens and seconds per question, and the questions that ended
in an error (the loop's cap, a context overflow, a model error). Each test pairs two
of one model's protocol runs on the questions both answered, weighting each
question by 1 / (tasks x the task's questions) so the difference tested is the
difference of macro scores; Holm's correction runs over every protocol test shown.
"""

from __future__ import annotations

import pandas as pd

from ...benchmarks import bank
from ...config.plan import Plan, RunTask
from ...methods.originals import ORIGINALS
from ...stats import holm
from ..records import (
    ScoreLookups,
    macro_paired_test,
    paired_by_task,
    primary_metric,
    values_of,
)
from .leaderboard import GENESETS
from .scores import ROUND

# The method kinds compared, by the protocol each uses for tools or documents.
PROTOCOLS = {
    "genegpt": "text protocol",
    "function-calling": "function calling",
    "brad": "retrieval (BRAD)",
    "geneagent": "self-verification (GeneAgent)",
    "no-tools": "no tools",
    "closed-book": "closed book",
}
# Each benchmark's leaderboard metric.
METRICS = {GENESETS: "embedding"}
QA_METRIC = "extracted"


# The benchmarks of the question bank (GeneTuring 2025, BioRAGent, LAB-Bench).
BANK = tuple(bank())


def protocol_of(run) -> str | None:
    """The protocol a run's method uses; a seed system run unchanged is its own
    (``GeneGPT main.py (original)``), shown beside helixbench's re-implementation."""
    spec = run.first.method_spec
    if spec.get("kind") == "agent" and spec.get("original") in ORIGINALS:
        return ORIGINALS[spec["original"]].label
    return PROTOCOLS.get(spec.get("kind"))


def metric_of(benchmark: str) -> str:
    return METRICS.get(benchmark, QA_METRIC)


def board_metric(plan: Plan, benchmark: str):
    """The metric a benchmark's leaderboard ranks by, as :func:`paired_by_task` takes
    it: a name, or for the question bank's benchmarks each task's primary scorer."""
    if benchmark in BANK:
        return lambda task: primary_metric(plan, task)
    return metric_of(benchmark)


PROTOCOL_COLUMNS = [
    "model",
    "benchmark",
    "protocol",
    "run",
    "metric",
    "macro",
    "ci_low",
    "ci_high",
    "questions",
    "errors",
    "tool_calls_per_question",
    "tool_errors",
    "tokens_per_question",
    "s_per_question",
]
TEST_COLUMNS = [
    "model",
    "benchmark",
    "run_a",
    "run_b",
    "protocol_a",
    "protocol_b",
    "n",
    "difference",
    "p_value",
    "p_holm",
]


def protocol_runs(plan: Plan) -> dict[tuple[str, str], list]:
    """(model, benchmark) -> the model's runs there whose methods use a QA protocol,
    for models with at least two protocols on the benchmark."""
    found: dict[tuple[str, str], list] = {}
    for run in plan.runs:
        if protocol_of(run) is None or run.imported:
            continue
        for benchmark in dict.fromkeys(t.benchmark for t in run.tasks):
            found.setdefault((run.model, benchmark), []).append(run)
    return {key: runs for key, runs in found.items() if len({protocol_of(r) for r in runs}) >= 2}


def protocol_table(
    plan: Plan,
    summary: pd.DataFrame,
    facts: dict[RunTask, dict],
    bank_board: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per protocol run and benchmark; ``facts``: each task's counts of its
    records (:func:`helixbench.report.run_share.run_summary.task_facts`); ``bank_board``: the
    question bank's leaderboards (their macro is of each task's primary score)."""
    rows = []
    macros = _firsts(summary[summary.task == "macro"], ["model", "method", "benchmark", "metric"])
    bank_macros = _firsts(_bank_board(bank_board), ["run", "benchmark"])
    for (model, benchmark), runs in protocol_runs(plan).items():
        for run in runs:
            of_run = [facts[t] for t in run.tasks if t.benchmark == benchmark]
            if benchmark in BANK:
                macro = bank_macros.get((run.label, benchmark), NO_MACRO)
            else:
                key = (run.model, run.method, benchmark, metric_of(benchmark))
                macro = macros.get(key, NO_MACRO)
            n = sum(f["questions"] for f in of_run)
            tool_calls = sum(f["tool_calls"] for f in of_run)
            tokens = sum(f["tokens"] for f in of_run)
            rows.append(
                {
                    "model": model,
                    "benchmark": benchmark,
                    "protocol": protocol_of(run),
                    "run": run.label,
                    "metric": "primary" if benchmark in BANK else metric_of(benchmark),
                    "macro": macro[0],
                    "ci_low": macro[1],
                    "ci_high": macro[2],
                    "questions": n,
                    "errors": sum(sum(f["errors"].values()) for f in of_run),
                    "tool_calls_per_question": round(tool_calls / n, 2) if n else None,
                    "tool_errors": sum(f["tool_errors"] for f in of_run),
                    "tokens_per_question": round(tokens / n) if n else None,
                    "s_per_question": (
                        round(sum(f["wall_s"] for f in of_run) / n, 2) if n else None
                    ),
                }
            )
    return pd.DataFrame(rows, columns=PROTOCOL_COLUMNS)


def protocol_tests(plan: Plan, scores: ScoreLookups, protocols: pd.DataFrame) -> pd.DataFrame:
    """One model's protocols on a benchmark, each by its best run there (``protocols``:
    :func:`protocol_table`; ties: the run first in the config), tested pairwise on the
    difference of macro scores over the questions both answered; Holm over all."""
    rows = []
    macros = {  # (benchmark, run) -> its macro (one pass: a sweep has a row a run)
        (benchmark, run): macro
        for benchmark, run, macro in values_of(protocols, "benchmark", "run", "macro")
    }
    for (model, benchmark), all_runs in protocol_runs(plan).items():
        macro = {run.label: macros.get((benchmark, run.label)) for run in all_runs}
        runs = _best_per_protocol(all_runs, macro)
        tasks = list(
            dict.fromkeys(t.task for r in runs for t in r.tasks if t.benchmark == benchmark)
        )
        for i, a in enumerate(runs):
            for b in runs[i + 1 :]:
                metric = board_metric(plan, benchmark)
                of_benchmark = scores.for_benchmark(benchmark)
                paired = paired_by_task(of_benchmark, a.label, b.label, tasks, metric)
                if not paired:
                    continue
                test = macro_paired_test(paired)
                rows.append(
                    {
                        "model": model,
                        "benchmark": benchmark,
                        "run_a": a.label,
                        "run_b": b.label,
                        "protocol_a": protocol_of(a),
                        "protocol_b": protocol_of(b),
                        "n": test.n,
                        "difference": round(test.difference, ROUND),
                        "p_value": round(test.p_value, 4),
                        "p_holm": None,
                    }
                )
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_holm"] = round(adjusted, 4)
    return pd.DataFrame(rows, columns=TEST_COLUMNS)


def _best_per_protocol(runs: list, macro: dict) -> list:
    """Of ``runs`` (config order), each protocol's run with the highest ``macro``."""
    best: dict[str, object] = {}
    for run in runs:
        held = best.get(protocol_of(run))
        score = macro.get(run.label)
        if held is None or (score is not None and score > (macro.get(held.label) or -1.0)):
            best[protocol_of(run)] = run
    return [run for run in runs if run in best.values()]


NO_MACRO = (None, None, None)


def _bank_board(board: pd.DataFrame | None) -> pd.DataFrame:
    """The question bank's leaderboards as the scores table holds a macro."""
    columns = ["run", "benchmark", "score", "ci_low", "ci_high"]
    if board is None or board.empty:
        return pd.DataFrame(columns=columns)
    return board.rename(columns={"macro": "score"})[columns]


def _firsts(frame: pd.DataFrame, key: list[str]) -> dict[tuple, tuple]:
    """``key``'s values -> the first such row's score and interval (each None where
    the row has none), found in one pass (a sweep's table has a row per run, task and
    metric: a mask a run would read it whole once a run)."""
    found: dict[tuple, tuple] = {}
    for *of_row, score, low, high in values_of(frame, *key, "score", "ci_low", "ci_high"):
        found.setdefault(tuple(of_row), (_number(score), _number(low), _number(high)))
    return found


def _number(value) -> float | None:
    """A value of the table as a row shows it (None where there is none)."""
    return None if value is None or pd.isna(value) else float(value)
