"""A run's per-question scores: every record of its shards scored by its tasks'
scorers (:class:`.Scorers`), a question asked once for two benchmarks scored against
each gold, a text scorer's verdict read where a run or job before kept it
(:mod:`.kept_verdicts`), RAGAs where the config asks for it, and the judges' calls."""

from __future__ import annotations

import logging
from pathlib import Path

from ..datasets.jsonfiles import write_jsonl
from ..datasets.questions import Question, read_questions
from ..datasets.selection import answered_by
from ..transcripts import read_records
from . import KEPT_BY_CONTENT, Scorers, scorers_for
from .background import dataset_names, read_background
from .calibration import calibration_sample
from .jury import judge_names
from .kept_verdicts import kept_verdicts, question_digest, verdict_key
from .rag_assessment import applies as ragas_applies
from .rag_assessment import ragas_scores

log = logging.getLogger("helixbench.score")


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


class KeptScores:
    """A run's text scores, read where a run or job before kept them
    (:mod:`.kept_verdicts`: one entry an answer to a question, holding the verdicts of
    its task's kept scorers; all the run's entries asked at once), the rest computed
    and kept on :meth:`close`. ``memo``: what the batch's runs before found or kept
    (a key's verdicts, an answer's key), so that a batch asks the store once an answer."""

    def __init__(
        self,
        scorers: Scorers,
        model_cache,
        records: list[dict],
        questions: dict,
        digests: dict[str, str] | None = None,
        memo: dict | None = None,
    ):
        self._store = kept_verdicts(model_cache)
        self._keys: dict[tuple, str] = {}
        self._new: dict[str, dict] = {}
        self._found: dict[str, dict] = {}
        if self._store is None:
            return
        memo = {} if memo is None else memo
        self._found = memo.setdefault("verdicts", {})  # key -> its verdicts, as kept
        made = memo.setdefault("keys", {})  # (namespace, question, answer) -> key
        spaces: dict[str, str | None] = {}  # task -> its kept scorers' namespace
        digests = {} if digests is None else digests  # question id -> question_digest
        for record in records:
            question = questions[record["question_id"]]
            if question.task not in spaces:
                spaces[question.task] = scorers.namespace(
                    scorers_for(question.task, scorers.scoring)
                )
            space, answer = spaces[question.task], record["answer"]
            if space is None:
                continue
            named = (space, question.id, answer) if isinstance(answer, str) else None
            key = made.get(named) if named else None
            if key is None:
                if question.id not in digests:
                    digests[question.id] = question_digest(question)
                key = verdict_key(space, digests[question.id], answer)
                if named:
                    made[named] = key
            self._keys[(question.id, answer)] = key
        asked = [key for key in self._keys.values() if key not in self._found]
        self._found.update(self._store.found(asked))

    def score(self, name: str, scorer, question, answer):
        key = self._keys.get((question.id, answer))
        kept = self._found.get(key, {}) if key is not None else {}
        if name in kept:
            return kept[name]
        score = scorer(question.task, answer, question.gold, question.text)
        if key is not None and name in KEPT_BY_CONTENT:
            self._new.setdefault(key, {})[name] = score
        return score

    def close(self) -> None:
        if self._store is not None:
            self._store.keep(self._new)
            self._store.close()
            for key, verdicts in self._new.items():  # (as the store keeps them: a key once)
                self._found.setdefault(key, verdicts)


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
) -> tuple[list[dict], list, list[dict]]:
    """Per-question scores of one run, one JSON line per (question, metric); the
    scorers of each task come from ``scoring`` (the config's section). ``background``:
    the percentile scorer's names (one a line); else the three datasets' names.
    ``ragas_env``: RAGAs' environment, for a run it scores (``scoring.ragas``), whose
    judge's calls go to ``judge_calls`` by question. Returns the run's records, the
    question table as read and the score lines as written, for its summary in the same
    job (no second read).
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
    # (a batch's runs share its question table, and so their questions' digests)
    digests = shared.setdefault(("question digests",), {})
    memo = shared.setdefault(("kept verdicts",), {})
    kept = KeptScores(scorers, model_cache, records, questions, digests, memo)
    of_task: dict[str, list[tuple]] = {}  # task -> its scorers, once a run
    for record in records:
        question = questions[record["question_id"]]
        if question.task not in of_task:
            of_task[question.task] = [
                (name, scorer, getattr(scorer, "per_record", False), scorers.scored_by(name))
                for name, scorer in scorers.for_task(question.task)
            ]
        for name, scorer, per_record, scored_by in of_task[question.task]:
            if per_record:  # (multiple choice: the choice picked)
                score = scorer.score_record(question, record)
            else:
                score = kept.score(name, scorer, question, record["answer"])
            if score is None:
                continue
            score, reason = score if isinstance(score, tuple) else (score, None)
            row = _row(spec, question, record, name, score, scored_by)
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
    kept.close()
    calls.update(scorers.judge_calls())  # (a benchmark's own judge: LABBench2's, BixBench's)
    rows.sort(key=lambda r: (r["benchmark"], r["task"], r["metric"], r["index"]))
    write_jsonl(Path(output), rows)
    if judge_calls is not None:
        # (RAGAs': the events; LABBench2's judge: the verdict and the events)
        entries = [
            {"question_id": q, **(e if isinstance(e, dict) else {"events": e})}
            for q, e in calls.items()
        ]
        write_jsonl(Path(judge_calls), entries)
    log.info("%d scores; model-based scorers: %s", len(rows), scorers.identities())
    return shard_records, every, rows
