"""RAGAs for retrieval runs (issue 45): BRAD's three configurations of the BRAD
example, scored by the ``ragas`` library in its own environment with a scripted judge
on 127.0.0.1 reached through the model gateway, and the same numbers from
``ragas.evaluate`` asked directly."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helixbench import paths
from helixbench.datasets.jsonfiles import read_jsonl
from helixbench.gateway import Sessions
from helixbench.gateway.model_api import ModelGateway
from helixbench.loopback.openai import OpenAIServer, OpenAIServerState
from helixbench.loopback.ragas_judge import judge, ragas_judge
from helixbench.scoring.ragas_runner import METRICS
from helixbench.scoring.text import EmbeddingScorer

from .conftest import REPO_ROOT, planned_run
from .test_brad import _corpus
from .test_workflow import snakemake

GENES = ["PSMB10", "SLC38A6", "ERBB2", "KRAS", "HRAS", "EGFR", "TP53", "MDM2", "CDKN1A"]
# ragas.evaluate over every sample at once, its judge the scripted server itself.
DIRECT = """
import json, sys
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from ragas import EvaluationDataset, evaluate
from ragas.embeddings import LangchainEmbeddingsWrapper
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import (answer_correctness, answer_relevancy, context_precision,
                           context_recall, faithfulness)
task = json.load(open(sys.argv[1]))
out = {}
for run, samples in task["runs"].items():
    llm = ChatOpenAI(base_url=task["judge"], model="test-model", api_key="none",
                     temperature=0, max_tokens=1024)
    encoder = OpenAIEmbeddings(base_url=task["encoder"], model="e", api_key=task["key"],
                               check_embedding_ctx_length=False)
    chosen = [faithfulness, answer_relevancy, context_precision, context_recall,
              answer_correctness]
    if not any(s["retrieved_contexts"] for s in samples):  # the answer's metrics alone
        chosen = [answer_relevancy, answer_correctness]
    result = evaluate(EvaluationDataset.from_list(samples), metrics=chosen,
                      llm=LangchainLLMWrapper(llm),
                      embeddings=LangchainEmbeddingsWrapper(encoder), show_progress=False)
    out[run] = json.loads(result.to_pandas().to_json(orient="records"))
print(json.dumps(out))
"""


def test_the_scripted_judge_answers_each_ragas_prompt_in_its_json():
    said = 'input: {"question": "Q?", "answer": "PSMB10 is a gene. It is on chr16."}\nOutput: '
    assert judge("Break down each sentence ... " + said)["statements"] == [
        "PSMB10 is a gene.",
        "It is on chr16.",
    ]
    given = {"context": "PSMB10 gene", "statements": ["PSMB10 gene", "TP53"]}
    nli = f"judge the faithfulness\ninput: {json.dumps(given)}"
    assert [s["verdict"] for s in judge(nli)["statements"]] == [1, 0]
    reply = ragas_judge(
        [
            {
                "role": "user",
                "content": "Generate a question for the given answer\ninput: "
                '{"response": "I don\'t know."}',
            }
        ]
    )
    assert json.loads(reply)["noncommittal"] == 1
    with pytest.raises(ValueError):
        judge("something else\ninput: {}")


@pytest.mark.slow
@pytest.mark.workflow
def test_brads_three_configurations_scored_by_ragas_as_ragas_evaluate_scores_them(
    mirror, tmp_path, ragas_env
):
    example = yaml.safe_load((REPO_ROOT / "config/examples/brad.yaml").read_text())
    runs = example["runs"][0]
    three = [m for m in runs["methods"] if example["methods"][m]["kind"] in ("brad", "no-tools")]
    assert (
        len(three) == 3
        and "# scoring: {ragas: {judge: judge}}"
        in (REPO_ROOT / "config/examples/brad.yaml").read_text()
    )  # the example's judge, commented out: it needs a key
    corpus = _corpus(tmp_path / "docs", mirror, GENES)
    work = tmp_path / "work"
    # The environment as the original_env rule leaves it (built once for the session).
    (work / "resources" / "envs" / "ragas").mkdir(parents=True)
    shutil.copy(ragas_env, work / "resources" / "envs" / "ragas" / "env.json")
    answers = OpenAIServerState(chat=lambda messages: "PSMB10 is the official symbol.")
    with (
        OpenAIServer(answers) as llm,
        OpenAIServer(OpenAIServerState(chat=ragas_judge)) as scripted,
    ):
        methods = {m: {**example["methods"][m], "corpus": str(corpus), "k": 2} for m in three}
        methods["no-tools-short"] = example["methods"]["no-tools-short"]
        config = {
            "shards": 1,
            "models": {"llm": llm.chat_model(), "judge": scripted.chat_model()},
            "scoring": {"ragas": {"judge": "judge"}},
            "methods": methods,
            "runs": [{"model": "llm", "methods": three, "tasks": ["Gene alias"], "sample": 1}],
        }
        done = snakemake(work, config, mirror=mirror)
        assert done.returncode == 0, done.stderr[-3000:]
        judged = len(scripted.state.received)
        report = work / "results" / "report"
        rows = {r["run"]: r for r in csv.DictReader(open(report / "ragas.csv"))}
        assert {r["configuration"] for r in rows.values()} == {
            "vanilla (no retrieval)",
            "standard RAG",
            "RAG with contextual compression",
        }
        for row in rows.values():
            assert row["questions"] == "1" and "judge judge" in row["scored_by"], row
            assert row["answer_correctness"] and row["answer_relevancy"]
            has_contexts = row["configuration"] != "vanilla (no retrieval)"
            assert bool(row["faithfulness"]) == has_contexts, row
        # Every judge call is an event of the question it judged.
        run = planned_run(config, mirror, "llm", "brad-short")
        calls = [
            json.loads(line) for line in open(work / paths.RUN_JUDGE_CALLS.format(**run.wildcards))
        ]
        assert len(calls) == 1 and all(c["events"] for c in calls)
        assert {e["type"] for c in calls for e in c["events"]} == {"model", "embedding"}
        ours = {}
        for path in (work / "results" / "scores" / "llm").glob("*/*.jsonl.zst"):
            for row in read_jsonl(path):
                if row["metric"].startswith("ragas_"):
                    ours[(row["method"], row["question_id"], row["metric"])] = row["score"]
        # Rescored from nothing: every judge call a cache hit, none reaches the judge.
        (work / run.score_path).unlink()  # (its score batch runs again: this run alone)
        again = snakemake(work, config, "--forcerun", "score_batch", mirror=mirror)
        assert again.returncode == 0 and len(scripted.state.received) == judged
        rescored = read_jsonl(work / run.score_path)
        assert sum(r["method"] == "brad-short" for r in rescored)
        # ragas.evaluate asked directly, the scripted judge its model, on the same samples.
        from helixbench.datasets.questions import read_questions
        from helixbench.scoring.rag_assessment import sample_of
        from helixbench.transcripts import read_records

        questions = {q.id: q for q in read_questions(work / "resources/benchmarks/questions.jsonl")}
        samples = {}
        for method in three:
            (shard,) = (work / "results" / "runs" / "llm" / method).glob("*/*.jsonl.zst")
            samples[method] = [
                sample_of(questions[r["question_id"]], r) for r in read_records(shard)
            ]
        direct = _direct(ragas_env, scripted.base_url, samples, tmp_path / "direct")
    compared = 0
    for method, of_run in samples.items():
        for sample, scores in zip(of_run, direct[method], strict=True):
            for metric in METRICS:
                mine = ours.get((method, sample["id"], f"ragas_{metric}"))
                theirs = scores.get(metric)
                if theirs is None:
                    assert mine is None, (method, metric)
                else:
                    assert mine == pytest.approx(theirs, abs=1e-9), (method, metric)
                    compared += 1
    assert compared == 5 + 5 + 2  # vanilla: the answer's two metrics


def _direct(env_marker: str, judge_url: str, runs: dict, where: Path) -> dict:
    """ragas.evaluate in RAGAs' environment, per run over its samples at once, its
    judge the scripted server and its encoder the embedding scorer's (through a
    gateway of its own)."""
    from helixbench.environments import environment_python

    where.mkdir(parents=True)
    sessions = Sessions()
    session = sessions.open("direct", "", {"max_model_calls": 0, "max_tool_calls": 0})
    fields = ("user_input", "response", "retrieved_contexts", "reference")
    rows = {run: [{k: s[k] for k in fields} for s in samples] for run, samples in runs.items()}
    with ModelGateway(None, sessions, "encoder", encoder=EmbeddingScorer(None)) as gateway:
        task = {"judge": judge_url, "encoder": gateway.base_url, "key": session.token, "runs": rows}
        (where / "task.json").write_text(json.dumps(task))
        (where / "direct.py").write_text(DIRECT)
        done = subprocess.run(
            [environment_python(env_marker), str(where / "direct.py"), str(where / "task.json")],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        run: [{m: (None if r.get(m) is None else float(r[m])) for m in METRICS} for r in found]
        for run, found in out.items()
    }
