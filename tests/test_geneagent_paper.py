"""GeneAgent's paper reproduced from its own generations (config/examples/
geneagent-paper.yaml): the four published output files imported, each block paired
with its set, scored as the paper scores them, beside the paper's figures."""

from __future__ import annotations

import csv
import os
import re
import statistics

import pytest
import yaml

from helixbench.scoring.text import EmbeddingScorer, cached_hub_model
from helixbench.sources.geneagent_outputs import align, read_blocks

from .conftest import REPO_ROOT, run_snakemake

GENEAGENT = "raw.githubusercontent.com/ncbi-nlp/GeneAgent"
NEST_FILES = {
    "GPT-4": "db84e85a1c9e553f40ee5586d056d3afba644d35/Outputs/GPT-4/NeST_Response_GPT4.txt",
    "GeneAgent": "6a1647bf43311acbcd00ebd56e954173b060720d/Outputs/GeneAgent/Cascade/"
    "NeST_Final_Response_GeneAgent.txt",
}
NEST_SETS = "88fd1adb40dce9545bde5b904ef3a628c09d747c/Datasets/NeST/NeST.tsv"


def _independent_nest_rouge(mirror) -> dict:
    """NeST's ROUGE-L scored as GeneAgent's evaluate.ipynb scores it (block i for set
    i: the files line up with the dataset one to one), with rouge-score directly."""
    from rouge_score import rouge_scorer

    def clean(text):
        return text.replace("/", " ").replace(",", " ").replace('"', "").replace("-", " ").strip()

    rows = list(csv.DictReader(open(mirror / GENEAGENT / NEST_SETS), delimiter="\t"))
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    means = {}
    for system, path in NEST_FILES.items():
        names = []
        for segment in (mirror / GENEAGENT / path).read_text().split("//"):
            segment = clean(re.sub(r"\([^)]*\)", "", segment))
            if segment:
                names.append(segment.split("\n")[0].split(": ", 1)[1])
        scores = [
            scorer.score(clean(r["name_new"]), n)["rougeL"].fmeasure
            for r, n in zip(rows, names, strict=True)
        ]
        means[system] = statistics.mean(scores)
    return means


@pytest.mark.slow
def test_the_example_reproduces_the_papers_figures_from_its_generations(mirror, tmp_path):
    """MSigDB's ROUGE-L and ROUGE-2 of both systems to 3 decimals; GPT-4's MSigDB file
    holds 3 blocks that answer no set of the dataset, left out and counted; NeST as an
    independent scoring of the same files has it."""
    config = yaml.safe_load((REPO_ROOT / "config/examples/geneagent-paper.yaml").read_text())
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror)}
    done = run_snakemake(tmp_path, config, "--cores", "2", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = tmp_path / "results" / "report"
    rows = list(csv.DictReader(open(report / "geneagent_paper.csv")))
    figure = {(r["dataset"], r["metric"], r["system"]): r for r in rows}
    for system in ("GPT-4", "GeneAgent"):
        for metric in ("rougeL", "rouge2"):
            row = figure["MSigDB", metric, system]
            assert f"{float(row['ours']):.3f}" == f"{float(row['paper']):.3f}", row
    assert f"{float(figure['MSigDB', 'rougeL', 'GeneAgent']['ours_sem']):.3f}" == "0.047"
    nest = _independent_nest_rouge(mirror)
    for system, mean in nest.items():
        assert abs(float(figure["NeST", "rougeL", system]["ours"]) - mean) < 1e-9
    assert "stand-in" in figure["MSigDB", "embedding", "GPT-4"]["scored_by"]
    imports = {(r["run"], r["task"]): r for r in csv.DictReader(open(report / "imports.csv"))}
    gpt4 = imports["gpt-4 / imported", "MSigDB"]
    assert (gpt4["source_items"], gpt4["matched"], gpt4["unmatched"]) == ("59", "56", "3")
    assert "GeneAgent's paper, from its own generations" in (report / "report.md").read_text()
    # The percentile's background: GO's named processes and the datasets' names, its
    # size beside the paper's; our count of sets in the 90th beside the paper's.
    background = (tmp_path / "resources/benchmarks/percentile-background.txt").read_text()
    assert len(background.splitlines()) == 11_143
    for system, paper in (("GPT-4", 40), ("GeneAgent", 46)):
        row = figure["MSigDB", "in_90th_percentile", system]
        assert float(row["paper"]) == paper and row["background"] == "11143", row
        assert 0 < float(row["ours"]) <= 56 and "11,143 background names" in row["scored_by"]
    assert "| 11,143 names (paper: 12,320) |" in (report / "report.md").read_text()


def test_blocks_are_named_and_paired_by_the_genes_they_name():
    """A block's name follows its first line's first ': '; a one-line block names
    nothing. A block out of place (a set answered again, or one not in the dataset) is
    skipped; a block that names no gene keeps its place."""
    text = (
        "Process: Kinase signalling\nAKT1 and MTOR act together.\n//\n"
        "Updated Process: DNA repair: mismatch\nMLH1 and MSH2 repair.\n//\n"
        "Process: Kinase signalling again\nAKT1 and MTOR once more.\n//\n"
        "Function: p53 regulation\nTP53 and its ligase MDM2.\n//\n"
        "Just one line\n//\n"
        "Process: Hemoglobin\nHBA1 and HBB carry oxygen.\n//"
    )
    blocks = read_blocks(text)
    assert [b.name for b in blocks] == [
        "Kinase signalling",
        "DNA repair: mismatch",
        "Kinase signalling again",
        "p53 regulation",
        None,
        "Hemoglobin",
    ]
    sets = [["AKT1", "MTOR"], ["MLH1", "MSH2"], ["TP53", "MDM2"], ["HBA1", "HBB"]]
    assert align(blocks, sets) == [0, 1, 3, 5]  # the repeat and the one-liner skipped
    unnamed = read_blocks("Process: A\nAKT1.\n//\nProcess: B\nNo genes.\n//\nProcess: C\nHBB.")
    assert align(unnamed, [["AKT1"], ["TP53"], ["HBB"]]) == [0, 1, 2]


def test_medcpt_where_the_cache_has_it_else_a_stand_in_that_says_so(tmp_path):
    """A hub id is read from the local Hugging Face cache only: found there, its
    folder is the model; absent, the stand-in scores and its label says what it
    stands in for."""
    medcpt = {"model": "ncbi/MedCPT-Query-Encoder", "pooling": "cls", "max_length": 64}
    scorer = EmbeddingScorer(medcpt)
    if scorer.stand_in_for:
        assert scorer.settings["model"] == "all-MiniLM-L6-v2"
        assert "stand-in for ncbi/MedCPT-Query-Encoder" in scorer.label()
    snapshot = tmp_path / "models--ncbi--MedCPT-Query-Encoder" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    refs = tmp_path / "models--ncbi--MedCPT-Query-Encoder" / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc123")
    assert cached_hub_model("ncbi/MedCPT-Query-Encoder", str(tmp_path)) == str(snapshot)
    assert cached_hub_model("ncbi/not-there", str(tmp_path)) is None
