"""LAB-Bench as inspect_evals asks it, number for number.

helixbench asks LAB-Bench's DbQA and SeqQA (1,120 public questions) with its
``inspect`` variant (inspect_evals 0.26.0's template, read from the installed
package; its seeded order), a scripted model answering in every way a model does
(the right letter, a wrong one, the refusal, a letter wrapped in ``$`` or ``**``,
lower case, two letters, no ``ANSWER:`` line). Then inspect_evals itself, in its own
environment, builds its own ``lab_bench_dbqa`` and ``lab_bench_seqqa`` tasks on the
same rows (read locally in place of its hub download; its seeds, template, solver and
scorer its own): every one of the 1,120 samples holds its choices in helixbench's
order; and runs them against helixbench's model gateway (the first 200 of each
after its shuffle; ``perf/lab_bench_vs_inspect.py`` runs all): every one of its model
calls is a response-cache hit (its prompt and parameters ours, byte for byte), and
its verdicts, accuracy, precision and coverage equal helixbench's on the same
questions.
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
from helixbench.gateway import sandbox  # noqa: F401 (the gateways' module, imported first)
from helixbench.gateway.gateways import Gateways
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.choices import LETTERS, present, write_templates
from helixbench.models import create_model
from helixbench.paths import PEER_TEMPLATES
from helixbench.run.shard import run_shard, score_run
from helixbench.scoring import DEFAULT_SCORING
from helixbench.tools.executor import ToolExecutor, ToolSettings

from .conftest import REPO_ROOT

DRIVER = REPO_ROOT / "tests" / "support" / "inspect_lab_bench.py"
PARTS = {"labbench-dbqa": "DbQA", "labbench-seqqa": "SeqQA"}
LIMIT = 200  # questions of each part Inspect asks (its first after its shuffle)

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
def test_inspect_evals_lab_bench_asks_and_scores_number_for_number(
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
    with OpenAIServer() as server:
        server.state.replies = _reply_for(shown)
        spec = {**server.chat_model(), "concurrency": 16}
        config = {
            "benchmarks": list(PARTS),
            "models": {"m": spec},
            "methods": {"asked": {"kind": "no-tools", "choices": "inspect"}},
            "runs": [{"model": "m", "method": "asked"}],
        }
        (run,) = build_plan(config, mirror).runs
        shard, scores = tmp_path / "shard.jsonl", tmp_path / "scores.jsonl"
        cache = tmp_path / "models.sqlite"
        run_shard(run.spec(), 0, tmp_path / "questions.jsonl", shard, model_cache=cache)
        score_run(run.spec(), tmp_path / "questions.jsonl", [shard], scores, DEFAULT_SCORING)
        asked = len(server.state.received)
        assert asked == len(shown) == 1120

        # inspect_evals, through helixbench's model gateway, on the same model and cache
        model = create_model(spec, cache=cache)
        tools = ToolExecutor(ToolSettings.from_config({"mode": "offline", "cache": "t.sqlite"}))
        gateways = Gateways(model, tools, "m")
        try:
            session = gateways.sessions.open(
                "inspect", "lab_bench", {"max_model_calls": 5000, "max_tool_calls": 0}
            )
            root = mirror / "raw.githubusercontent.com" / "ScienceOne-AI" / "ScienceEval"
            (lab_bench,) = root.glob("*/benchmarks/LAB-Bench")
            env = {
                "PATH": os.environ["PATH"],
                "HOME": str(tmp_path),
                "HELIXBENCH_BASE_URL": gateways.model.base_url,
                "HELIXBENCH_API_KEY": session.token,
                "HF_HOME": str(tmp_path / "hf"),
                "HF_DATASETS_OFFLINE": "1",
                "HF_HUB_OFFLINE": "1",
            }
            out = tmp_path / "inspect.json"
            argv = [environment_python(inspect_env), str(DRIVER), str(lab_bench), "DbQA,SeqQA"]
            argv += ["openai-api/helixbench/m", str(out), "--limit", str(LIMIT)]
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
            peer = json.loads(out.read_text())
        finally:
            gateways.close()
        calls = [e.data for e in session.events if e.type == "model"]
    assert len(server.state.received) == asked  # Inspect's calls reached no model
    assert len(calls) == 2 * LIMIT and {c["cache"] for c in calls} == {"hit"}

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
        asked_by_them = set(result["verdicts"])
        assert len(asked_by_them) == LIMIT
        mine = [
            r for r in ours
            if r["benchmark"] == benchmark and by_id[r["question_id"]].source_id in asked_by_them
        ]  # fmt: skip
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
