"""Run one shard of one (model, method, task), and score a task's shards.

These are the bodies of the workflow's run and score jobs: they take plain
paths and the JSON spec the plan made, so they are as easy to call from a test
as from a Snakemake rule.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from .benchmarks import Question, read_questions
from .digests import sha256_json, sha256_text
from .methods import create_method
from .models import create_model
from .recordings import load_recording
from .records import ShardWriter, read_records, to_record
from .scoring import get_scorer
from .snapshots import Snapshot
from .tools import create_toolbox, tool_settings

log = logging.getLogger("helixbench.run")


def shard_questions(questions: list[Question], spec: dict, shard: int) -> list[Question]:
    """The questions of ``spec``'s task that fall in ``shard`` (round robin by index),
    of its ``sample`` if it names one."""
    task = [q for q in questions if q.benchmark == spec["benchmark"] and q.task == spec["task"]]
    if not task:
        raise ValueError(f"no questions for {spec['benchmark']} / {spec['task']}")
    if spec.get("sample"):
        task = sample_questions(task, spec["sample"])
    return [q for i, q in enumerate(task) if i % spec["shards"] == shard]


def sample_questions(questions: list[Question], n: int) -> list[Question]:
    """A fixed pseudo-random choice of ``n`` questions (by the digest of their ids), in
    question order: the same sample on every machine, for every model."""
    chosen = sorted(questions, key=lambda q: sha256_text(q.id))[:n]
    return sorted(chosen, key=lambda q: q.index)


def run_shard(
    spec: dict,
    shard: int,
    questions_path: Path,
    output: Path,
    recording: Path | None = None,
    snapshot: Path | None = None,
    model_cache: Path | None = None,
    model_dir: Path | None = None,
    threads: int | None = None,
) -> None:
    questions = shard_questions(read_questions(questions_path), spec, shard)
    recorded = load_recording(recording) if recording else []
    source = {"url": spec.get("recording_url"), "sha256": spec.get("recording_sha256")}
    model = create_model(
        spec["model_spec"],
        recorded=recorded,
        recording_source=source,
        cache=model_cache,
        prefix_cache=Path(model_cache).parent / "prefixes" if model_cache else None,
        model_dir=model_dir,
        threads=threads,
    )
    snap = Snapshot.load(snapshot)
    method = create_method(spec["method_spec"], snap)
    tools = create_toolbox(
        tool_settings(spec["tools"]["mode"]), recorded, {q.text: q.id for q in questions}
    )
    identity = model.identity()
    # What shapes the records: the spec, the prompt header (its snapshot and its
    # hash) and the model's identity; a change in any sets old partial records aside.
    header_sha256 = sha256_text(getattr(method, "header", ""))
    run_key = sha256_json([spec, shard, snap.id, header_sha256, identity])
    writer = ShardWriter(output, run_key)
    todo = [q for q in questions if q.id not in writer.done]
    log.info(
        "%s x %s, %s / %s shard %d/%d: %d questions, %d already done",
        spec["model"],
        spec["method"],
        spec["benchmark"],
        spec["task"],
        shard,
        spec["shards"],
        len(questions),
        len(questions) - len(todo),
    )
    run_info = {
        "model": spec["model"],
        "method": spec["method"],
        "benchmark": spec["benchmark"],
        "task": spec["task"],
        "snapshot_id": snap.id,
        "tools_mode": spec["tools"]["mode"],
        "model_identity": identity,
    }
    for question in todo:
        started = time.perf_counter()
        result = method.run(question.id, question.text, model, tools)
        writer.append(to_record(result, run_info, time.perf_counter() - started))
    writer.finalize([q.id for q in questions])


def score_task(
    spec: dict, questions_path: Path, shard_paths: list[Path], output: Path, scorers: list[str]
) -> None:
    """Per-question scores of one task, one JSON line per (question, metric)."""
    questions = {q.id: q for q in read_questions(questions_path)}
    rows = []
    for path in shard_paths:
        for record in read_records(path):
            question = questions[record["question_id"]]
            for name in scorers:
                score = get_scorer(name)(question.task, record["answer"], question.gold)
                if score is None:
                    continue
                rows.append(
                    {
                        "question_id": question.id,
                        "index": question.index,
                        "model": spec["model"],
                        "method": spec["method"],
                        "benchmark": spec["benchmark"],
                        "task": spec["task"],
                        "metric": name,
                        "score": score,
                        "demo": question.demo,
                        "error": record["error"],
                    }
                )
    rows.sort(key=lambda r: (r["metric"], r["index"]))
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(output)
