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

import hashlib
import json
import subprocess
import uuid
from pathlib import Path

import pandas as pd

from .. import __version__
from ..scoring import CORRECTNESS_SCORERS
from .run_summary import table

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
            reply = data.get("rendered")
            if reply is None:
                reply = f"status {data.get('status')}, {data.get('bytes')} bytes" + (
                    f", error: {data['error']}" if data.get("error") else ""
                )
            messages.append(
                {"role": "tool", "content": reply, "tool_call_id": call_id, "function": name}
            )
    return messages


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


def _identity(summary_model: str, identity: dict | None) -> tuple[str, str]:
    """(model id, developer) as EEE files them: a hub id's own prefix, else the
    backend that served the model."""
    model_id = str((identity or {}).get("model") or summary_model)
    if "/" in model_id:
        return model_id, model_id.split("/", 1)[0]
    backend = str((identity or {}).get("backend") or "helixbench")
    return f"{backend}/{model_id}", backend


def _folder(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name).strip("._") or "model"


def every_eval_ever(
    summary: dict, records: dict, scores: pd.DataFrame, questions: dict, out: Path
) -> Path:
    """The run's EEE aggregate and instance files under ``out`` (a ``data/`` tree);
    returns the aggregate's path."""
    identity = next((t["model_identity"] for t in summary["tasks"] if t["model_identity"]), None)
    model_id, developer = _identity(summary["model"], identity)
    run_id = _uuid4("helixbench", summary["run"], json.dumps(summary["scores"], sort_keys=True))
    folder = Path("data") / "helixbench" / _folder(developer) / _folder(model_id.split("/")[-1])
    finished = max((t["finished_at"] for t in summary["tasks"] if t["finished_at"]), default=0)
    evaluation_id = f"helixbench/{model_id}/{summary['method']}/{int(finished)}"
    rows = table(summary["scores"])
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
                    "uncertainty": {
                        "confidence_interval": {
                            "lower": float(row.ci_low),
                            "upper": float(row.ci_high),
                            "confidence_level": 0.95,
                            "method": "percentile bootstrap over questions (seed 0)",
                        },
                        "num_samples": int(row.n),
                        "num_bootstrap_samples": 10_000,
                    },
                },
            }
        )
    lines = []
    primary = scores[scores.primary]
    by_question = {qid: group for qid, group in primary.groupby("question_id", sort=False)}
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
            "name": summary["model"],
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


def _last_assistant(messages: list[dict]) -> int:
    return max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=0)


def inspect_log(
    summary: dict, records: dict, scores: pd.DataFrame, questions: dict, out: Path, python: str
) -> Path:
    """The run's Inspect eval log, written by :mod:`.inspect_log` under ``python`` (the
    inspect environment's interpreter)."""
    by_question = {
        qid: dict(zip(group.metric, group.score, strict=True))
        for qid, group in scores.groupby("question_id", sort=False)
    }
    samples = []
    for of_task in records.values():
        for record in of_task:
            question = questions[record["question_id"]]
            gold = question.gold if isinstance(question.gold, str) else ", ".join(question.gold)
            samples.append(
                {
                    "id": question.id,
                    "input": question.text,
                    "target": gold,
                    "messages": transcript_messages(question.text, record),
                    "answer": record["answer"] or "",
                    "error": record["error"],
                    "scores": by_question.get(question.id, {}),
                    "metadata": {"benchmark": record["benchmark"], "task": record["task"]},
                }
            )
    finished = max((t["finished_at"] for t in summary["tasks"] if t["finished_at"]), default=0)
    spec = {
        "run": summary["run"],
        "model": summary["model"],
        "method": summary["method"],
        "finished_at": finished,
        "version": __version__,
        "samples": samples,
    }
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"{_folder(summary['model'])}--{_folder(summary['method'])}.eval"
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
    from .run_summary import load_run, read_summary, run_scores

    plan, records, lines, questions = load_run(
        spec, scoring, questions_path, shard_paths, score_path
    )
    scores = run_scores(plan, lines)
    summary = read_summary(Path(summary_path))
    out_dir = Path(out_dir)
    written = []
    if "every-eval-ever" in formats:
        written.append(
            every_eval_ever(summary, records, scores, questions, out_dir / "every-eval-ever")
        )
    if "inspect" in formats:
        if not inspect_python:
            raise ValueError("the inspect export needs the inspect environment's python")
        written.append(
            inspect_log(summary, records, scores, questions, out_dir / "inspect", inspect_python)
        )
    return written
