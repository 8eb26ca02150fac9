"""LAB-Bench in the question bank: its three benchmarks and 26 subtasks as the pinned
files hold them, multiple choice in the peers' two wordings, scored by the choice
picked (its place, never its text): a model that answers the ideal letter scores
1 on every subtask, one that always refuses covers none."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from helixbench.benchmarks import get, local_question_table, tasks_of
from helixbench.config import build_plan
from helixbench.datasets.questions import write_questions
from helixbench.errors import ConfigError
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.choices import LETTERS, Presentation, present, write_templates
from helixbench.paths import PEER_TEMPLATES
from helixbench.report.tables.scores import POOLED, score_table
from helixbench.run.shard import run_shard
from helixbench.scoring import DEFAULT_SCORING
from helixbench.scoring.choice import picked
from helixbench.scoring.run_scores import score_run

PARTS = ("labbench-dbqa", "labbench-seqqa", "labbench-cloning")
pytestmark = pytest.mark.xdist_group("inspect")  # (its environment, built once)


@pytest.fixture(scope="module")
def bank(mirror):
    return local_question_table(mirror)


def test_the_three_parts_hold_the_public_split_as_pinned(bank):
    counts = Counter(q.benchmark for q in bank if q.benchmark in PARTS)
    assert counts == {"labbench-dbqa": 520, "labbench-seqqa": 600, "labbench-cloning": 33}
    assert [len(tasks_of(p)) for p in PARTS] == [10, 15, 1]
    assert get("labbench-seqqa").modules.keys() == {"ORF", "PCR", "Prop", "RE"}
    assert "CC BY-SA 4.0" in get("labbench-dbqa").licence
    for q in (q for q in bank if q.benchmark in PARTS):
        assert q.choices[0] == q.gold and q.choices[-1].startswith("Insufficient information")
        assert q.source_id and len(q.choices) >= 5
    assert not any(q.overlap for q in bank if q.benchmark in PARTS)


def test_the_right_choice_is_its_place_not_its_text(bank):
    """Six PCR-geneprimers-enz questions repeat the ideal's text among their
    distractors: picking the twin is wrong, as the peer scores it."""
    twins = [q for q in bank if q.benchmark in PARTS and q.choices[0] in q.choices[1:-1]]
    assert {q.task for q in twins} == {"PCR-geneprimers-enz"} and len(twins) == 6
    question = twins[0]
    twin = question.choices.index(question.choices[0], 1)
    order = [twin, 0, *[i for i in range(len(question.choices)) if i not in (0, twin)]]
    assert picked(question, {"answer": "A", "presented": order}) == twin
    assert picked(question, {"answer": "b", "presented": order}) == 0
    assert picked(question, {"answer": "Z", "presented": order}) is None
    assert picked(question, {"answer": question.choices[-1]}) == len(question.choices) - 1


@pytest.mark.parametrize(
    "reply, letter",
    [
        ("ANSWER: C", "C"),
        ("Thinking.\nANSWER: c.", "C"),
        ("**ANSWER: B**", "B"),
        ("ANSWER: $D$", "D"),
        ("ANSWER: (A)", "A"),
        ("ANSWER: A, B", None),
        ("The answer is B.", None),
        ("ANSWER: F", None),  # no option F among five
    ],
)
def test_inspect_reads_the_letter_as_inspect_ai_does(reply, letter):
    shown = Presentation("p", (0, 1, 2, 3, 4), ("a", "b", "c", "d", "e"), "inspect")
    assert shown.letter_of(reply) == letter


def test_futurehouse_reads_the_letter_between_its_tags():
    pattern = r"(?:\[ANSWER\])\s*([A-Z](?:,\s*[A-Z])*)\s*(?:\[/?ANSWER\])"
    shown = Presentation("p", (0, 1, 2, 3, 4), ("a",) * 5, "futurehouse", pattern)
    assert shown.letter_of("Because.\n[ANSWER]D[/ANSWER]") == "D"
    assert shown.letter_of("[ANSWER](B)[/ANSWER]") == "B"
    assert shown.letter_of("C") == "C"
    assert shown.letter_of("I think it is C") is None


def test_multiple_choice_takes_the_methods_that_can_ask_it(mirror):
    config = {
        "benchmarks": ["labbench-seqqa"],
        "models": {"m": {"backend": "openai", "model": "x", "base_url": "http://h/v1"}},
        "methods": {"slim": {"kind": "genegpt", "mask": "001001"}},
        "runs": [{"model": "m", "method": "slim"}],
    }
    with pytest.raises(ConfigError, match="asks multiple choice: its methods are no-tools"):
        build_plan(config, mirror)


@pytest.mark.parametrize("variant", ["inspect", "futurehouse"])
def test_the_ideal_letter_scores_one_and_refusing_covers_nothing(
    inspect_env, mirror, bank, tmp_path, monkeypatch, variant
):
    """Three questions of every LAB-Bench subtask (the orders drawn over all 1,153)
    through the no-tools method, a scripted model picking the ideal's letter (then the
    refusal's), in each variant's answer format."""
    monkeypatch.chdir(tmp_path)
    templates = write_templates(inspect_env, Path(PEER_TEMPLATES))
    zero_shot = None
    if variant == "futurehouse":  # the pinned zero_shot.py, where the run job reads it
        from helixbench.methods.choices import ZERO_SHOT
        from helixbench.paths import upstream_path

        zero_shot = Path(upstream_path(ZERO_SHOT))
        zero_shot.parent.mkdir(parents=True)
        zero_shot.write_bytes((mirror / ZERO_SHOT.relpath).read_bytes())
    write_questions(bank, tmp_path / "questions.jsonl")
    shown = {}
    for part in PARTS:
        shown |= present(
            variant, [q for q in bank if q.benchmark == part], 42, templates, zero_shot
        )
    by_prompt = {p.prompt: p for p in shown.values()}
    pick = {"ideal": 0}

    def reply(prompt: str) -> str:
        order = by_prompt[prompt].presented
        letter = LETTERS[order.index(pick["ideal"] if pick["ideal"] == 0 else len(order) - 1)]
        return (
            f"Reasons.\nANSWER: {letter}" if variant == "inspect" else f"[ANSWER]{letter}[/ANSWER]"
        )

    for choice in ("ideal", "refusal"):
        pick["ideal"] = 0 if choice == "ideal" else -1
        with OpenAIServer() as server:
            server.state.replies = reply
            config = {
                "benchmarks": list(PARTS),
                "models": {"m": {**server.chat_model(), "concurrency": 16}},
                "methods": {"mc": {"kind": "no-tools", "choices": variant}},
                "runs": [{"model": "m", "method": "mc", "sample": 3}],
            }
            plan = build_plan(config, mirror)
            (run,) = plan.runs
            shard, scores = tmp_path / f"{choice}.jsonl", tmp_path / f"{choice}-scores.jsonl"
            questions = tmp_path / "questions.jsonl"
            run_shard(run.spec(), 0, questions, shard, model_cache=tmp_path / f"{choice}.sqlite")
            score_run(run.spec(), questions, [shard], scores, DEFAULT_SCORING)
        rows = pd.DataFrame([json.loads(line) for line in scores.read_text().splitlines()])
        table = score_table(plan, rows.assign(run="m / mc"))
        subtasks = table[table.task.isin([t for p in PARTS for t in tasks_of(p)])]
        assert len(subtasks.task.unique()) == 26
        wanted = {"accuracy": 1.0, "precision": 1.0, "coverage": 1.0}
        if choice == "refusal":
            wanted = {"accuracy": 0.0, "coverage": 0.0}  # (precision: none answered)
        for metric, value in wanted.items():
            assert set(subtasks[subtasks.metric == metric].score) == {value}, (choice, metric)
        pooled = table[(table.task == POOLED) & (table.metric == "coverage")]
        assert set(pooled.benchmark) == {*PARTS, "labbench"}
        assert dict(zip(pooled.benchmark, pooled.n, strict=True))["labbench"] == 3 * 26
