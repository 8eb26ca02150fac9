"""A run in the formats other tools read (``report.exports``), under
``results/report/exports/<model>/<method>/``:

- ``every-eval-ever/data/helixbench/<developer>/<model>/<uuid>.json`` and its
  ``<uuid>_samples.jsonl``: the Every Eval Ever schema (0.3.0), an aggregate (every
  task and metric with its 95% bootstrap interval) and one instance line per question
  and metric (the question, the gold, the transcript as messages, the score);
  written as plain JSON and checked by EEE's own validator (``every_eval_ever
  validate``, tests/test_exports.py).
- ``inspect/<model>--<method>.eval``: an Inspect AI eval log with one sample per
  question (messages with their tool calls, the answer, every metric's score) and
  each metric's mean, written by Inspect's own ``write_eval_log`` in its own
  environment (:mod:`.inspect_log`: inspect-ai's dependencies and the project's
  cannot share one), so ``inspect view`` and ``read_eval_log`` open it.

Both come from the run's records and scores, in the run's own job.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ... import __version__
from ...scoring import CORRECTNESS_SCORERS
from ..run_share.run_summary import table

EEE_SCHEMA = "0.3.0"
LOCAL_BACKENDS = ("transformers",)  # the weights run in the job itself


def transcript_messages(question: str, record: dict) -> list[dict]:
    """A record's model and tool events as chat messages: the question, each model
    call's completion (with the tool calls it made), each tool's reply, and each later
    prompt increment (what the protocol fed back) as a user turn."""
    messages = [{"role": "user", "content": question}]
    pending: list[dict] = []
    for event in record["events"]:
        data = event.get("data") or {}
        if event["type"] == "model":
            increment = data.get("prompt_increment")
            if increment and event.get("index", 0) > 0 and not pending:
                messages.append({"role": "user", "content": increment})
            pending = []
            calls = [
                {
                    "id": call.get("id") or f"call-{event['index']}-{i}",
                    "name": call.get("name") or call.get("function") or "tool",
                    "arguments": _string_values(call.get("arguments")),
                }
                for i, call in enumerate(data.get("tool_calls") or [])
            ]
            messages.append(
                {"role": "assistant", "content": data.get("completion") or "", "tool_calls": calls}
            )
            pending = calls
        elif event["type"] == "tool":
            name = data.get("tool") or "http_get"
            arguments = _string_values(data.get("arguments")) or {"url": data.get("url") or ""}
            last = messages[-1]
            if last["role"] == "assistant" and not pending:  # text protocol: a URL in the reply
                call = {"id": f"call-{event.get('index', 0)}", "name": name, "arguments": arguments}
                last["tool_calls"].append(call)
                pending = [call]
            call_id = pending.pop(0)["id"] if pending else f"call-{event.get('index', 0)}"
            reply = _reply_text(data.get("rendered"))
            if reply is None:
                reply = f"status {data.get('status')}, {data.get('bytes')} bytes" + (
                    f", error: {data['error']}" if data.get("error") else ""
                )
            messages.append(
                {"role": "tool", "content": reply, "tool_call_id": call_id, "function": name}
            )
    return messages


def _reply_text(rendered: str | None) -> str | None:
    """A tool reply as text: GeneGPT's loop renders a reply as Python writes bytes
    (``b'...'``, as its prompts show it); the exports give the text itself."""
    if rendered and rendered[:2] in ("b'", 'b"'):
        try:
            value = ast.literal_eval(rendered)
        except (ValueError, SyntaxError):
            return rendered
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace")
    return rendered


def sample_events(record: dict) -> list[dict]:
    """A record's model and tool events with their start times (the record's start,
    its finish less its wall time, plus the time of the events before), as Inspect's
    transcript shows them."""
    start = (record.get("finished_at") or 0.0) - (record.get("wall_s") or 0.0)
    events, at = [], start
    for event in record["events"]:
        data = event.get("data") or {}
        seconds = float(event.get("latency_s") or 0.0)
        if event["type"] == "model":
            events.append(
                {
                    "type": "model",
                    "at": at,
                    "seconds": seconds,
                    "prompt": data.get("prompt_increment") or "",
                    "completion": data.get("completion") or "",
                    # None where nothing counted them (a replay without its tokenizer's files)
                    "input_tokens": data.get("prompt_tokens"),
                    "output_tokens": data.get("completion_tokens"),
                    "cache": data.get("cache"),
                    "error": data.get("error"),
                }
            )
        elif event["type"] == "tool":
            arguments = _string_values(data.get("arguments")) or {"url": data.get("url") or ""}
            events.append(
                {
                    "type": "tool",
                    "at": at,
                    "seconds": seconds,
                    "id": f"call-{event.get('index', 0)}-{len(events)}",
                    "function": data.get("tool") or "http_get",
                    "arguments": arguments,
                    "result": _reply_text(data.get("rendered")) or "",
                    "error": data.get("error"),
                }
            )
        at += seconds
    return events


def _string_values(arguments) -> dict[str, str]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {"input": arguments}
    if not isinstance(arguments, dict):
        return {}
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}


def _uuid4(*parts: str) -> str:
    """A UUID of version 4's form, from the parts (the same files on every rerun)."""
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _run_model(summary: dict, model_spec: dict | None) -> tuple[dict | None, dict]:
    """The run's model identity (as its records give it) and its card (models/card.py)."""
    from ...models.card import model_card

    identity = next((t["model_identity"] for t in summary["tasks"] if t["model_identity"]), None)
    return identity, model_card(summary["model"], model_spec or {}, identity)


def _finished(summary: dict) -> float:
    """When the run's last question finished (0 where none did)."""
    return max((t["finished_at"] for t in summary["tasks"] if t["finished_at"]), default=0)


def _folder(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name).strip("._") or "model"


def every_eval_ever(
    summary: dict,
    records: dict,
    scores: pd.DataFrame,
    questions: dict,
    out: Path,
    model_spec: dict | None = None,
) -> list[Path]:
    """The run's EEE aggregate and instance files under ``out`` (a ``data/`` tree), one
    pair per benchmark the run answered (EEE files a result under its benchmark:
    ``data/<benchmark>/<developer>/<model>/``); returns the aggregates' paths."""
    identity, card = _run_model(summary, model_spec)
    rows = table(summary["scores"])
    written = []
    for benchmark in dict.fromkeys(rows.benchmark):
        of_benchmark = {k: v for k, v in records.items() if _benchmark_of(k, v) == benchmark}
        written.append(
            _eee_files(
                summary, card, identity, benchmark, rows[rows.benchmark == benchmark],
                of_benchmark, scores[scores.benchmark == benchmark], questions, out,
            )
        )  # fmt: skip
    return written


def _benchmark_of(task, task_records: list[dict]) -> str | None:
    benchmark = getattr(task, "benchmark", None)
    if benchmark is None and task_records:
        benchmark = task_records[0].get("benchmark")
    return benchmark


def _eee_files(summary, card, identity, benchmark, rows, records, scores, questions, out) -> Path:
    """One benchmark's aggregate and instance files of the run."""
    model_id, developer = card["id"], card["developer"]
    run_id = _uuid4(
        "helixbench", summary["run"], benchmark, json.dumps(summary["scores"], sort_keys=True)
    )
    folder = (
        Path("data") / _folder(benchmark) / _folder(developer) / _folder(model_id.split("/")[-1])
    )
    finished = _finished(summary)
    evaluation_id = f"{benchmark}/{model_id}/{summary['method']}/{int(finished)}"
    local = (identity or {}).get("backend") in LOCAL_BACKENDS
    results = []
    for row in rows.itertuples():
        results.append(
            {
                "evaluation_result_id": f"{row.benchmark}/{row.task}/{row.metric}",
                "evaluation_name": f"{row.benchmark}/{row.task}",
                "source_data": {
                    "dataset_name": row.benchmark,
                    "source_type": "other",
                    "additional_details": {"task": row.task, "method": summary["method"]},
                },
                "metric_config": {
                    "evaluation_description": f"{row.task} ({row.benchmark}), {row.metric}"
                    + (" over the tasks' means" if row.task == "macro" else "")
                    + (" over all its questions" if row.task == "all" else ""),
                    "metric_id": f"helixbench.{row.metric}",
                    "metric_name": row.metric,
                    "metric_kind": "accuracy"
                    if row.metric.split("_excl")[0] in CORRECTNESS_SCORERS
                    else "similarity",
                    "metric_unit": "proportion",
                    "lower_is_better": False,
                    "score_type": "continuous",
                    "min_score": 0.0,
                    "max_score": 1.0,
                },
                "score_details": {
                    "score": float(row.score),
                    "uncertainty": _uncertainty(row),
                },
            }
        )
    lines = []
    # Every metric a task reports, so each aggregate figure has its instance rows.
    by_question = {qid: group for qid, group in scores.groupby("question_id", sort=False)}
    for of_task in records.values():
        for record in of_task:
            question = questions[record["question_id"]]
            messages = transcript_messages(question.text, record)
            tools = sum(len(m.get("tool_calls") or []) for m in messages)
            gold = [question.gold] if isinstance(question.gold, str) else list(question.gold)
            for row in by_question.get(question.id, pd.DataFrame()).itertuples():
                lines.append(
                    {
                        "schema_version": EEE_SCHEMA,
                        "evaluation_id": evaluation_id,
                        "model_id": model_id,
                        "evaluation_name": f"{row.benchmark}/{row.task}",
                        "evaluation_result_id": f"{row.benchmark}/{row.task}/{row.metric}",
                        "sample_id": question.id,
                        "sample_hash": hashlib.sha256(
                            (question.text + "\0" + "\0".join(gold)).encode()
                        ).hexdigest(),
                        "interaction_type": "agentic" if tools else "multi_turn",
                        "input": {"raw": question.text, "reference": gold},
                        "output": None,
                        "messages": [
                            {
                                "turn_idx": i,
                                "role": m["role"],
                                "content": m["content"],
                                "tool_calls": m.get("tool_calls") or None,
                                "tool_call_id": [m["tool_call_id"]]
                                if m.get("tool_call_id")
                                else None,
                            }
                            for i, m in enumerate(messages)
                        ],
                        "answer_attribution": [
                            {
                                "turn_idx": _last_assistant(messages),
                                "source": f"messages[{_last_assistant(messages)}].content",
                                "extracted_value": record["answer"] or "",
                                "extraction_method": "custom",
                                "is_terminal": True,
                            }
                        ],
                        "evaluation": {
                            "score": float(row.score),
                            "is_correct": bool(row.score >= 1),
                            "num_turns": len(messages),
                            "tool_calls_count": tools,
                        },
                        "error": record["error"],
                    }
                )
    samples = folder / f"{run_id}_samples.jsonl"
    (out / folder).mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (out / samples).write_text(text)
    aggregate = {
        "schema_version": EEE_SCHEMA,
        "evaluation_id": evaluation_id,
        "retrieved_timestamp": str(int(finished)),
        "source_metadata": {
            "source_name": "helixbench",
            "source_type": "evaluation_run",
            "source_organization_name": "helixbench",
            "evaluator_relationship": "third_party",
        },
        "eval_library": {"name": "helixbench", "version": __version__},
        "model_info": {
            "name": card["name"],
            "id": model_id,
            "developer": developer,
            "additional_details": {
                "method": summary["method"],
                "identity": json.dumps(identity, sort_keys=True),
                # Weights run here are open and self-deployed; of a served model (an
                # API, a recording) this cannot say.
                "deployment_type": "self_deployed" if local else "unknown",
                "model_availability": "open_weights" if local else "unknown",
            },
        },
        "evaluation_results": results,
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": samples.as_posix(),
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(text.encode()).hexdigest(),
            "total_rows": len(lines),
        },
    }
    path = out / folder / f"{run_id}.json"
    path.write_text(json.dumps(aggregate, indent=1) + "\n")
    return path


def _uncertainty(row) -> dict:
    """A score's interval as Every Eval Ever states one; on too few questions (no
    interval: helixbench.stats.MIN_QUESTIONS) only the count."""
    found = {"num_samples": int(row.n)}
    if pd.isna(row.ci_low) or pd.isna(row.ci_high):
        return found
    interval = {
        "lower": float(row.ci_low),
        "upper": float(row.ci_high),
        "confidence_level": 0.95,
        "method": "percentile bootstrap over questions (seed 0)",
    }
    return {"confidence_interval": interval, **found, "num_bootstrap_samples": 10_000}


def _last_assistant(messages: list[dict]) -> int:
    return max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=0)


def inspect_log(
    summary: dict,
    records: dict,
    scores: pd.DataFrame,
    questions: dict,
    out: Path,
    python: str,
    model_spec: dict | None = None,
) -> Path:
    """The run's Inspect eval log, written by :mod:`.inspect_log` under ``python`` (the
    inspect environment's interpreter), named as Inspect names its logs
    (``<start>_<task>_<id>.eval``). Each metric's ``mean`` is over questions, as
    Inspect's; ``macro`` beside it is the leaderboard's figure (the mean of the task
    means), so the two can be told apart."""
    _, card = _run_model(summary, model_spec)
    by_question = {
        qid: dict(zip(group.metric, group.score, strict=True))
        for qid, group in scores.groupby("question_id", sort=False)
    }
    samples = []
    for of_task in records.values():
        for record in of_task:
            question = questions[record["question_id"]]
            gold = question.gold_text
            finished = record.get("finished_at") or 0.0
            samples.append(
                {
                    "id": question.id,
                    "input": question.text,
                    "target": gold,
                    "messages": transcript_messages(question.text, record),
                    "events": sample_events(record),
                    "started_at": finished - (record.get("wall_s") or 0.0),
                    "finished_at": finished,
                    "answer": record["answer"] or "",
                    "error": record["error"],
                    "scores": by_question.get(question.id, {}),
                    "metadata": {"benchmark": record["benchmark"], "task": record["task"]},
                }
            )
    rows = table(summary["scores"])
    macro = {r.metric: float(r.score) for r in rows.itertuples() if r.task == "macro"}
    finished = _finished(summary)
    started = min((s["started_at"] for s in samples), default=finished)
    ids = {k: _uuid4(k, summary["run"], str(finished)) for k in ("run", "task", "eval")}
    spec = {
        "run": summary["run"],
        "model": card["inspect"],
        "model_card": card,
        "method": summary["method"],
        "benchmarks": sorted(set(rows.benchmark)),
        "started_at": started,
        "finished_at": finished,
        "ids": ids,
        "macro": macro,
        "version": __version__,
        "samples": samples,
    }
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.fromtimestamp(started, UTC).strftime("%Y-%m-%dT%H-%M-%S+00-00")
    task = _folder(f"{summary['model']}-{summary['method']}").replace("_", "-")
    log = out / f"{stamp}_{task}_{ids['eval'].replace('-', '')[:22]}.eval"
    data = out / (log.name + ".json")
    data.write_text(json.dumps(spec))
    script = Path(__file__).with_name("inspect_log.py")
    try:
        # -P: not the script's folder on sys.path (its siblings would shadow the stdlib's html)
        subprocess.run([python, "-P", str(script), str(data), str(log)], check=True)
    finally:
        data.unlink(missing_ok=True)
    return log


def export_run(
    spec: dict,
    scoring: dict,
    questions_path: Path,
    shard_paths: list[Path],
    score_path: Path,
    summary_path: Path,
    out_dir: Path,
    formats: list[str],
    inspect_python: str | None = None,
) -> list[Path]:
    """The run in each of ``formats`` under ``out_dir``; returns the files written."""
    from ..run_share.run_summary import load_run, read_summary, run_scores

    plan, records, lines, questions = load_run(
        spec, scoring, questions_path, shard_paths, score_path
    )
    scores = run_scores(plan, lines)
    summary = read_summary(Path(summary_path))
    out_dir = Path(out_dir)
    written = []
    if "every-eval-ever" in formats:
        written += every_eval_ever(
            summary, records, scores, questions, out_dir / "every-eval-ever", spec["model_spec"]
        )
    if "inspect" in formats:
        if not inspect_python:
            raise ValueError("the inspect export needs the inspect environment's python")
        written.append(
            inspect_log(
                summary,
                records,
                scores,
                questions,
                out_dir / "inspect",
                inspect_python,
                spec["model_spec"],
            )  # fmt: skip
        )
    return written
