"""BRAD's retrieval-augmented method: the corpus index (Chroma, persistent), its
reuse and rebuilds, MMR, and kind: brad on questions and gene sets through the
workflow with a loopback model and loopback Enrichr. (SmolLM2 runs brad end to end
in config/examples/brad.yaml: a test would cost CI half a minute.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helixbench.loopback.openai import OpenAIServer
from helixbench.retrieval import (
    DEFAULT_CORPUS,
    Index,
    build_index,
    documents,
    index_key,
    index_settings,
    mmr,
)
from helixbench.transcripts import read_records

from .support.geneset_servers import GeneSetServer
from .test_workflow import read_csv, snakemake

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

SYNOPSES = "raw.githubusercontent.com/ncbi-nlp/GeneAgent/88fd1adb40dce9545bde5b904ef3a628c09d747c"


def _no_upstream(file):
    raise AssertionError(f"a user corpus reads no upstream file ({file})")


def _corpus(directory: Path, mirror: Path, genes: list[str]) -> Path:
    """A small corpus of the user's kind: the mirror's synopses of ``genes``, one file each."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = (mirror / SYNOPSES / "gene_narrative_synposis_spindoctor.txt").read_text()
    for line in lines.splitlines():
        gene = line.partition(":")[0]
        if gene in genes:
            (directory / f"{gene}.txt").write_text(line + "\n")
    return directory


def _gene_set_tools(tmp_path: Path, server: GeneSetServer):
    """Gene-set tools (Enrichr) through a live executor routed to the loopback server."""
    from helixbench.tools.executor import ToolExecutor
    from helixbench.tools.genesets import GeneSetTools, geneset_settings

    config = {
        "mode": "live",
        "cache": str(tmp_path / "tools.sqlite"),
        "budgets": str(tmp_path / "budgets"),
        "routes": server.routes(),
    }
    return GeneSetTools(ToolExecutor(geneset_settings(config)), "NeST")


def test_an_index_is_keyed_by_its_corpus_chunking_and_model(tmp_path, mirror):
    corpus = _corpus(tmp_path / "docs", mirror, ["PSMB10", "ERBB2", "HRAS", "TP53"])
    settings = index_settings({"corpus": str(corpus)})
    key = index_key(settings, _no_upstream)
    assert key == index_key(index_settings({"corpus": str(corpus)}), _no_upstream)
    facts = build_index(settings, _no_upstream, tmp_path / "index" / key)
    assert (facts["documents"], facts["dimensions"]) == (4, 384) and facts["chunks"] >= 4
    index = Index(tmp_path / "index" / key)
    found = index.search("proteasome subunit beta type-10 immunoproteasome", "similarity", 2)
    assert found[0].source == "PSMB10.txt" and found[0].score > found[1].score
    # Another chunking, another embedding model or another corpus: another index.
    assert index_key({**settings, "chunk_size": 500}, _no_upstream) != key
    other_model = index_settings({"corpus": str(corpus), "embedding": {"model": "x"}})
    assert index_key(other_model, _no_upstream) != key
    (corpus / "TP53.txt").write_text("TP53: changed.\n")
    assert index_key(settings, _no_upstream) != key


def test_a_users_corpus_reads_text_markdown_and_pdf(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpus = tmp_path / "docs"
    (corpus / "notes").mkdir(parents=True)
    (corpus / "a.md").write_text("# KRAS\nKRAS is a small GTPase.\n")
    (corpus / "notes" / "b.txt").write_text("TP53 is a tumour suppressor.\n")
    (corpus / "ignored.csv").write_text("x,y\n")
    figure = plt.figure()
    figure.text(0.1, 0.5, "PSMB10 encodes a subunit of the immunoproteasome.")
    with matplotlib.rc_context({"pdf.fonttype": 42}):  # text a PDF reader can extract
        figure.savefig(corpus / "c.pdf")
    plt.close(figure)
    docs = documents(index_settings({"corpus": str(corpus)}), _no_upstream)
    assert [source for source, _, _ in docs] == ["a.md", "c.pdf", "notes/b.txt"]
    assert "immunoproteasome" in docs[1][1] and "GTPase" in docs[0][1]


def test_the_default_corpus_is_geneagents_synopses_from_the_mirror(mirror):
    settings = index_settings({})
    assert settings["corpus"] == DEFAULT_CORPUS and settings["chunk_size"] == 700
    docs = documents(settings, lambda f: mirror / f.relpath)
    # 6,467 + 6,259 lines with a gene (a gene of several sets comes again): 11,085 distinct
    assert len(docs) == 11085
    assert len({source for source, _, _ in docs}) < len(docs)  # some genes have two texts
    assert docs[0][0] == "gene_narrative_synposis_spindoctor:ZMPSTE24" and docs[0][2] == "ZMPSTE24"
    # The key is known without reading the files: their pinned checksums.
    assert index_key(settings, _no_upstream) == index_key(settings, lambda f: mirror / f.relpath)


def test_mmr_takes_the_most_relevant_then_the_most_novel():
    query = np.array([1.0, 0.0, 0.0])
    near = np.array([0.99, 0.141, 0.0])
    candidates = np.array([near, near, [0.6, 0.0, 0.8]])  # a duplicate, and a novel one
    candidates = candidates / np.linalg.norm(candidates, axis=1, keepdims=True)
    assert mmr(query, candidates, 2, 0.5) == [0, 2]
    assert mmr(query, candidates, 2, 1.0) == [0, 1]  # relevance alone


@pytest.mark.slow
@pytest.mark.workflow
def test_brad_on_questions_and_gene_sets_beside_the_other_protocols(mirror, tmp_path):
    genes = ["PSMB10", "SLC38A6", "ERBB2", "KRAS", "HRAS", "EGFR", "TP53", "MDM2", "CDKN1A"]
    corpus = _corpus(tmp_path / "docs", mirror, genes)
    with OpenAIServer() as llm, GeneSetServer() as tools:
        model = {"backend": "openai", "api": "chat", "model": "m", "base_url": llm.base_url}
        config = {
            "shards": 1,
            "tools": {"mode": "live", "routes": tools.routes()},
            "models": {"llm": {**model, "api_key_env": None}},
            "methods": {"brad": {"kind": "brad", "corpus": str(corpus), "k": 2}},
            # No background percentile: it embeds every name of three datasets.
            "scoring": {"tasks": {"NeST toy": ["embedding", "rougeL"]}},
            "runs": [
                {
                    "model": "llm",
                    "method": "brad",
                    "benchmarks": ["geneturing", "genesets"],
                    "tasks": ["Gene alias", "NeST toy"],
                    "sample": 2,
                },
                {"model": "llm", "method": "no-tools", "tasks": ["Gene alias"], "sample": 2},
                {
                    "model": "llm",
                    "method": "closed-book",
                    "benchmarks": ["genesets"],
                    "tasks": ["NeST toy"],
                    "sample": 2,
                },
            ],
        }
        done = snakemake(tmp_path / "work", config, mirror=mirror)
        assert done.returncode == 0, done.stderr[-3000:]
        prompts = [body["messages"][-1]["content"] for _, body, _ in llm.state.received]
    work = tmp_path / "work"
    (marker,) = (work / "resources" / "index").glob("*/index.json")
    built = marker.stat().st_mtime_ns
    records = [
        record
        for path in sorted((work / "results" / "runs" / "llm" / "brad").glob("*/*.jsonl.zst"))
        for record in read_records(path)
    ]
    assert len(records) == 2 + 2
    for record in records:
        (retrieval,) = [e for e in record["events"] if e["type"] == "retrieval"]
        chunks = retrieval["data"]["chunks"]
        assert len(chunks) == 2 and all(c["source"].endswith(".txt") for c in chunks)
        assert record["index"] == marker.parent.name
    alias = [p for p in prompts if "official gene symbol" in p and "Documents:" in p]
    assert alias and "Source: " in alias[0] and "Content: " in alias[0]
    sets = [r for r in records if r["benchmark"] == "genesets"]
    assert all(
        any(e["type"] == "tool" and e["data"]["tool"] == "enrichr" for e in r["events"])
        for r in sets
    )
    assert any("GO_Biological_Process_2021 pathway of" in p for p in prompts)
    report = work / "results" / "report"
    genesets = {r["run"]: r for r in read_csv(report / "genesets.csv")}
    # Recall needs the default corpus (a chunk per gene): none for a user's documents.
    assert genesets["llm / brad"]["retrieval_recall"] == ""
    protocols = {(r["benchmark"], r["protocol"]) for r in read_csv(report / "protocols.csv")}
    assert protocols == {
        ("geneturing", "retrieval (BRAD)"),
        ("geneturing", "no tools"),
        ("genesets", "retrieval (BRAD)"),
        ("genesets", "closed book"),
    }
    tests = read_csv(report / "protocol_tests.csv")
    assert {(t["benchmark"], t["protocol_a"], t["protocol_b"]) for t in tests} == {
        ("geneturing", "retrieval (BRAD)", "no tools"),
        ("genesets", "retrieval (BRAD)", "closed book"),
    }
    assert "retrieval (BRAD)" in (report / "index.html").read_text()
    # A second run builds nothing again and asks nothing again.
    again = snakemake(work, config, "--dry-run", mirror=mirror)
    assert again.returncode == 0 and "build_index" not in again.stdout
    assert marker.stat().st_mtime_ns == built


def test_the_default_corpus_index_names_each_chunks_gene(mirror, tmp_path, monkeypatch):
    """The default corpus built from the mirror (its first 100 synopses, to keep the
    test short: the whole takes minutes), and brad's retrieval recall on a gene set."""
    import helixbench.retrieval as retrieval
    from helixbench.methods.brad import Brad
    from helixbench.models import create_model

    whole = retrieval.documents
    monkeypatch.setattr(retrieval, "documents", lambda s, lp: whole(s, lp)[:100])
    local = lambda file: mirror / file.relpath  # noqa: E731
    settings = index_settings({})
    facts = build_index(settings, local, tmp_path / "default")
    assert (facts["documents"], facts["corpus_sha256"]) == (
        100,
        retrieval.corpus_digest(settings, local),
    )
    index = Index(tmp_path / "default")
    genes = [chunk.gene for chunk in index.search("peroxisome biogenesis", "similarity", 3)]
    assert all(genes) and any(g.startswith("PEX") for g in genes)

    genes = "PEX1 PEX2 PEX3 PEX5 PEX6 PEX7"
    with OpenAIServer() as llm, GeneSetServer() as server:
        llm.state.script.append("Process: peroxisome biogenesis")
        spec = {"backend": "openai", "api": "chat", "model": "m", "base_url": llm.base_url}
        model = create_model({**spec, "api_key_env": None})
        tools = _gene_set_tools(tmp_path, server)
        result = Brad(index, genesets=True, search="similarity", k=3).run("s", genes, model, tools)
        (prompt,) = [body["messages"][-1]["content"] for _, body, _ in llm.state.received]
    assert "GO_Biological_Process_2021 pathway of PEX1" in prompt and "Source: " in prompt
    retrieval_event = result.events[0].data
    found = {c["gene"] for c in retrieval_event["chunks"]} & {
        "PEX1",
        "PEX2",
        "PEX3",
        "PEX5",
        "PEX6",
        "PEX7",
    }
    assert retrieval_event["recall"] == len(found) / 6 and found
    assert result.answer == "peroxisome biogenesis"
