"""One run's share of the report, computed as the run finishes.

The run's score job (``helixbench score --summary``), with the records and
questions it has just read and the scores it has just written, writes under
``results/summaries/<model>/<method>/<variant>/``:

- ``scores.parquet``: its per-question scores (the columns of
  :mod:`..question_scores`), the rows every table of the report is derived from;
- ``prompts.json``: per question, the digests of the prompts its model calls sent;
- ``summary.json``: its rows of the report's tables (scores with their intervals,
  replay, errors, cost, agents, error types, run warnings) and the facts the report
  cites of its records (snapshot ids, model identities, when it finished, the tool
  replies it read, per-task counts of errors, tool calls, tokens and claims);

and its questions with their transcripts for the HTML report (:mod:`.details`).
The report (:func:`helixbench.report.build.write_report`) joins these small files: adding
a run to a finished sweep recomputes that run's summary and the join, nothing else.
Nothing here depends on the other runs or on config outside the run's spec and
the scoring settings, so a summary is valid for any sweep that holds the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ... import paths
from ...config.plan import Plan, RunTask, run_label
from ...datasets.jsonfiles import parse_json, read_jsonl
from ...datasets.questions import read_questions
from ...run.health import run_warnings
from ...scoring.verdicts import UNDECIDED
from ...transcripts import read_records
from ..question_scores import COLUMNS, write_parquet
from ..records import score_index, scores_frame
from ..tables.bank_board import answer_shares
from ..tables.bixbench import verifier_rows
from ..tables.operations import agent_table, cost_table, error_table, prompt_digests, replay_table
from ..tables.question_bank import bank_leaderboard, bank_table
from ..tables.scores import score_table
from .errors import error_types
from .labbench2_facts import labbench2_facts
from .tool_replies import used_executions, used_keys

SUMMARY_VERSION = paths.RUN_SUMMARY_VERSION


def spec_plan(spec: dict, scoring: dict) -> Plan:
    """The plan of one run from its spec (``Run.spec()``): what the summary needs of
    its tasks (model, method and their settings; no recorded files)."""
    tasks = [
        RunTask(
            model=spec["model"],
            method=spec["method"],
            benchmark=task["benchmark"],
            task=task["task"],
            shards=spec["shards"],
            model_spec=spec["model_spec"],
            method_spec=spec["method_spec"],
            tools=spec["tools"],
            sample=spec.get("sample"),
        )
        for task in spec["tasks"]
    ]
    return Plan(tasks=tasks, notes=[], scoring=scoring)


def records_by_task(plan: Plan, records: list[dict]) -> dict[RunTask, list[dict]]:
    """A run's records grouped by its tasks, each in question order."""
    grouped: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        grouped.setdefault((record["benchmark"], record["task"]), []).append(record)
    return {
        task: sorted(grouped.get((task.benchmark, task.task), []), key=lambda r: r["question_id"])
        for task in plan.tasks
    }


def load_run(
    spec: dict,
    scoring: dict,
    questions_path,
    shard_paths,
    score_path,
    shard_records: list[dict] | None = None,
    question_table: list | None = None,
    score_rows: list[dict] | None = None,
) -> tuple:
    """A run's plan, records by task, score lines (``scores_frame``) and the questions
    they cite: what its summary and its exports read. ``shard_records``,
    ``question_table`` and ``score_rows``: the shards' records, the question table and
    the score lines as the score job read and wrote them (else read here)."""
    plan = spec_plan(spec, scoring)
    if shard_records is None:
        shard_records = [r for p in shard_paths for r in read_records(Path(p))]
    if question_table is None:
        question_table = read_questions(Path(questions_path))
    records = records_by_task(plan, shard_records)
    scores = scores_frame(read_jsonl(Path(score_path)) if score_rows is None else score_rows)
    wanted = {r["question_id"] for of_task in records.values() for r in of_task}
    wanted |= set(scores.question_id.tolist())  # a question asked once for two benchmarks
    questions = {q.id: q for q in question_table if q.id in wanted}
    return plan, records, scores, questions


def task_facts(of_task: list[dict]) -> dict:
    """What the report's tables read of a task's records, beyond its scores."""
    events = [e for r in of_task for e in r["events"]]
    tools = [e["data"] for e in events if e["type"] == "tool"]
    claims = [e["data"] for e in events if e["type"] == "claim"]
    recalls = [
        e["data"]["recall"]
        for e in events
        if e["type"] == "retrieval" and e["data"].get("recall") is not None
    ]
    errors: dict[str, int] = {}
    for record in of_task:
        if record["error"] is not None:
            errors[record["error"]] = errors.get(record["error"], 0) + 1
    first = of_task[0] if of_task else {}
    return {
        "questions": len(of_task),
        "empty": sum(not str(r.get("answer") or "").strip() for r in of_task),
        "errors": errors,
        "tool_calls": len(tools),
        "tool_errors": sum(d.get("error") is not None for d in tools),
        "tool_failures": sum(bool(d.get("error")) for d in tools),
        "tokens": sum(
            (e["data"].get("prompt_tokens") or 0) + (e["data"].get("completion_tokens") or 0)
            for e in events
            if e["type"] == "model"
        ),
        "wall_s": sum(r.get("wall_s") or 0.0 for r in of_task),
        "claims": [c["verdict"] for c in claims],
        "recalls": recalls,
        "snapshot_id": first.get("snapshot_id"),
        "model_identity": first.get("model_identity"),
        "finished_at": max((r["finished_at"] for r in of_task), default=None),
    }


# Past this share of a run's asked questions with no answer (empty, or none the method
# could read), the console and the report's notes say so: a degenerate run.
DEGENERATE_SHARE = 0.5


def unscored_warnings(spec: dict, board: pd.DataFrame) -> list[dict]:
    """The report's notes of a run whose numbers cover less than it asked: answers with
    no score (free text, no judge) and, past :data:`DEGENERATE_SHARE`, replies with no
    answer in them."""
    notes = []
    for row in board.to_dict("records"):
        said = []
        unscored = int(row["asked"]) - int(row["scored"])
        if unscored > 0:
            said.append(
                f"{unscored} of its {row['asked']} answers have no score (a free-text "
                "answer needs a judge: scoring.judge), so its figure covers "
                f"{row['scored']} questions"
            )
        for column, what in (("empty", "were empty"), ("unparsed", "held no readable answer")):
            share = row.get(column)
            if share is not None and share == share and share >= DEGENERATE_SHARE:
                said.append(f"{share:.0%} of its replies {what}")
        if said:
            notes.append(
                {
                    "level": "warning",
                    "model": spec["model"],
                    "method": spec["method"],
                    "benchmark": row["benchmark"],
                    "kind": "coverage",
                    "message": "; ".join(said),
                }
            )
    return notes


# Past this share of a task's judge calls undecided (unsure, negated, contradicted, no
# verdict, a refused call), the report's notes and the console say so.
UNDECIDED_SHARE = 0.1


def judge_counts(plan: Plan, calls: list[dict], questions: dict) -> list[dict]:
    """Per benchmark, task and grading scorer: the judge's calls by verdict, and whether
    the answer was fenced (the judges of a benchmark's own prompts: LABBench2's,
    BixBench's)."""
    counts: dict[tuple, dict] = {}
    for call in calls:
        question = questions.get(call.get("question_id"))
        if question is None or "verdict" not in call:
            continue
        key = (question.benchmark, question.task, call.get("scorer", "judge"))
        row = counts.setdefault(key, {"calls": 0, "fenced": call.get("fenced")})
        row["calls"] += 1
        row[call["verdict"]] = row.get(call["verdict"], 0) + 1
    return [{"benchmark": b, "task": t, "scorer": s, **row} for (b, t, s), row in counts.items()]


def jury_votes(calls: list[dict], questions: dict) -> list[dict]:
    """Each question a jury judged: every judge's verdict and the jury's (the report's
    agreement and disagreements, :mod:`..tables.judges`)."""
    votes = []
    for call in calls:
        question = questions.get(call.get("question_id"))
        if question is None or not call.get("jury"):
            continue
        votes.append(
            {"benchmark": question.benchmark, "task": question.task,
             "scorer": call.get("scorer", "judge"), "question_id": question.id,
             "verdict": call["verdict"], "votes": {j["judge"]: j["verdict"] for j in call["jury"]}}
        )  # fmt: skip
    return votes


def judge_warnings(spec: dict, counts: list[dict]) -> list[dict]:
    """A note per task whose judge left past :data:`UNDECIDED_SHARE` of its calls
    undecided."""
    notes = []
    for row in counts:
        undecided = {k: v for k, v in row.items() if k in UNDECIDED and v}
        total = sum(undecided.values())
        if row["calls"] and total / row["calls"] > UNDECIDED_SHARE:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(undecided.items()))
            notes.append(
                {
                    "level": "warning",
                    "model": spec["model"],
                    "method": spec["method"],
                    "benchmark": row["benchmark"],
                    "kind": "judge",
                    "message": f"{row['task']}: the judge ({row['scorer']}) decided no verdict "
                    f"on {total} of its {row['calls']} calls ({kinds}): those answers have no "
                    "score",
                }
            )
    return notes


def _asked(plan: Plan, records: dict[RunTask, list[dict]]) -> dict[str, dict]:
    """benchmark -> what the run asked of it and the shares it left without an answer."""
    by_benchmark: dict[str, list[dict]] = {}
    for task in plan.tasks:
        by_benchmark.setdefault(task.benchmark, []).extend(records[task])
    return {benchmark: answer_shares(of) for benchmark, of in by_benchmark.items()}


def fresh_tokens(records: dict[RunTask, list[dict]]) -> dict[str, int]:
    """Tokens of the model calls that reached the model (cache misses): what a price
    applies to (the report's cost, from the config's prices)."""
    prompt = completion = 0
    for of_task in records.values():
        for record in of_task:
            for event in record["events"]:
                if event["type"] == "model" and event["data"].get("cache") == "miss":
                    prompt += event["data"].get("prompt_tokens") or 0
                    completion += event["data"].get("completion_tokens") or 0
    return {"prompt": prompt, "completion": completion}


def _rows(frame: pd.DataFrame) -> dict:
    """A table as JSON-able data, its columns in order, every value as it is (a
    missing one None): :func:`table` reads it back."""
    rows = frame.to_numpy(dtype=object).tolist()  # (a frame's where() costs 10x this)
    return {"columns": list(frame.columns), "rows": [[_given(v) for v in row] for row in rows]}


def _given(value):
    """``value``, or None where pandas reads it as missing (NaN, None, NA, NaT)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    return None if isinstance(value, float) and value != value else value


def table(data: dict) -> pd.DataFrame:
    """A table of a summary (:func:`_rows`)."""
    return pd.DataFrame(data["rows"], columns=data["columns"])


def stacked(tables: list[dict]) -> pd.DataFrame | None:
    """Many summaries' tables of one name as one frame, their rows in order (None for
    none): a frame at once for each stretch of tables with the same columns, not a frame
    a table (a sweep's report joins tens of thousands; each frame costs a millisecond)."""
    parts, rows, columns = [], [], None
    for data in tables:
        if data["columns"] != columns:
            if columns is not None:
                parts.append(pd.DataFrame(rows, columns=columns))
            rows, columns = [], data["columns"]
        rows.extend(data["rows"])
    if columns is None:
        return None
    parts.append(pd.DataFrame(rows, columns=columns))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def summarize_run(
    spec: dict,
    scoring: dict,
    questions_path: Path,
    shard_paths: list[Path],
    score_path: Path,
    out_dir: Path,
    details_path: Path,
    judge_calls: Path | None = None,
    shard_records: list[dict] | None = None,
    question_table: list | None = None,
    score_rows: list[dict] | None = None,
) -> dict:
    """Write the run's summary files (module docstring); returns the summary.
    ``shard_records``, ``question_table``, ``score_rows``: as the score job read and
    wrote them (:func:`load_run`)."""
    from .details import run_details, write_details

    plan, records, scores, questions = load_run(
        spec,
        scoring,
        questions_path,
        shard_paths,
        score_path,
        shard_records,
        question_table,
        score_rows,
    )
    label = run_label(spec["model"], spec["method"])
    index = score_index(scores)
    taxonomy, labels = error_types(plan, records, index, questions)
    board = bank_leaderboard(plan, scores, questions, _asked(plan, records))
    summary = {
        "version": SUMMARY_VERSION,
        "run": label,
        "model": spec["model"],
        "method": spec["method"],
        "scores": _rows(score_table(plan, scores)),
        "replay": _rows(replay_table(plan, records)),
        "errors": _rows(error_table(plan, records)),
        "cost": _rows(cost_table(plan, records, {})),
        "fresh_tokens": fresh_tokens(records),
        "agents": _rows(agent_table(plan, records)),
        "taxonomy": _rows(taxonomy),
        "question_bank": _rows(bank_table(plan, scores)),
        "question_bank_leaderboard": _rows(board),
        "warnings": run_warnings(plan.tasks, records) + unscored_warnings(spec, board),
        "tasks": [
            {"benchmark": t.benchmark, "task": t.task, **task_facts(records[t])} for t in plan.tasks
        ],
        "tool_keys": used_keys(records),
        "code_keys": used_executions(records),
    }
    calls = read_jsonl(Path(judge_calls)) if judge_calls and Path(judge_calls).is_file() else []
    summary["judge"] = judge_counts(plan, calls, questions)
    summary["jury"] = jury_votes(calls, questions)
    summary["warnings"] += judge_warnings(spec, summary["judge"])
    if any(t.benchmark == "labbench2" for t in plan.tasks):  # (the frontier section's)
        lines = read_jsonl(Path(score_path))
        summary["labbench2"] = labbench2_facts(plan, records, lines, calls)
    if any(t.benchmark == "bixbench-open" for t in plan.tasks):  # (the BixBench section's)
        of_open = [r for t in plan.tasks if t.benchmark == "bixbench-open" for r in records[t]]
        summary["bixbench"] = {"verifier": verifier_rows(of_open, read_jsonl(Path(score_path)))}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_parquet(run_scores(plan, scores), out_dir / "scores.parquet", {"run": label})
    details = run_details(label, plan, records, index, questions, labels)
    write_details(Path(details_path), details)
    (out_dir / "prompts.json").write_text(json.dumps(prompt_digests(records)) + "\n")
    tmp = out_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, default=_plain) + "\n")
    tmp.replace(out_dir / "summary.json")
    return summary


def _plain(value):
    """numpy's scalars as Python's (json knows only the latter)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def read_summary(path: Path) -> dict:
    """A run's summary.json; an older summary's content is not the report's to read."""
    summary = parse_json(Path(path).read_bytes())  # (a sweep's report reads thousands)
    if summary.get("version") != SUMMARY_VERSION:
        raise ValueError(
            f"{path}: a summary of another helixbench version; run the workflow again "
            "(Snakemake redoes it)"
        )
    return summary


def run_scores(plan: Plan, scores: pd.DataFrame) -> pd.DataFrame:
    """The run's per-question rows in the report's columns (``config_sha256`` is the
    report's to fill)."""
    from ..question_scores import question_score_table

    return question_score_table(plan, scores, None)[list(COLUMNS)]
