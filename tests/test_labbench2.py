"""LABBench2: its reports imported as LABBench2's summarize_report.py counts them (the
script itself run from the mirror, on the pinned reports and on a user's own not in
it), its askable questions asked by a model of ours, and its answers scored three
ways (published, deterministic, a judge with its own prompts)."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import os
import re
import runpy
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from helixbench import paths
from helixbench.benchmarks.labbench2 import COMMIT, PROMPTS, REPO, SUMMARIZE, VALIDATORS
from helixbench.datasets.fetch import mirror_path
from helixbench.datasets.jsonfiles import decompressed, read_jsonl
from helixbench.datasets.questions import Question, read_questions
from helixbench.datasets.upstream import lookup
from helixbench.loopback.openai import OpenAIServer, OpenAIServerState
from helixbench.scoring.labbench2 import (
    TOLERANCES,
    judge_prompts,
    parse_verdict,
    prompt_name,
    value_verdict,
)
from helixbench.sources.labbench2 import pinned_reports

from .conftest import run_snakemake

SYSTEMS = ("gpt-5-2", "claude-opus-4-5", "gemini-3-pro-preview")
FLAGS = {"bare": "", "tools": "tools,high"}
JUDGED = ("dbqa2/inject", "tableqa2-img/file")  # the tasks the judge test asks it of
TOTAL = re.compile(r"\| \*\*TOTAL\*\* +\|(?: *\d+ *\|){5} *([\d.]+) *\| *([\d.]+) *\|")


def pinned(mirror: Path, path: str) -> Path:
    return mirror_path(lookup(REPO, path, COMMIT).url, mirror)


def summarize_report(mirror: Path, files: list[Path]) -> tuple[str, str]:
    """LABBench2's own figures (accuracy, attempted accuracy: its printed decimals),
    by its pinned summarize_report.py (loaded once, its function called as its command
    line calls it, its table read from what it prints)."""
    script = runpy.run_path(str(mirror_path(SUMMARIZE.url, mirror)))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        script["summarize_report"]([str(f) for f in files])
    found = TOTAL.search(printed.getvalue())
    assert found, printed.getvalue()
    return found.group(1), found.group(2)


def test_tolerances_are_the_validators_defaults(mirror):
    """Each deterministic tolerance is the default of LABBench2's validator of the type."""
    for kind, (tolerance, _) in TOLERANCES.items():
        source = pinned(mirror, f"{VALIDATORS}validate_{kind}.py").read_text()
        reward = next(
            node
            for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_reward")
        )
        names = [a.arg for a in reward.args.args]
        defaults = dict(zip(names[-len(reward.args.defaults) :], reward.args.defaults, strict=True))
        assert ast.literal_eval(defaults["tolerance"]) == tolerance, kind


def test_deterministic_verdicts_only_where_one_value_is_right():
    def ask(task, gold, answer, subtype=None, text="q"):
        question = Question.at("labbench2", task, 0, text, gold, subtype=subtype)
        return value_verdict(question, answer)

    assert ask("seqqa2/inject", "27.94", "so <answer>27.95%</answer>", "gc_content")[0] == 1.0
    assert ask("seqqa2/inject", "27.94", "<answer>27.96</answer>", "gc_content")[0] == 0.0
    assert ask("seqqa2/inject", "27.94", "27.94", "gc_content")[0] == 0.0  # (no tag)
    assert ask("seqqa2/inject", "100", "<answer>114 Da</answer>", "molecular_weight")[0] == 0.0
    assert ask("seqqa2/inject", "5203", "<answer>5250</answer>", "molecular_weight")[0] == 1.0
    assert (
        ask("seqqa2/inject", "331,909", "<answer>910, 330</answer>", "restriction_digest")[0] == 1
    )
    assert ask("seqqa2/inject", "None", "<answer>none</answer>", "mutation_restriction")[0] == 1
    assert ask("seqqa2/inject", "F", "<answer>Phe</answer>", "orf_amino_acid")[0] == 1.0
    assert (
        ask("seqqa2/inject", "2", "<answer>2.04</answer>", "pairwise_distances", "Hamming")[0] == 1
    )
    assert ask("seqqa2/inject", "ACGT", "<answer>ACGA</answer>", "primer_design") is None
    assert ask("litqa3/inject", "24", "20 mice, then 24 in all.") is None  # (two numbers)
    assert ask("litqa3/inject", "24", "It used 24 mice.")[0] == 1.0
    assert ask("litqa3/inject", "Ovarian cancer", "ovarian cancer") is None  # (free text)
    sequence = "ACGT" * 10
    assert ask(
        "dbqa2/inject", json.dumps({"s": sequence}), f"It is {sequence[:20]} {sequence[20:]}"
    )[0]
    assert ask("dbqa2/inject", json.dumps({"a": "1", "b": "2"}), "1 and 2") is None
    assert ask("cloning/file", "x", "x") is None


def test_judge_prompts_come_from_the_pinned_file_and_undecided_is_no_verdict(mirror):
    prompts = judge_prompts(mirror_path(PROMPTS.url, mirror))
    assert {prompt_name(t) for t in ("dbqa2", "figqa2-img", "litqa3", "seqqa2")} <= set(prompts)
    assert "{correct_answer}" in prompts[prompt_name("tableqa2")]
    calls = [{"arguments": json.dumps({"rationale": "r", "result": "Correct"})}]
    assert parse_verdict("", calls) == ("correct", "r")
    assert parse_verdict('{"rationale": "x", "result": "unsure"}', None)[0] == "unsure"
    assert parse_verdict("rationale: wrong value. result: incorrect", None)[0] == "incorrect"
    assert parse_verdict("I cannot tell.", None)[0] == "unparseable"


def _own_report(mirror: Path, out: Path) -> list[Path]:
    """A LABBench2 run of a system not in the mirror: a run and its retry, as the harness
    writes them (a failure, a retry that completes it, a later verdict that wins)."""
    source = mirror_path(pinned_reports("claude-opus-4-5", "")["dbqa2/inject"][0].url, mirror)
    base = json.loads(source.read_text())
    cases = base["cases"]
    first = {
        **{k: v for k, v in base.items() if k not in ("cases", "failures")},
        "model": "native:acme:lab-model-1",
        "cases": [
            {**c, "scores": {"HybridEvaluator": {"value": float(i % 3 == 0), "reason": "r"}}}
            for i, c in enumerate(cases[:60])
        ],
        "failures": [
            {k: c[k] for k in ("id", "name", "question", "tag", "type")} | {"error_message": "x"}
            for c in cases[60:]
        ],
    }
    retry = {
        **first,
        "cases": [
            {**c, "scores": {"HybridEvaluator": {"value": 1.0, "reason": "retried"}}}
            for c in [*cases[55:60], *cases[60:70]]
        ],
        "failures": [first["failures"][-1]],
    }
    files = [out / "acme.json", out / "acme_retry.json"]
    for path, data in zip(files, (first, retry), strict=True):
        path.write_text(json.dumps(data))
    return files


def _imported_config(own: list[Path]) -> dict:
    models = {s: {"backend": "imported", "source": f"labbench2/{s}"} for s in SYSTEMS}
    models["acme"] = {
        "backend": "imported",
        "source": {"format": "labbench2", "model": "acme lab model", "reports": {
            "dbqa2/inject": [str(p) for p in own]}},
    }  # fmt: skip
    return {
        "benchmarks": ["labbench2"],
        "shards": 1,
        "tools": {"mode": "offline"},
        "models": models,
        "methods": {name: {"kind": "imported", "flags": f} for name, f in FLAGS.items()},
        "prices": {"gpt-5-2": {"prompt": 1.75, "completion": 14.0}},
        "runs": [
            {"models": list(SYSTEMS), "methods": list(FLAGS)},
            {"model": "acme", "method": "bare"},
        ],
    }


def _snakemake(workdir: Path, config: dict, mirror: Path):
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    done = run_snakemake(workdir, config, "--cores", "2", env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    return pd.read_csv(workdir / "results" / "report" / "labbench2.csv")


@pytest.mark.slow
@pytest.mark.workflow
def test_frontier_equals_summarize_report_and_a_judge_gives_the_published_figures_back(
    mirror, tmp_path
):
    own = _own_report(mirror, tmp_path)
    frontier = _snakemake(tmp_path, _imported_config(own), mirror)
    # Every pinned report, and the user's own, as LABBench2's own script counts it.
    groups = [
        (system, method, task, [mirror_path(f.url, mirror) for f in files])
        for system in SYSTEMS
        for method, flags in FLAGS.items()
        for task, files in pinned_reports(system, flags).items()
    ]
    groups.append(("acme", "bare", "dbqa2/inject", own))
    assert len(groups) == 115
    for system, method, task, files in groups:
        row = frontier[(frontier.model == system) & (frontier.method == method)]
        row = row[row.task == task].iloc[0]
        ours = (f"{row.accuracy * 100:.1f}", f"{row.attempted * 100:.1f}")
        assert ours == summarize_report(mirror, files), (system, method, task)
    acme = frontier[frontier.model == "acme"].iloc[0]
    assert acme.system == "acme:lab-model-1"
    assert acme.failed == 16  # (26 failed, 10 of them completed by the retry)
    gpt = frontier[(frontier.model == "gpt-5-2") & (frontier.task == "dbqa2/inject")]
    assert (gpt.cost_per_correct > 0).all() and (gpt.tokens_per_correct > 0).all()
    # Every disagreement of the deterministic verdicts with the published ones is listed.
    results = tmp_path / "results"
    lines = [line for p in results.glob("scores/*/*/*.jsonl.zst") for line in read_jsonl(p)]
    by: dict[tuple, dict] = {}
    for line in lines:
        by.setdefault((line["model"], line["method"], line["question_id"]), {})
        by[(line["model"], line["method"], line["question_id"])][line["metric"]] = line
    differ = [
        key
        for key, m in by.items()
        if {"lb2_published", "lb2_value"} <= set(m) and not m["lb2_published"]["error"]
        and m["lb2_published"]["score"] != m["lb2_value"]["score"]
    ]  # fmt: skip
    listed = pd.read_csv(results / "report" / "labbench2_disagreements.csv")
    listed = listed[listed.scorer == "lb2_value"]
    assert differ and len(listed) == len(differ)
    assert set(listed.question_id) == {key[2] for key in differ}
    assert listed.published_reason.notna().all() and listed.our_reason.notna().all()
    agreement = pd.read_csv(results / "report" / "labbench2_agreement.csv")
    value = agreement[(agreement.scorer == "lb2_value") & (agreement.type != "all")]
    assert value.published_only.sum() + value.ours_only.sum() == len(listed)
    tools = pd.read_csv(results / "report" / "labbench2_tools.csv")
    assert set(tools.model) == set(SYSTEMS) and (tools.task == "all").sum() == 3
    report = (results / "report" / "report.md").read_text()
    assert "## LABBench2: the frontier" in report and "### Every disagreement" in report
    # The first screen: each system against its own bare twin, with interval and p; a
    # leaderboard row says its scorer, what it scored of what it asked, its coverage.
    headline = pd.read_csv(results / "report" / "headline.csv")
    twins = headline[headline.comparison == "vs its bare baseline"]
    assert sorted(twins.run_a) == sorted(f"{s} / tools" for s in SYSTEMS)
    assert twins.ci_low.notna().all() and twins.p_value.notna().all()
    board = pd.read_csv(results / "report" / "leaderboard.csv")
    assert set(board.run) == {f"{s} / {m}" for s in SYSTEMS for m in FLAGS} | {"acme / bare"}
    assert (board.scorer == "published").all() and board.asked.notna().all()
    acme = board[board.run == "acme / bare"].iloc[0]  # (one task of 19: listed apart)
    assert pd.isna(acme["rank"]) and acme.partial and acme.coverage < 0.1
    assert "| scorer" in report and "scored / asked" in report

    # A judge that replies with each case's published verdict gives the published
    # figures back; a model of ours on the askable questions scores, and what the judge
    # cannot decide is counted apart.
    questions = {q.id: q for q in read_questions(tmp_path / paths.QUESTIONS)}
    published = {}
    for flags in FLAGS.values():
        for task in JUDGED:
            for file in pinned_reports("gpt-5-2", flags)[task]:
                for case in json.loads(mirror_path(file.url, mirror).read_text())["cases"]:
                    value = case["scores"]["HybridEvaluator"]["value"]
                    for said in (case["llm_answer"], case["llm_answer"].strip()):
                        digest = hashlib.sha256(said.encode()).hexdigest()[:12]
                        published[(case["question"], digest)] = value == 1.0

    def judge(messages):  # (the answer fenced: known by the digest its fence is named for)
        text = messages[-1]["content"]
        question = text.split("## QUESTION ##\n", 1)[1].split("\n\n## ", 1)[0]
        answer = text.split("## SUBMITTED ANSWER ##\n", 1)[1].rsplit("\n\n## EVALUATION ##", 1)[0]
        fence = re.match(r"<submitted_answer_([0-9a-f]{12})>", answer)
        assert fence, answer[:200]
        verdict = published.get((question, fence.group(1)))
        if verdict is None:  # a model of ours: right where it gives the expected output
            if "garbled" in answer:
                return "I would rather not say."
            verdict = "expected" in answer or None
        result = "unsure" if verdict is None else "correct" if verdict else "incorrect"
        return {"tool_calls": [("final_result", {"rationale": "oracle", "result": result})]}

    def ours(messages):  # a model of ours: LABBench2's format, right on every other one
        asked = messages[-1]["content"]
        found = [q for q in questions.values() if q.benchmark == "labbench2" and q.text in asked]
        gold = found[0].gold if found else ""
        return f"<answer>{gold}</answer> expected" if len(asked) % 2 else "garbled <answer>?"

    with (
        OpenAIServer(OpenAIServerState(chat=judge)) as judged,
        OpenAIServer(OpenAIServerState(chat=ours)) as model,
    ):
        config = _imported_config(own)
        config["models"] = {
            "gpt-5-2": config["models"]["gpt-5-2"],
            "judge": {**judged.chat_model(), "model": "judge"},  # (not the judged model)
            "judge-b": {**judged.chat_model(), "model": "judge-b"},  # (a jury of two)
            "mine": model.chat_model(),
        }
        # (every published answer of those tasks judged: their figures come back whole)
        jury = {"model": ["judge", "judge-b"], "calibration": {"size": 5000}}
        config["scoring"] = {"judge": jury}
        config["methods"]["no-tools"] = {"kind": "no-tools", "max_tokens": 200}
        config["runs"] = [
            {"model": "gpt-5-2", "methods": list(FLAGS), "tasks": list(JUDGED)},
            {"model": "mine", "method": "no-tools", "sample": 3},
        ]  # fmt: skip
        judged_table = _snakemake(tmp_path, config, mirror)
    gpt = judged_table[judged_table.model == "gpt-5-2"]
    assert len(gpt) == 4 and (gpt.judge_accuracy == gpt.accuracy).all()
    assert (gpt.judge_undecided.fillna(0) == 0).all()
    mine = judged_table[judged_table.model == "mine"]
    assert len(mine) == 7 and (mine.asked == 3).all() and mine.correct.sum() > 0
    assert mine.judge_undecided.sum() > 0  # (the garbled ones: no verdict, not wrong)
    calls = [
        json.loads(x)
        for p in (tmp_path / "results" / "judge-calls").glob("mine/*/*.jsonl")
        for x in p.open()
    ]
    assert {c["verdict"] for c in calls} >= {"correct", "unparseable"}
    prompts = judge_prompts(mirror_path(PROMPTS.url, mirror))  # (each as LABBench2 words it)
    for call in calls:
        assert call["events"][0]["data"]["prompt"].startswith(prompts[call["prompt"]][:60])
        assert [j["judge"] for j in call["jury"]] == ["judge", "judge-b"]
    # Two judges that agree on every answer: alpha 1, no disagreement, in the report.
    agreement = pd.read_csv(tmp_path / "results" / "report" / "judge_agreement.csv")
    assert (agreement.alpha == 1.0).all() and (agreement.disagreements == 0).all()
    assert set(agreement.judges) == {"judge, judge-b"} and agreement.questions.sum() > 300
    assert (
        "### The jury's judges against each other" in (results / "report" / "report.md").read_text()
    )
    assert "The jury" in (results / "report" / "index.html").read_text()
    _rescore_replays_offline_and_a_failed_one_keeps_every_file(tmp_path, config, mirror)
    _a_scripted_judge_is_measured_on_its_calibration_sample(tmp_path, mirror, own)


def _kept(workdir: Path) -> dict[Path, bytes]:
    results = workdir / "results"
    found = [*results.glob("scores/*/*/*.jsonl.zst"), *results.glob("judge-calls/*/*/*.jsonl")]
    return {p: p.read_bytes() for p in found}


def _verdicts(files: dict[Path, bytes]) -> dict:
    return {
        (path.name, line.get("question_id"), line.get("metric")): (
            line.get("score"),
            line.get("verdict"),
        )
        for path, data in files.items()
        for line in map(json.loads, decompressed(data).splitlines())
    }


def _rescore_replays_offline_and_a_failed_one_keeps_every_file(workdir, config, mirror):
    """With the judge's and the model's servers stopped, a rescore replays every judge
    call from the cache to the same verdicts; a rescore that needs a call the cache lacks
    (the answers unfenced: every prompt new) fails, keeps every earlier score and judge
    call file byte for byte, and `status` and `snakemake -n` say what is missing."""
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    before = _kept(workdir)
    rescore = {**env, "HELIXBENCH_RESCORE": "1"}  # (every run, unchanged as it is)
    started = time.time()
    done = run_snakemake(workdir, config, "--cores", "2", "--forcerun", "score_batch", env=rescore)
    assert done.returncode == 0, done.stderr[-3000:]
    replayed = _kept(workdir)
    assert _verdicts(replayed) == _verdicts(before) and len(replayed) == len(before)
    batches = [  # (this config's, just written)
        b for b in (workdir / "results" / "score-batches").glob("*.json")
        if b.stat().st_mtime >= started
    ]  # fmt: skip
    states = [s["state"] for b in batches for s in json.loads(b.read_text())["runs"].values()]
    assert len(states) == 3 and set(states) == {"scored"}
    # A batch run again with nothing changed leaves every run as it is (its fingerprint).
    summaries = {
        p: p.stat().st_mtime_ns for p in (workdir / "results" / "summaries").rglob("summary.json")
    }
    again = run_snakemake(workdir, config, "--cores", "2", "--forcerun", "score_batch", env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    states = [s["state"] for b in batches for s in json.loads(b.read_text())["runs"].values()]
    assert set(states) == {"current"} and _kept(workdir) == replayed
    assert {p: p.stat().st_mtime_ns for p in summaries} == summaries
    unfenced = json.loads(json.dumps(config))
    unfenced["scoring"]["judge"]["fence"] = False
    failed = run_snakemake(workdir, unfenced, "--cores", "2", env=env)
    assert failed.returncode != 0 and "cannot be reached" in failed.stderr + _logs(workdir)
    assert _kept(workdir) == replayed  # (not one file removed or changed)
    notes = list((workdir / "results" / "scores").glob("*/*/*.failed.json"))
    assert notes, "a failed score job leaves its note"
    status = subprocess.run(
        [sys.executable, "-m", "helixbench", "status", "--config", "config.yaml"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert "failed" in status.stdout and "cannot be reached" in status.stdout, status.stdout
    assert "kept" in status.stdout
    dry = run_snakemake(workdir, unfenced, "-n", env=env)
    assert "score_batch" in dry.stdout + dry.stderr


def _logs(workdir: Path) -> str:
    return "".join(p.read_text() for p in (workdir / "logs" / "score").rglob("*.log"))


def _a_scripted_judge_is_measured_on_its_calibration_sample(workdir, mirror, own):
    """A judge that flips every 10th right published verdict and every 20th wrong one,
    asked of its calibration sample (400 LABBench2 questions stratified by tag and
    type, every published system's answer to them): its sensitivity and specificity
    measured within two points of 0.90 and 0.95 on five systems, and the sixth's
    judged accuracy, corrected for them, covers that system's published accuracy."""
    from helixbench.config import build_plan
    from helixbench.report.tables.judges import POOLED, calibration_table, corrected_table
    from helixbench.scoring.calibration import calibration_sample
    from helixbench.scoring.run_scores import score_run
    from helixbench.transcripts import read_records

    config = _imported_config(own)
    config["models"].pop("acme")
    config["runs"] = config["runs"][:1]
    with contextlib.chdir(workdir):
        plan = build_plan(config, mirror)
        questions = read_questions(Path(paths.QUESTIONS))
        by_id = {q.id: q for q in questions}
        truth = {}
        for run in plan.runs:
            for path in run.shard_paths():
                for record in read_records(Path(path)):
                    said, published = record.get("answer") or "", record.get("published")
                    if published and said.strip():
                        digest = hashlib.sha256(said.encode()).hexdigest()[:12]
                        text = by_id[record["question_id"]].text
                        truth.setdefault(digest, {})[text] = published["value"] == 1.0
        seen = {True: 0, False: 0}

        def flipper(messages):
            text = messages[-1]["content"]
            asked = text.split("## QUESTION ##\n", 1)[1]
            fence = re.search(r"<submitted_answer_([0-9a-f]{12})>", text)
            (right,) = {v for q, v in truth[fence.group(1)].items() if asked.startswith(q)}
            seen[right] += 1
            flip = seen[right] % (10 if right else 20) == 0
            result = "correct" if right != flip else "incorrect"
            return {"tool_calls": [("final_result", {"rationale": "scripted", "result": result})]}

        scoring = {**plan.scoring, "judge": {"model": "flipper", "calibration": {"size": 400}}}
        sample = calibration_sample(questions, scoring)
        assert sum(by_id[i].benchmark == "labbench2" for i in sample) == 400
        rows = []
        with OpenAIServer(OpenAIServerState(chat=flipper)) as server:
            for i, run in enumerate(plan.runs):
                out = workdir / f"calibration-{i}.jsonl"
                shards = [Path(p) for p in run.shard_paths()]
                score_run(run.spec(), Path(paths.QUESTIONS), shards, out, scoring,
                          {"flipper": server.chat_model()})  # fmt: skip
                rows += [{**json.loads(x), "run": run.label} for x in out.read_text().splitlines()]
    scores = pd.DataFrame(rows)
    judged = scores[scores.metric == "lb2_judge"]
    assert set(judged.question_id) <= sample and len(judged) > 1000
    held_out = plan.runs[-1].label
    calibration = calibration_table(scores[scores.run != held_out])
    pooled = calibration[(calibration.tag == "all") & (calibration.system == POOLED)].iloc[0]
    assert abs(pooled.sensitivity - 0.90) <= 0.02, pooled.to_dict()
    assert abs(pooled.specificity - 0.95) <= 0.02, pooled.to_dict()
    assert len(set(calibration.tag)) > 5  # (per tag too)

    class HeldOut:  # (the sixth system as a user's run: its scores corrected)
        runs = [
            type("Run", (), {"label": r.label, "imported": r.label != held_out})()
            for r in plan.runs
        ]

    (row,) = corrected_table(HeldOut(), scores, calibration).to_dict("records")
    mine = scores[(scores.run == held_out) & scores.question_id.isin(judged.question_id)]
    mine = mine[mine.question_id.isin(judged[judged.run == held_out].question_id)]
    published = mine[mine.metric == "lb2_published"].score.mean()
    assert row["corrected_low"] <= published <= row["corrected_high"], (row, published)
    assert abs(row["raw"] - published) > abs(row["corrected"] - published) - 0.01
