"""LAB-Bench as inspect_evals asks it, request for request and number for number.

helixbench asks LAB-Bench's DbQA, SeqQA and CloningScenarios (all 1,153 public
questions) with its ``inspect`` variant (inspect_evals 0.26.0's template, read from
the installed package; its seeded orders; no generation parameter, as it sends none)
of a loopback server that keeps every request body as it came, a scripted model
answering in every way a model does (the right letter, a wrong one, the refusal, a
letter wrapped in ``$`` or ``**``, lower case, two letters, no ``ANSWER:`` line).
Then inspect_evals itself, in its own environment, runs its own
``lab_bench_dbqa``, ``lab_bench_seqqa`` and ``lab_bench_cloning_scenarios`` tasks on
the same rows (read locally in place of its hub download; its seeds, template,
solver and scorer its own) against a second such server with the same script: the
two sets of request bodies are the same, byte for byte (the question and option
orders, the message, the parameters), every sample holds its choices in helixbench's
order, and Inspect's verdicts, accuracy, precision and coverage equal helixbench's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from helixbench.benchmarks import get, local_question_table
from helixbench.config import build_plan
from helixbench.datasets.questions import write_questions
from helixbench.environments import environment_python
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.choices import LETTERS, present, write_templates
from helixbench.paths import PEER_TEMPLATES
from helixbench.run.shard import run_shard
from helixbench.scoring import DEFAULT_SCORING
from helixbench.scoring.run_scores import score_run

from .conftest import REPO_ROOT

DRIVER = REPO_ROOT / "tests" / "support" / "inspect_lab_bench.py"
PARTS = {
    "labbench-dbqa": "DbQA",
    "labbench-seqqa": "SeqQA",
    "labbench-cloning": "CloningScenarios",
}

pytestmark = pytest.mark.xdist_group("inspect")


def _reply_for(shown: dict):
    """A scripted model's reply to each prompt, in one of ten ways by the prompt's
    digest: 0-2 the right letter, 3 a wrong one, 4 the refusal, 5 ``$X$``, 6 ``**X**``
    in lower case, 7 two letters, 8 no ANSWER line, 9 reasoning, then a wrong letter."""
    by_prompt = {p.prompt: p for p in shown.values()}

    def reply(prompt: str) -> str:
        presented = by_prompt[prompt].presented
        right, refusal = LETTERS[presented.index(0)], LETTERS[presented.index(len(presented) - 1)]
        wrong = LETTERS[presented.index(1)]
        way = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 10
        return {
            0: f"ANSWER: {right}",
            1: f"The options differ in one base.\nANSWER: {right}",
            2: f"ANSWER: {right}.",
            3: f"ANSWER: {wrong}",
            4: f"I cannot tell.\nANSWER: {refusal}",
            5: f"ANSWER: ${right}$",
            6: f"**ANSWER: {right.lower()}**",
            7: f"ANSWER: {right}, {wrong}",
            8: f"It is ({right}).",
            9: f"Step one.\nStep two.\nANSWER: {wrong}",
        }[way]

    return reply


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_inspect_evals_lab_bench_sends_our_requests_and_scores_number_for_number(
    inspect_env, mirror, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    templates = write_templates(inspect_env, Path(PEER_TEMPLATES))
    every = local_question_table(mirror)
    write_questions(every, tmp_path / "questions.jsonl")
    shown = {}
    for benchmark in PARTS:
        of_benchmark = [q for q in every if q.benchmark == benchmark]
        shown |= present("inspect", of_benchmark, 42, templates, None)
    with OpenAIServer() as server, OpenAIServer() as theirs:
        server.state.replies = theirs.state.replies = _reply_for(shown)
        spec = {**server.chat_model(), "concurrency": 16}
        config = {
            "benchmarks": list(PARTS),
            "models": {"m": spec},
            "methods": {"asked": {"kind": "no-tools", "choices": "inspect"}},
            "runs": [{"model": "m", "method": "asked"}],
        }
        (run,) = build_plan(config, mirror).runs
        shard, scores = tmp_path / "shard.jsonl", tmp_path / "scores.jsonl"
        run_shard(run.spec(), 0, tmp_path / "questions.jsonl", shard, model_cache=None)
        score_run(run.spec(), tmp_path / "questions.jsonl", [shard], scores, DEFAULT_SCORING)
        assert len(server.state.raw) == len(shown) == 1153

        # inspect_evals, on the same rows, against a server with the same script
        root = mirror / "raw.githubusercontent.com" / "ScienceOne-AI" / "ScienceEval"
        (lab_bench,) = root.glob("*/benchmarks/LAB-Bench")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "HELIXBENCH_BASE_URL": theirs.base_url,
            "HELIXBENCH_API_KEY": "not-needed",
            "HF_HOME": str(tmp_path / "hf"),
            "HF_DATASETS_OFFLINE": "1",
            "HF_HUB_OFFLINE": "1",
        }
        out = tmp_path / "inspect.json"
        argv = [
            environment_python(inspect_env),
            str(DRIVER),
            str(lab_bench),
            ",".join(PARTS.values()),
        ]
        argv += ["openai-api/helixbench/m", str(out), "--max-connections", "32"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=800)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
        peer = json.loads(out.read_text())
        # Every request Inspect sent is one helixbench sent, byte for byte: the question,
        # the options in their order, the message, and no parameter beside them.
        assert sorted(theirs.state.raw) == sorted(server.state.raw)
        assert {tuple(json.loads(r)) for r in server.state.raw} == {("model", "messages")}

    ours = [json.loads(line) for line in scores.read_text().splitlines()]
    by_id = {q.id: q for q in every}
    by_source = {q.source_id: q for q in every if q.benchmark in PARTS}
    for benchmark, part in PARTS.items():
        result = peer[part]
        assert result["status"] == "success", result["error"]
        assert len(result["samples"]) == len([q for q in every if q.benchmark == benchmark])
        for source, sample in result["samples"].items():  # every row, in Inspect's order
            mine = shown[by_source[source].id]
            assert sample["choices"] == list(mine.options), source
            assert sample["target"] == LETTERS[mine.presented.index(0)], source
        mine = [r for r in ours if r["benchmark"] == benchmark]
        verdicts = {}
        for row in mine:
            source = by_id[row["question_id"]].source_id
            verdicts.setdefault(source, {})[row["metric"]] = row["score"]
        expected = {
            source: "N" if got["coverage"] == 0 else ("C" if got["accuracy"] == 1 else "I")
            for source, got in verdicts.items()
        }
        assert result["verdicts"] == expected, benchmark
        assert set(result["verdicts"].values()) == {"C", "I", "N"}
        for metric in ("accuracy", "precision", "coverage"):
            values = [r["score"] for r in mine if r["metric"] == metric]
            assert result["metrics"][metric] == pytest.approx(sum(values) / len(values), abs=1e-12)
    assert get("labbench-dbqa").pooled
