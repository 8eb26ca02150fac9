"""Run one shard of a run (model x method, over its tasks).

The body of the workflow's run jobs: it takes plain paths and the JSON spec the plan
made, so it is as easy to call from a test as from a Snakemake rule. A run's scores are
:mod:`..scoring.run_scores`'.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from ..datasets.questions import read_questions
from ..datasets.selection import shard_questions
from ..digests import sha256_json, sha256_text
from ..methods import TaskContext, prepare
from ..models import ModelError, backend, create_model, serving_settings
from ..scoring import embeddings_dir
from ..sources.recordings import RecordingReader
from ..transcripts import ShardWriter, to_record
from .health import shard_warnings
from .progress import ShardProgress

log = logging.getLogger("helixbench.run")


@dataclass
class _TaskSetup:
    """One task's part of a shard: its method (with its snapshot), model and tools."""

    run_info: dict
    method: object
    model: object
    tools: object
    header_sha256: str


def _task_setup(spec, task, questions, model, every, recordings, embeddings) -> _TaskSetup:
    context = TaskContext(spec, task, questions, every, model, recordings, embeddings)
    prepared = prepare(context)
    run_info = {
        "model": spec["model"],
        "method": spec["method"],
        "benchmark": task["benchmark"],
        "task": task["task"],
        "snapshot_id": prepared.snapshot_id,
        "tools_mode": spec["tools"]["mode"],
        "model_identity": prepared.model.identity(),
        **prepared.info,
    }
    header_sha256 = sha256_text(getattr(prepared.method, "header", ""))
    return _TaskSetup(run_info, prepared.method, prepared.model, prepared.tools, header_sha256)


def run_shard(
    spec: dict,
    shard: int,
    questions_path: Path,
    output: Path,
    model_cache: Path | None = None,
    model_dir: Path | None = None,
    threads: int | None = None,
    serving: dict | None = None,
    console=None,
) -> None:
    """Answer the questions of ``shard`` into ``output``. ``serving``: the model's
    serving settings (``concurrency``), by default those the workflow passed down;
    ``console``: a stream apart from the log for sparse progress lines."""
    every = read_questions(questions_path)
    chosen = shard_questions(every, spec, shard)
    shared_model = None
    if not backend(spec["model_spec"]["backend"]).recorded:  # one model (one load) for all tasks
        caches = Path(model_cache).parent if model_cache else None
        if serving is None:
            serving = serving_settings(spec["model"])
        shared_model = create_model(
            {**spec["model_spec"], **serving},
            cache=model_cache,
            name=spec["model"],
            prefix_cache=caches / "prefixes" if caches else None,
            lock_dir=caches / "locks" if caches else None,
            model_dir=model_dir,
            threads=threads,
        )
    setups, recordings = {}, RecordingReader()
    for task in spec["tasks"]:
        of_task = [q for t, q in chosen if t is task]
        if of_task:
            setups[task["benchmark"], task["task"]] = _task_setup(
                spec, task, of_task, shared_model, every, recordings, embeddings_dir(model_cache)
            )
    # What shapes the records: the spec, each task's prompt header (its snapshot and
    # its hash) and model identity; a change in any sets old partial records aside.
    shaping = [[s.run_info, s.header_sha256] for s in setups.values()]
    run_key = sha256_json([spec, shard, shaping])
    writer = ShardWriter(output, run_key)
    todo = [(t, q) for t, q in chosen if q.id not in writer.done]
    log.info(
        "%s x %s shard %d/%d: %d questions of %d tasks, %d already done",
        spec["model"],
        spec["method"],
        shard,
        spec["shards"],
        len(chosen),
        len(setups),
        len(chosen) - len(todo),
    )
    # Each prompt header is logged once per shard (records log prompts after it).
    logged = {r["header_sha256"] for r in writer.records if r.get("header") is not None}
    label = f"{spec['model']} / {spec['method']} shard-{shard}-of-{spec['shards']}"
    imported = spec["method_spec"].get("kind") == "imported"  # (answers read, not asked)
    progress = ShardProgress(
        label, output, len(chosen), writer.records, console=console, imported=imported
    )
    in_flight = questions_in_flight(shared_model, setups)
    failed, in_a_row = [], 0

    def answer(task, question):
        setup = setups[task["benchmark"], task["task"]]
        started = time.perf_counter()
        result = setup.method.run(question.id, question.text, setup.model, setup.tools)
        return setup, question, result, time.perf_counter() - started

    def stopping() -> bool:  # the server is down: start no more questions
        return in_a_row >= MAX_TRANSIENT_IN_A_ROW

    try:
        for setup, question, result, wall_s in answered(answer, todo, in_flight, stopping):
            if transient_failure(result):
                # The server's state, not the question's: no record, so a rerun retries it.
                failed.append(question.id)
                in_a_row += 1
                progress.question_failed()
                log.warning(
                    "%s: the model call failed (%s); not recorded", question.id, result.error
                )
                continue
            if not stopping():
                in_a_row = 0
            record = to_record(result, setup.run_info, wall_s)
            header = getattr(setup.method, "header", None)
            # Only a result whose prompts follow a header logs it (an agent's has none).
            if header and result.header_sha256 and result.header_sha256 not in logged:
                record["header"] = header
                logged.add(result.header_sha256)
            writer.append(record)
            progress.question_done(record)
    finally:
        progress.close(finished=len(writer.records) == len(chosen))
    if failed:
        raise ModelError(
            f"{len(failed)} question(s) of this shard failed on the model server "
            f"(unreachable, timing out or failing; {in_a_row} in a row at the end) and "
            f"were not recorded: {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}. "
            f"{len(writer.records)} of {len(chosen)} are done; run the workflow again to "
            "resume with the rest",
            transient=True,
        )
    writer.finalize([q.id for _, q in chosen])
    for message in shard_warnings(spec, writer.records):
        log.warning("%s: %s", label, message)


# A shard stops after this many questions in a row whose model call failed transiently
# (the server is down or overloaded): the job fails, keeping every finished record.
MAX_TRANSIENT_IN_A_ROW = 3


def questions_in_flight(model, setups: dict) -> int:
    """How many questions a shard keeps going at once: as many as its model may have
    requests in flight (a served model: its ``concurrency``); one for a model in
    the job's own process (transformers), a replay or an answer source."""
    if model is None or not setups:
        return 1
    return max(1, int(getattr(model, "max_in_flight", 1)))


def answered(answer, todo: list, in_flight: int, stopping=lambda: False):
    """``answer(task, question)`` for each of ``todo``, up to ``in_flight`` at once in
    threads (each question's own loop runs in one, unchanged and in order; the
    methods block on sockets, sqlite and rate limits, which threads overlap
    without a rewrite of every loop), yielded as each finishes; one at a time runs
    in this thread. Once ``stopping()`` no question is started; those running
    finish and are yielded."""
    if in_flight <= 1:
        for task, question in todo:
            if stopping():
                return
            yield answer(task, question)
        return
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pending = iter(todo)
    with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="question") as pool:
        running = set()
        while True:
            while len(running) < in_flight and not stopping():
                task_question = next(pending, None)
                if task_question is None:
                    break
                running.add(pool.submit(answer, *task_question))
            if not running:
                return
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()


def transient_failure(result) -> bool:
    """Whether a question ended on a transient model failure (no answer to record)."""
    if result.error != "model_error":
        return False
    calls = [e for e in result.events if e.type == "model"]
    return bool(calls) and calls[-1].data.get("transient", False)
