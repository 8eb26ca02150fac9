"""Run one shard of a run (model x method, over its tasks), and score a run's shards.

These are the bodies of the workflow's run and score jobs: they take plain
paths and the JSON spec the plan made, so they are as easy to call from a test
as from a Snakemake rule.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from ..datasets.overlap import ASKED_ONCE
from ..datasets.questions import Question, read_questions
from ..digests import sha256_json, sha256_text
from ..methods import TaskContext, prepare
from ..models import ModelError, backend, create_model, serving_settings
from ..scoring import Scorers, embeddings_dir
from ..scoring.background import dataset_names, read_background
from ..scoring.calibration import calibration_sample
from ..scoring.jury import judge_names
from ..scoring.rag_assessment import applies as ragas_applies
from ..scoring.rag_assessment import ragas_scores
from ..sources.recordings import RecordingReader
from ..transcripts import ShardWriter, read_records, to_record
from .health import shard_warnings
from .progress import ShardProgress

log = logging.getLogger("helixbench.run")


def run_questions(questions: list[Question], spec: dict) -> list[tuple[dict, Question]]:
    """Every (task spec, question) the run asks, task by task in plan order, each task
    cut to its ``sample`` if the run names one. A question that repeats another of the
    run word for word (:data:`helixbench.datasets.overlap.ASKED_ONCE`) is not asked again: its
    counterpart's answer is scored for it (:func:`answered_by`)."""
    chosen = _covered(questions, spec)
    ids = {q.id for _, q in chosen}
    return [(t, q) for t, q in chosen if not _asked_as(q, ids)]


def answered_by(questions: list[Question], spec: dict) -> dict[str, str]:
    """Question id -> the id of the question of the same run whose answer it takes."""
    chosen = _covered(questions, spec)
    ids = {q.id for _, q in chosen}
    return {q.id: q.overlap_id for _, q in chosen if _asked_as(q, ids)}


def _asked_as(question: Question, ids: set[str]) -> bool:
    return question.overlap in ASKED_ONCE and question.overlap_id in ids


def _covered(questions: list[Question], spec: dict) -> list[tuple[dict, Question]]:
    by_task: dict[tuple[str, str], list[Question]] = {}
    for q in questions:
        by_task.setdefault((q.benchmark, q.task), []).append(q)
    chosen = []
    for task in spec["tasks"]:
        of_task = by_task.get((task["benchmark"], task["task"]))
        if not of_task:
            raise ValueError(f"no questions for {task['benchmark']} / {task['task']}")
        if task.get("imported_format") is None:  # (only its source asks for the hub's files)
            of_task = [q for q in of_task if q.askable]
        if spec.get("sample"):
            of_task = sample_questions(of_task, spec["sample"])
        chosen += [(task, q) for q in of_task]
    return chosen


def shard_questions(
    questions: list[Question], spec: dict, shard: int
) -> list[tuple[dict, Question]]:
    """The run's questions that fall in ``shard``: round robin over all its tasks, so
    every shard gets a like mix of tasks (and of slow and fast questions)."""
    chosen = run_questions(questions, spec)
    return [pair for i, pair in enumerate(chosen) if i % spec["shards"] == shard]


def sample_questions(questions: list[Question], n: int) -> list[Question]:
    """A fixed pseudo-random choice of ``n`` questions (by the digest of their ids), in
    question order: the same sample on every machine, for every model. An item shared
    with GeneTuring or GeneHop is drawn by its counterpart's id, so samples of two
    benchmarks take the same shared items (asked once, compared pairwise)."""
    chosen = sorted(questions, key=lambda q: sha256_text(q.overlap_id or q.id))[:n]
    return sorted(chosen, key=lambda q: q.index)


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


def _row(spec: dict, question, record: dict, metric: str, score: float, scored_by) -> dict:
    return {
        "question_id": question.id,
        "index": question.index,
        "model": spec["model"],
        "method": spec["method"],
        "benchmark": question.benchmark,
        "task": question.task,
        "metric": metric,
        "score": score,
        "demo": question.demo,
        "error": record["error"],
        "answered_as": record.get("answered_as"),
        "scored_by": scored_by,
    }


def _write_lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)


def score_run(
    spec: dict,
    questions_path: Path,
    shard_paths: list[Path],
    output: Path,
    scoring: dict,
    scorer_models: dict | None = None,
    model_cache: Path | None = None,
    background: Path | None = None,
    ragas_env: str | None = None,
    judge_calls: Path | None = None,
    questions: list[Question] | None = None,
    shared: dict | None = None,
) -> tuple[list[dict], list]:
    """Per-question scores of one run, one JSON line per (question, metric); the
    scorers of each task come from ``scoring`` (the config's section). ``background``:
    the percentile scorer's names (one a line); else the three datasets' names.
    ``ragas_env``: RAGAs' environment, for a run it scores (``scoring.ragas``), whose
    judge's calls go to ``judge_calls`` by question. Returns the run's records and the
    question table as read, for its summary in the same job (no second read).
    ``questions``: that table, read once for a batch of runs; ``shared``: the heavy
    scorers (an encoder, a background) a batch builds once (:class:`.Scorers`)."""
    every = read_questions(questions_path) if questions is None else questions
    questions = {q.id: q for q in every}
    shared = {} if shared is None else shared
    key = ("background", str(background))
    if key not in shared:  # (11,143 names: read once a batch)
        shared[key] = read_background(background) if background else dataset_names(every)
    calibrating = None  # (a published run: the judge grades its calibration sample only)
    if spec["model_spec"].get("backend") == "imported" and judge_names(scoring):
        if ("calibration",) not in shared:
            shared[("calibration",)] = calibration_sample(every, scoring)
        calibrating = shared[("calibration",)]
    scorers = Scorers(scoring, scorer_models, model_cache, shared[key], calibrating, shared)
    shard_records = [record for path in shard_paths for record in read_records(path)]
    records = list(shard_records)  # (and the second benchmarks' answers added below)
    by_id = {record["question_id"]: record for record in records}
    # A question asked once for two benchmarks: its answer scored against each gold.
    for question_id, asked in answered_by(every, spec).items():
        if asked in by_id:
            records.append({**by_id[asked], "question_id": question_id, "answered_as": asked})
    rows = []
    for record in records:
        question = questions[record["question_id"]]
        for name, scorer in scorers.for_task(question.task):
            if getattr(scorer, "per_record", False):  # (multiple choice: the choice picked)
                score = scorer.score_record(question, record)
            else:
                score = scorer(question.task, record["answer"], question.gold, question.text)
            if score is None:
                continue
            score, reason = score if isinstance(score, tuple) else (score, None)
            row = _row(spec, question, record, name, score, scorers.scored_by(name))
            rows.append({**row, "reason": reason} if reason is not None else row)
    calls = {}
    if ragas_env and ragas_applies(spec, scoring):
        own = [r for r in records if "answered_as" not in r]
        found, calls = ragas_scores(
            own,
            questions,
            scoring["ragas"],
            scorer_models or {},
            scorers.get("embedding"),
            ragas_env,
            model_cache,
        )
        for found_row in found:
            if found_row["score"] is None:
                continue
            question, record = questions[found_row["id"]], by_id[found_row["id"]]
            rows.append(
                _row(
                    spec,
                    question,
                    record,
                    found_row["metric"],
                    found_row["score"],
                    found_row["scored_by"],
                )
            )
    calls.update(scorers.judge_calls())  # (a benchmark's own judge: LABBench2's, BixBench's)
    rows.sort(key=lambda r: (r["benchmark"], r["task"], r["metric"], r["index"]))
    _write_lines(Path(output), rows)
    if judge_calls is not None:
        # (RAGAs': the events; LABBench2's judge: the verdict and the events)
        entries = [
            {"question_id": q, **(e if isinstance(e, dict) else {"events": e})}
            for q, e in calls.items()
        ]
        _write_lines(Path(judge_calls), entries)
    log.info("%d scores; model-based scorers: %s", len(rows), scorers.identities())
    return shard_records, every
