"""RAGAs (RAG Assessment) for retrieval runs, as BRAD's paper evaluated its
retrieval-augmented answers: faithfulness, answer relevancy, context precision,
context recall and answer correctness, computed by the ``ragas`` library itself.

RAGAs runs in an environment of its own (``workflow/envs/peers/ragas.yaml``; its
LangChain stack is not the project's) on :mod:`.ragas_runner`. Its judge is a model
of the config (``scoring.ragas.judge``) and its encoder the ``embedding`` scorer's
model, both reached through helixbench's model gateway on 127.0.0.1: every judge
call goes through the model layer (its response cache, so a rerun replays them
offline) and is an event of the question it judged, kept beside the run's scores.

A sample is the question, the run's answer, the texts it retrieved (the record's
``retrieval`` events: none for a run without retrieval, whose context metrics RAGAs
leaves unscored) and the gold as the reference.
"""

from __future__ import annotations

import json
import logging
import subprocess
import tempfile
from pathlib import Path

from ..environments import environment_python
from ..gateway import Sessions
from ..gateway.model_api import ModelGateway
from ..models import create_model
from .ragas_runner import METRICS

log = logging.getLogger("helixbench.ragas")

SCORES = {metric: f"ragas_{metric}" for metric in METRICS}
# The methods RAGAs scores: retrieval (BRAD's standard and compressed RAG) and the
# vanilla model they are set beside (BRAD's three configurations), on questions (a
# gene set's name is scored as GeneAgent scores it).
KINDS = ("brad", "no-tools")
RUNNER = Path(__file__).with_name("ragas_runner.py")
# Judge calls per sample: statements, verdicts, questions, per-context verdicts.
MAX_CALLS = 200


def applies(spec: dict, scoring: dict) -> bool:
    """Whether a run (its spec) is scored by RAGAs under ``scoring``."""
    return bool(scoring.get("ragas")) and spec.get("method_spec", {}).get("kind") in KINDS


def sample_of(question, record: dict) -> dict:
    contexts = [
        chunk["text"]
        for event in record.get("events", [])
        if event["type"] == "retrieval"
        for chunk in event["data"].get("chunks", [])
    ]
    gold = question.gold_text
    return {
        "id": question.id,
        "user_input": question.text,
        "response": record.get("answer") or "",
        "retrieved_contexts": contexts,
        "reference": gold,
    }


def ragas_scores(
    records: list[dict],
    questions: dict,
    settings: dict,
    models: dict,
    encoder,
    env_marker: str,
    model_cache: Path | None = None,
) -> tuple[list[dict], dict[str, list]]:
    """RAGAs' rows ``{"id", "metric", "score", "scored_by"}`` for the records, and the
    judge's events by question id (gene sets are left out)."""
    judge = settings["judge"]
    if judge not in models:
        raise ValueError(f"scoring.ragas.judge: {judge!r} is not a model of the config")
    model = create_model(models[judge], cache=model_cache)
    sessions = Sessions()
    caps = {"max_model_calls": MAX_CALLS, "max_tool_calls": 0}
    samples, opened = [], {}
    for record in records:
        question = questions[record["question_id"]]
        if question.benchmark == "genesets":
            continue
        session = sessions.open(question.id, question.text, caps)
        opened[question.id] = session
        samples.append({**sample_of(question, record), "key": session.token})
    if not samples:
        return [], {}
    scored_by = f"RAGAs, judge {judge}, encoder {encoder.label()}"
    with (
        ModelGateway(model, sessions, judge, encoder=encoder) as gateway,
        tempfile.TemporaryDirectory() as tmp,
    ):
        task = {
            "llm": {"base_url": gateway.base_url, "model": judge},
            "embeddings": {"base_url": gateway.base_url, "model": encoder.label()},
            "samples": samples,
        }
        source, out = Path(tmp) / "samples.json", Path(tmp) / "scores.jsonl"
        source.write_text(json.dumps(task))
        done = subprocess.run(
            [environment_python(env_marker), str(RUNNER), str(source), str(out)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"RAGAs failed:\n{done.stderr[-3000:]}")
        for line in done.stderr.splitlines():  # a metric RAGAs could not compute
            if line.startswith("Exception raised in Job"):
                log.warning("RAGAs: %s (that metric of that question is left unscored)", line)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
    events = {qid: [vars(e) for e in session.events] for qid, session in opened.items()}
    return [
        {"id": r["id"], "metric": SCORES[r["metric"]], "score": r["score"], "scored_by": scored_by}
        for r in rows
    ], events
