"""Hu et al.'s gene sets and published runs (issue 45), and the percentile's GO
background their files define."""

from __future__ import annotations

import csv
import os

import pandas as pd
import pytest

from helixbench.benchmarks import get as get_benchmark
from helixbench.benchmarks.genesets import HU_TASKS
from helixbench.config import build_plan
from helixbench.datasets.questions import write_questions
from helixbench.scoring import Scorers
from helixbench.scoring.background import go_files, go_process_names, write_background
from helixbench.scoring.stated import named
from helixbench.sources.published import SOURCES, coverage, load_items, resolve_source, task_file

from .conftest import run_snakemake

HU_MODELS = ("hu/gpt-4", "hu/gpt-3.5", "hu/gemini-pro", "hu/llama2-70b", "hu/mixtral")


@pytest.fixture(scope="module")
def genesets(mirror):
    return get_benchmark("genesets").load(lambda f: mirror / f.relpath)


def test_go_names_are_the_biological_processes_that_carry_genes():
    names = "GO:1\tkinase signalling\nGO:2\tDNA repair\nGO:3\tcell part\nGO:4\tunnamed\n"
    namespaces = (
        "\t0\nGO:1\tbiological_process\nGO:2\tbiological_process\nGO:3\tcellular_component\n"
    )
    genes = (
        "GO:1\tGO:2\tdefault\n"  # a term under a term: GO:1 carries no gene by it
        "GO:2\tMLH1\tgene\nGO:2\tMSH2\tgene\n"
        "GO:3\tACTB\tgene\n"  # a component, not a process
        "GO:4\tTP53\tgene\n"  # no namespace, no name: left out
    )
    assert go_process_names(names, namespaces, genes) == ["DNA repair"]


def test_the_default_background_is_gos_named_processes_and_the_datasets_names(
    mirror, genesets, tmp_path
):
    """10,903 GO terms carry genes in Hu et al.'s collapsed_go.symbol; with the three
    datasets' 1,105 names (the toys and Hu et al.'s own sets not among them) 11,143.
    A run ranks against it unless the config names another background."""
    write_questions(genesets, tmp_path / "questions.jsonl")
    go = [mirror / f.relpath for f in go_files()]
    assert write_background(tmp_path / "questions.jsonl", go, tmp_path / "bg.txt") == 11_143
    assert write_background(tmp_path / "questions.jsonl", None, tmp_path / "own.txt") == 1_105
    background = (tmp_path / "bg.txt").read_text().splitlines()
    own = set((tmp_path / "own.txt").read_text().splitlines())
    go_names = set(background[:10_903])
    assert set(background[10_903:]) == own - go_names and own <= set(background)
    assert {q.gold for q in genesets if q.task in HU_TASKS} - own  # not the datasets'
    run = {"model": "g", "method": "gsea-top1", "benchmarks": ["genesets"], "tasks": ["MSigDB"]}
    config = {"models": {"g": {"backend": "enrichment"}}, "runs": [run]}
    plan = build_plan(config, mirror)
    assert plan.ranks_against_go(plan.runs[0]) and set(go_files()) <= set(plan.upstream_files())
    for setting in ({"background": "datasets"}, {"candidates": "names.txt"}):
        other = build_plan({**config, "scoring": {"percentile": setting}}, mirror)
        assert not other.ranks_against_go(other.runs[0])
        assert not set(go_files()) & set(other.upstream_files())


def test_hu_et_als_sets_at_three_contamination_levels(genesets):
    """Their 1,000 GO sets, and the 100 of their model comparison at 0%, 50% and 100%
    of the genes replaced (the same sets, the same gold); run only when named."""
    by_task = {}
    for q in genesets:
        by_task.setdefault(q.task, []).append(q)
    assert [len(by_task[t]) for t in HU_TASKS] == [1000, 100, 100, 100]
    real, half, none_left = (by_task[t] for t in list(HU_TASKS)[1:])
    assert (
        [q.source_id for q in real]
        == [q.source_id for q in half]
        == [q.source_id for q in none_left]
    )
    assert all(a.gold == b.gold == c.gold for a, b, c in zip(real, half, none_left, strict=True))
    shared = [
        len(set(a.genes) & set(b.genes)) / len(a.genes) for a, b in zip(real, half, strict=True)
    ]
    assert 0.4 < sum(shared) / len(shared) < 0.6
    assert all(not set(a.genes) & set(c.genes) for a, c in zip(real, none_left, strict=True))
    assert {q.source_id for q in real} <= {q.source_id for q in by_task["Hu GO 1000"]}


def test_their_runs_import_with_each_models_confidence(mirror, genesets):
    """Every set of every run is matched (the 1,000 file repeats 5 gene lists: the
    first answer is kept and they are counted); GPT-4 calls 87 of the 100 random sets
    a "System of unrelated proteins", GPT-3.5 none (Hu et al., Fig. 3)."""
    texts = {}
    for q in genesets:
        texts.setdefault(q.task, []).append(q.text)
    unrelated = {}
    for name in ("hu/gpt-4-1000", *HU_MODELS):
        source = resolve_source(name, "models.x.source")
        for task in source["files"]["genesets"]:
            file = task_file(source, "genesets", task)
            items, duplicates = load_items(mirror / file.relpath, "hu", task, file.sha256)
            seen = coverage(items, texts[task], duplicates)
            assert (seen["missing"], seen["unmatched"]) == (0, 0), (name, task, seen)
            assert duplicates == (5 if task == "Hu GO 1000" else 0)
            assert all(0 <= i.confidence <= 1 for i in items.values())
            if task == "Hu GO 100 (100% contaminated)":
                unrelated[name] = sum(1 - named(task, i.answer, "x") for i in items.values())
    assert unrelated == {
        "hu/gpt-4": 87,
        "hu/gpt-3.5": 0,
        "hu/gemini-pro": 59,
        "hu/llama2-70b": 0,
        "hu/mixtral": 0,
    }
    assert set(HU_MODELS) < set(SOURCES)


def test_named_and_stated_confidence_are_scored(mirror):
    scorers = Scorers({})
    assert named("Hu GO 100", "Process: System of unrelated proteins", "x") == 0.0
    assert named("Hu GO 100", "DNA repair", "x") == 1.0 and named("t", None, "x") == 0.0
    confidence = scorers.get("confidence")
    assert confidence.score_record(None, {"confidence": 0.85}) == 0.85
    assert confidence.score_record(None, {"answer": "x"}) is None


@pytest.mark.workflow
def test_robustness_of_two_published_models_through_the_workflow(mirror, tmp_path):
    """GPT-4 and Gemini Pro on the contaminated sets: the robustness table and figure,
    each figure from the records, and the files in the crate."""
    config = {
        "benchmarks": ["genesets"],
        "shards": 1,
        "models": {
            "gpt-4": {"backend": "imported", "source": "hu/gpt-4"},
            "gemini-pro": {"backend": "imported", "source": "hu/gemini-pro"},
        },
        "runs": [
            {
                "models": ["gpt-4", "gemini-pro"],
                "method": "imported",
                "tasks": ["Hu GO 100 (50% contaminated)", "Hu GO 100 (100% contaminated)"],
            }
        ],
    }
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    done = run_snakemake(tmp_path, config, "--cores", "2", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = tmp_path / "results" / "report"
    rows = {
        (r["run"], r["contamination"]): r for r in csv.DictReader(open(report / "robustness.csv"))
    }
    gpt4 = rows["gpt-4 / imported", "100"]
    assert (gpt4["sets"], float(gpt4["named"])) == ("100", 0.13)
    assert float(rows["gemini-pro / imported", "100"]["named"]) == 0.41
    assert float(gpt4["confidence"]) < float(rows["gpt-4 / imported", "50"]["confidence"])
    assert not (tmp_path / "resources/benchmarks/percentile-background.txt").exists()
    crate = (report / "ro-crate-metadata.json").read_text()
    assert '"robustness.csv"' in crate and '"robustness.png"' in crate
    text = (report / "report.md").read_text()
    assert (
        "robustness to contamination" in text and (report / "robustness.svg").stat().st_size > 5000
    )
    assert "<path" in (report / "robustness.svg").read_text()


def test_their_ranks_beside_ours(mirror, genesets, tmp_path, monkeypatch):
    """Hu et al.'s own percentile of each set's true name (their simrank file) beside
    ours on the same sets, matched by GO id, each with its encoder."""
    from helixbench.report.tables.robustness import rank_table, their_percentiles

    (tmp_path / "resources").mkdir()  # the report reads the working directory's copies
    (tmp_path / "resources" / "upstream").symlink_to(mirror, target_is_directory=True)
    monkeypatch.chdir(tmp_path)

    config = {
        "benchmarks": ["genesets"],
        "models": {"gpt-4": {"backend": "imported", "source": "hu/gpt-4"}},
        "runs": [{"model": "gpt-4", "method": "imported"}],
    }
    plan = build_plan(config, mirror)
    (file,) = plan.references["gpt-4"].values()
    assert file in plan.upstream_files()
    theirs = their_percentiles(mirror / file.relpath)
    assert len(theirs) == 100 and theirs["GO:0014744"] == pytest.approx(0.953361801892322)
    questions = {q.id: q for q in genesets}
    ours = [q for q in genesets if q.task == "Hu GO 100"][:10]  # scored: 10 of the 100
    scores = pd.DataFrame(
        {
            "run": "gpt-4 / imported",
            "task": "Hu GO 100",
            "metric": "percentile",
            "question_id": [q.id for q in ours],
            "score": [0.95] * 5 + [0.5] * 5,
            "scored_by": "an encoder, 11,143 background names",
        }
    )
    (row,) = rank_table(plan, scores, questions).to_dict("records")
    expected = [theirs[q.source_id] for q in ours]
    assert row["sets"] == 10 and row["theirs_mean"] == pytest.approx(sum(expected) / 10)
    assert row["theirs_in_90th"] == sum(v >= 0.9 for v in expected)
    assert (row["ours_mean"], row["ours_in_90th"]) == (pytest.approx(0.725), 5)
    assert "SapBERT" in row["theirs_scored_by"] and row["ours_scored_by"].startswith("an encoder")
