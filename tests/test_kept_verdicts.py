"""Text scorers' verdicts kept by content across runs and jobs: a second run giving the
same answers reads every verdict and computes none (ROUGE is never asked), its scores
are the first's to the last digit, and a new answer, a new gold or another encoder
misses."""

from __future__ import annotations

import json

from helixbench.datasets.questions import Question, write_questions
from helixbench.scoring import DEFAULT_SCORING
from helixbench.scoring.kept_verdicts import KeptVerdicts, namespace, question_digest, verdict_key
from helixbench.scoring.run_scores import score_run
from helixbench.scoring.text import _rouge_scores

TASK = "SNP gene function"
SCORING = {**DEFAULT_SCORING, "tasks": {TASK: ["rouge1", "rougeL", "strict"]}}
GOLDS = [
    "The gene encodes a kinase active in the cytosol",
    "A transcription factor that binds DNA in the nucleus",
    "It codes for a membrane transporter of glucose",
]


def _spec(model: str) -> dict:
    return {
        "model": model,
        "method": "no-tools",
        "model_spec": {"backend": "openai"},
        "shards": 1,
        "tasks": [{"benchmark": "genehop", "task": TASK}],
    }


def _shard(path, answers: list[str]) -> None:
    rows = [
        {"question_id": f"genehop.snp-gene-function.{i:03d}", "answer": f"Answer: {answer}"}
        | {"error": None, "events": [], "wall_s": 1.0}
        for i, answer in enumerate(answers)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _score(tmp_path, name: str, answers: list[str], questions, shared=None) -> list[dict]:
    shard, out = tmp_path / f"{name}.shard.jsonl", tmp_path / f"{name}.scores.jsonl"
    _shard(shard, answers)
    cache = tmp_path / "models.sqlite"
    score_run(_spec(name), questions, [shard], out, SCORING, model_cache=cache, shared=shared)
    return [
        {k: v for k, v in json.loads(line).items() if k != "model"}
        for line in out.read_text().splitlines()
    ]


def test_a_second_run_reads_every_verdict_the_first_kept(tmp_path):
    questions = tmp_path / "questions.jsonl"
    write_questions(
        [Question.at("genehop", TASK, i, f"rs{i}?", g) for i, g in enumerate(GOLDS)], questions
    )
    answers = ["a kinase in the cytosol", "binds DNA", "a glucose transporter"]
    first = _score(tmp_path, "first", answers, questions)
    kept = KeptVerdicts(tmp_path / "verdicts.sqlite")
    # An entry an answer, with its three scorers' verdicts: strict's "not this task"
    # (None) is kept too.
    assert kept.count("verdicts") == 3
    entry = kept.found([kept._query_one("SELECT key FROM verdicts")[0]])
    assert [set(v) for v in entry.values()] == [{"rouge1", "rougeL", "strict"}]
    assert {r["metric"] for r in first} == {"rouge1", "rougeL"}
    assert 0 < first[0]["score"] < 1

    _rouge_scores.cache_clear()
    second = _score(tmp_path, "second", answers, questions)
    assert second == first  # to the last digit
    assert _rouge_scores.cache_info().misses == 0  # nothing computed: all read

    # One new answer: its verdicts computed and kept, the others read.
    third = _score(tmp_path, "third", [*answers[:2], "an ion channel"], questions)
    assert _rouge_scores.cache_info().misses == 1
    assert kept.count("verdicts") == 3 + 1
    assert third[:2] == first[:2] and third[2]["score"] != first[2]["score"]


def test_a_verdict_key_changes_with_gold_text_answer_and_scorers(tmp_path):
    question = Question.at("genehop", TASK, 0, "rs1?", GOLDS[0])
    digest = question_digest(question)
    space = namespace({"rougeL": None}, "code-1")
    keys = [
        verdict_key(space, digest, "Answer: kinase"),
        verdict_key(
            space,
            question_digest(Question.at("genehop", TASK, 0, "rs1?", GOLDS[1])),
            "Answer: kinase",
        ),
        verdict_key(
            space,
            question_digest(Question.at("genehop", TASK, 0, "rs2?", GOLDS[0])),
            "Answer: kinase",
        ),
        verdict_key(space, digest, "Answer: kinases"),
        verdict_key(space, digest, None),
        verdict_key(namespace({"rouge1": None}, "code-1"), digest, "Answer: kinase"),
        verdict_key(namespace({"rougeL": None}, "code-2"), digest, "Answer: kinase"),
        verdict_key(namespace({"embedding": {"model": "a"}}, "code-1"), digest, "x"),
        verdict_key(namespace({"embedding": {"model": "b"}}, "code-1"), digest, "x"),
    ]
    assert len(set(keys)) == len(keys)
    store = KeptVerdicts(tmp_path / "v.sqlite")
    verdicts = {"lb": (0.5, "half"), "none": None, "sum": 0.1 + 0.2}
    store.keep({keys[0]: verdicts})
    assert store.found([keys[0], keys[1]]) == {keys[0]: verdicts}  # (0.30000000000000004)


def test_a_batch_asks_the_store_once_an_answer(tmp_path):
    """A score job's runs share what they found and kept: a second run of the batch
    giving the same answers needs neither the store nor ROUGE (here the store is gone
    before it), and scores to the last digit as the first."""
    questions = tmp_path / "questions.jsonl"
    write_questions(
        [Question.at("genehop", TASK, i, f"rs{i}?", g) for i, g in enumerate(GOLDS)], questions
    )
    answers = ["a kinase in the cytosol", "binds DNA", "a glucose transporter"]
    batch: dict = {}
    first = _score(tmp_path, "first", answers, questions, batch)
    (tmp_path / "verdicts.sqlite").unlink()
    _rouge_scores.cache_clear()
    second = _score(tmp_path, "second", answers, questions, batch)
    assert second == first and _rouge_scores.cache_info().misses == 0
    # (a job of its own finds nothing kept now: it computes each answer's again)
    (tmp_path / "verdicts.sqlite").unlink()
    assert _score(tmp_path, "alone", answers, questions) == first
    assert _rouge_scores.cache_info().misses == 3
