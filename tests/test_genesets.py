"""Gene sets (GeneAgent): datasets, tools with masking, the three methods, metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helixbench.benchmarks.genesets import FILES as GENESET_FILES
from helixbench.benchmarks.genesets import load_genesets
from helixbench.config import ConfigError, build_plan
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.genesets import (
    ClosedBook,
    GeneAgent,
    GseaTop1,
    parse_claims,
    parse_process,
    recorded_terms,
)
from helixbench.methods.session import parse_verdict
from helixbench.models import create_model
from helixbench.scoring.text import EmbeddingScorer, PercentileScorer, rouge_scorer_for
from helixbench.tools.executor import ToolExecutor
from helixbench.tools.genesets import GeneSetTools, geneset_settings

from .conftest import SMOLLM2
from .support.geneset_servers import GeneSetServer


def _sets(mirror: Path, task: str):
    return load_genesets(task, mirror / GENESET_FILES[task][0].relpath)


def _tools(tmp_path: Path, server: GeneSetServer, dataset: str | None, mode: str = "live"):
    settings = {
        "mode": mode,
        "cache": str(tmp_path / "tools.sqlite"),
        "budgets": str(tmp_path / "budgets"),
        "routes": server.routes(),
        "rates": {h: 1000 for h in ("biit.cs.ut.ee", "maayanlab.cloud", "www.ncbi.nlm.nih.gov")},
        "http": {"retries": 2, "backoff_s": 0.01},
    }
    return GeneSetTools(ToolExecutor(geneset_settings(settings)), dataset)


def test_the_three_datasets_and_their_toy_samples(mirror):
    sizes = {task: len(_sets(mirror, task)) for task in GENESET_FILES}
    assert sizes == {
        "GO": 1000,
        "NeST": 50,
        "MSigDB": 56,
        "GO toy": 3,
        "NeST toy": 2,
        "MSigDB toy": 1,
    }
    nest = _sets(mirror, "NeST toy")[0]  # genes comma-separated upstream
    assert nest.genes == ["ERBB2", "ERBB4", "FGFR2", "FGFR4", "HRAS", "KRAS"]
    assert (nest.gold, nest.source_id, nest.id) == (
        "MAPK signaling",
        "NEST:256",
        "genesets.nest-toy.000",
    )
    go = _sets(mirror, "GO")[0]  # space-separated upstream
    assert go.genes == ["LDLRAP1", "SCP2D1", "ANXA2", "SCP2"] and go.source_id == "GO:0032385"


def test_parsing_names_claims_and_verdicts():
    assert parse_process("Some analysis.\n\n**Process: MAPK signaling**\n") == "MAPK signaling"
    assert parse_process("Process: a\ntext\nProcess: b") == "a"  # the first one
    assert parse_process("no name here") is None
    assert parse_claims('Here: ["ERBB2 and KRAS act in MAPK signaling", "x y z"]', 5) == [
        "ERBB2 and KRAS act in MAPK signaling",
        "x y z",
    ]
    assert parse_claims("1. ERBB2 and KRAS signal\n- HRAS is a GTPase\nok", 5) == [
        "ERBB2 and KRAS signal",
        "HRAS is a GTPase",
    ]
    assert parse_verdict("The claim is partially supported by Enrichr.") == "partially supported"
    assert parse_verdict("Refuted: no database links them.") == "refuted"
    assert parse_verdict("This is not supported.") == "refuted"
    assert parse_verdict("Supported by KEGG.") == "supported"
    assert parse_verdict("I could not decide.") == "unknown"


def test_tools_go_through_the_executor_with_masking(tmp_path):
    with GeneSetServer() as server:
        nest = _tools(tmp_path, server, "NeST")
        call = nest.call("get_enrichment_for_gene_set", {"genes": "ERBB2,KRAS"}, "q1", 0)
        assert call.error is None and call.text.startswith("process of ERBB2 (GO:0000001")
        ((_, _, _, body),) = server.state.of("gprofiler")
        assert body["organism"] == "hsapiens" and body["query"] == ["ERBB2", "KRAS"]
        assert body["user_threshold"] == 0.05
        pathways = nest.call("get_pathway_for_gene_set", {"genes": "ERBB2 KRAS"}, "q1", 1)
        libraries = [r[2]["backgroundType"] for r in server.state.of("enrichr") if r[2]]
        assert libraries == [
            "KEGG_2021_Human",
            "Reactome_2022",
            "BioPlanet_2019",
            "MSigDB_Hallmark_2020",
        ]
        assert "KEGG_2021_Human pathway of ERBB2" in pathways.text
        # The same call again is answered from the cache: nothing reaches the server.
        sent = len(server.state.received)
        again = nest.call("get_enrichment_for_gene_set", {"genes": "ERBB2,KRAS"}, "q2", 0)
        assert again.text == call.text and len(server.state.received) == sent
        assert again.describe()["cache"] == "hit"

        msigdb = _tools(tmp_path, server, "MSigDB")
        msigdb.call("get_pathway_for_gene_set", {"genes": "PEX1 PEX2"}, "q3", 0)
        libraries = [r[2]["backgroundType"] for r in server.state.of("enrichr") if r[2]][4:]
        assert "MSigDB_Hallmark_2020" not in libraries and len(libraries) == 3

        go = _tools(tmp_path, server, "GO")
        assert "get_enrichment_for_gene_set" not in go.names
        before = len(server.state.of("gprofiler"))
        masked = go.call("get_enrichment_for_gene_set", {"genes": "LDLRAP1,SCP2"}, "q4", 0)
        assert "masked" in masked.error and len(server.state.of("gprofiler")) == before

        # A 500 is retried; an unknown tool or missing argument never sends anything.
        server.state.faults.append(("500",))
        summary = nest.call("get_gene_summary_for_single_gene", {"gene": "KRAS"}, "q5", 0)
        assert summary.error is None and "small GTPase" in summary.text
        assert nest.call("get_weather", {}, "q5", 1).error.startswith("unknown tool")
        assert "needs gene" in nest.call("get_domain_for_single_gene", {}, "q5", 2).error

        offline = _tools(tmp_path, server, "NeST", mode="offline")
        missing = offline.call("get_complex_for_gene_set", {"genes": "A,B"}, "q6", 0)
        assert missing.error == "offline: not in the tool cache"


@pytest.mark.slow
def test_geneagent_with_the_local_model_and_the_text_protocol(mirror, tmp_path, smollm2_dir):
    """A full cascade on a toy set with SmolLM2 (no function calling: the text
    protocol): every stage runs, each claim gets a verdict, and each claim's genes
    reach the g:Profiler, Enrichr and PubTator servers."""
    model = create_model(SMOLLM2, model_dir=smollm2_dir, threads=1)
    method = GeneAgent(max_claims=1, max_tool_rounds=1, max_tokens=24)
    nest = _sets(mirror, "NeST toy")[0]
    with GeneSetServer() as server:
        result = method.run(nest.id, nest.text, model, _tools(tmp_path, server, "NeST"))
        assert result.error is None and result.answer  # a name, however poor
        models = [e for e in result.events if e.type == "model"]
        claims = [e.data for e in result.events if e.type == "claim"]
        # generation (+ a follow-up if it named nothing), 2 x (claims, verification,
        # and the report after the one tool round), modification, summary
        assert len(models) >= 4 and "Genes: ERBB2, ERBB4" in models[0].data["prompt_increment"]
        assert all(c["verdict"] in ("supported", "partially supported", "refuted", "unknown")
                   for c in claims)  # fmt: skip
        if claims:
            for service in ("gprofiler", "enrichr", "pubtator"):
                assert server.state.of(service), service
            prompts = [m.data["prompt_increment"] for m in models]
            assert any("CALL <tool> <JSON arguments>" in p for p in prompts)  # the protocol


def test_geneagent_through_function_calling(mirror, tmp_path):
    nest = _sets(mirror, "NeST toy")[0]
    script = [
        "ERBB2 and KRAS relay growth-factor signals.\nProcess: MAPK signaling",
        '["ERBB2, KRAS and HRAS take part in MAPK signaling"]',
        {"tool_calls": [("get_gene_summary_for_single_gene", {"gene": "KRAS"})]},
        "Report: supported by NCBI Gene (KRAS: MAPK signaling).",
        "Analysis kept.\nProcess: MAPK signaling",
        '["FGFR2 and FGFR4 are receptor tyrosine kinases", "HRAS is a kinase"]',
        "Report: supported.",
        {"tool_calls": [("get_domain_for_single_gene", {"gene": "HRAS"})]},
        "Report: refuted, HRAS is a GTPase.",
        "Revised.\nProcess: MAPK cascade",
    ]
    with GeneSetServer() as server, OpenAIServer() as llm:
        llm.state.script.extend(script)
        spec = llm.chat_model()
        model = create_model(spec, cache=tmp_path / "models.sqlite")
        tools = _tools(tmp_path, server, "NeST")
        result = GeneAgent(max_claims=3, max_tool_rounds=2).run(nest.id, nest.text, model, tools)
        assert result.error is None and result.answer == "MAPK cascade"
        claims = [e.data for e in result.events if e.type == "claim"]
        assert [(c["stage"], c["verdict"]) for c in claims] == [
            ("name", "supported"),
            ("narrative", "supported"),
            ("narrative", "refuted"),
        ]
        # The tools went to the API as function schemas; their results came back.
        verify = llm.state.received[2][1]
        assert {t["function"]["name"] for t in verify["tools"]} >= {"get_pubmed_articles"}
        answered = llm.state.received[3][1]["messages"]
        assert answered[-1]["role"] == "tool" and "small GTPase" in answered[-1]["content"]
        assert [r[1] for r in server.state.of("pubtator")][-1].endswith("/cdd/")
        # Evidence first: every claim's genes went to g:Profiler, Enrichr and PubTator.
        assert len(server.state.of("gprofiler")) == 3
        # Rerun: every model call is answered from the cache.
        sent = len(llm.state.received)
        again = GeneAgent(max_claims=3, max_tool_rounds=2).run(nest.id, nest.text, model, tools)
        assert again.answer == "MAPK cascade" and len(llm.state.received) == sent


def test_a_go_set_never_reaches_gprofiler(mirror, tmp_path):
    go = _sets(mirror, "GO toy")[0]
    script = [
        "Process: photoreceptor maintenance",
        '["ROM1 and PRPH2 keep photoreceptor outer segments"]',
        {"tool_calls": [("get_enrichment_for_gene_set", {"genes": "ROM1,PRPH2"})]},
        "Report: partially supported.",
        "Process: photoreceptor outer segment organization",
        "[]",
        "Process: photoreceptor outer segment organization",
    ]
    with GeneSetServer() as server, OpenAIServer() as llm:
        llm.state.script.extend(script)
        spec = llm.chat_model()
        tools = _tools(tmp_path, server, "GO")
        result = GeneAgent(max_tool_rounds=1).run(go.id, go.text, create_model(spec), tools)
        assert result.answer == "photoreceptor outer segment organization"
        # One round spent: the model is asked for its report, the tools still declared.
        final = llm.state.received[3][1]
        assert final["messages"][-1]["content"].startswith("No more tool calls") and final["tools"]
        offered = {t["function"]["name"] for t in llm.state.received[2][1]["tools"]}
        assert "get_enrichment_for_gene_set" not in offered
        # The model asked for it anyway: a recorded tool error, nothing sent.
        refused = [e.data for e in result.events if e.type == "tool" and e.data["error"]]
        assert [r["tool"] for r in refused] == ["get_enrichment_for_gene_set"]
        assert server.state.of("gprofiler") == [] and server.state.of("enrichr")


def test_closed_book_parses_the_process_line_or_records_a_parse_error(mirror):
    nest = _sets(mirror, "NeST toy")[0]
    with OpenAIServer() as llm:
        llm.state.script.extend(["Analysis.\nProcess: MAPK signaling", "No name."])
        spec = llm.chat_model()
        model = create_model(spec)
        named = ClosedBook().run(nest.id, nest.text, model, None)
        assert (named.answer, named.error) == ("MAPK signaling", None)
        assert "ERBB2, ERBB4, FGFR2" in llm.state.received[0][1]["messages"][0]["content"]
        failed = ClosedBook().run(nest.id, nest.text, model, None)
        assert (failed.answer, failed.error) == (None, "parse_error")


def test_gsea_top1_takes_the_recorded_term_of_each_msigdb_set(mirror):
    msigdb, toy = _sets(mirror, "MSigDB"), _sets(mirror, "MSigDB toy")
    top1 = (
        mirror
        / "raw.githubusercontent.com/ncbi-nlp/GeneAgent"
        / ("88fd1adb40dce9545bde5b904ef3a628c09d747c/GSEATerms/MsigDB.EnrichTerms.top1.json")
    )
    terms = recorded_terms(str(top1), toy, msigdb + toy)
    # The toy set is MSigDB's second row (MsigDB:69, Peroxisome): its recorded term.
    assert terms == {toy[0].text: "protein localization to peroxisome"}
    result = GseaTop1(terms).run(toy[0].id, toy[0].text, None, None)
    assert result.answer == "protein localization to peroxisome"
    assert result.events[0].data["cache"] == "recorded"


def test_geneset_metrics_on_hand_checked_pairs():
    rouge1, rouge2, rougel = (rouge_scorer_for(n) for n in ("rouge1", "rouge2", "rougeL"))
    # "MAPK signaling" vs "MAPK signaling pathway": P=1, R=2/3 -> F1 0.8; bigrams P=1, R=1/2.
    assert rouge1("NeST", "MAPK signaling", "MAPK signaling pathway") == pytest.approx(0.8)
    assert rouge2("NeST", "MAPK signaling", "MAPK signaling pathway") == pytest.approx(2 / 3)
    # GeneAgent's cleaning: parenthesised text and "-" go; "signalling" stems like "signaling".
    assert rougel("GO", "Wnt-signaling (canonical)", "wnt signalling") == pytest.approx(1.0)
    embedding = EmbeddingScorer()
    percentile = PercentileScorer(embedding, ["MAPK signaling", "DNA repair", "glycolysis"])
    assert percentile("NeST", "MAPK signalling cascade", "MAPK signaling") == 1.0
    assert percentile("NeST", "DNA repair", "MAPK signaling") < 1.0  # DNA repair is closer
    assert percentile("NeST", "", "MAPK signaling") == 0.0
    same = embedding("NeST", "MAPK signaling", "MAPK signaling")
    assert same == pytest.approx(1.0, abs=1e-5)


def test_the_percentile_backgrounds_embeddings_are_kept_for_later_jobs(tmp_path):
    """Encoded once per machine (each score job of a run used to encode ~1,100 names):
    a second scorer reads them back and scores the same; other names, another file."""

    class Counted(EmbeddingScorer):
        encoded: list[int] = []

        def encode_batch(self, texts):
            self.encoded.append(len(texts))
            return super().encode_batch(texts)

    names = ["MAPK signaling", "DNA repair", "glycolysis"]
    first = PercentileScorer(Counted(), names, cache_dir=tmp_path)
    score = first("NeST", "DNA repair", "MAPK signaling")
    assert Counted.encoded == [3]
    (kept,) = tmp_path.glob("*.npy")
    again = PercentileScorer(Counted(), names, cache_dir=tmp_path)
    assert again("NeST", "DNA repair", "MAPK signaling") == score
    assert Counted.encoded == [3]  # the candidates came from the file
    PercentileScorer(Counted(), names[:2], tmp_path)("NeST", "DNA repair", "MAPK signaling")
    assert Counted.encoded == [3, 2]
    assert len(list(tmp_path.glob("*.npy"))) == 2 and kept.exists()


def test_gene_set_methods_pair_with_the_gene_set_benchmark(mirror):
    base = {"models": {"m": SMOLLM2, "g": {"backend": "enrichment"}}, "scoring": {}}
    ok = build_plan(
        {**base, "runs": [{"model": "m", "method": "closed-book", "benchmarks": ["genesets"]}]},
        mirror,
    )
    # Toy samples run only when named.
    assert [t.task for t in ok.tasks] == ["GO", "NeST", "MSigDB"]
    cases = [
        ({"model": "m", "method": "closed-book"}, "set benchmarks: \\[genesets\\]"),
        ({"model": "m", "method": "genegpt-slim", "benchmarks": ["genesets"]}, "genesets takes"),
        ({"model": "m", "method": "gsea-top1", "benchmarks": ["genesets"]}, "backend enrichment"),
        ({"model": "g", "method": "closed-book", "benchmarks": ["genesets"]}, "backend enrichment"),
    ]
    for run, message in cases:
        with pytest.raises(ConfigError, match=message):
            build_plan({**base, "benchmarks": ["geneturing"], "runs": [run]}, mirror)
    gsea = build_plan(
        {**base, "runs": [{"model": "g", "method": "gsea-top1", "benchmarks": ["genesets"]}]},
        mirror,
    )
    recorded = {t.task: t.gsea_terms is not None for t in gsea.tasks}
    assert recorded == {"GO": False, "NeST": False, "MSigDB": True}
    assert json.dumps(gsea.runs[0].spec())  # JSON-able for the run job
