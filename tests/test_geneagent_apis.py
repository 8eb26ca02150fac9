"""GeneAgent's eight functions reproduced (helixbench.tools.geneagent_apis) against
upstream's own ``apis/`` files run for real: each pair sends the same requests to
the tool executor (the URL and body ``requests`` prepares, read as the tool gateway
reads them) and returns the same value, or fails with the same error."""

from __future__ import annotations

import importlib.util
import types

import pytest
import requests

from helixbench.datasets.upstream import GENEAGENT_COMMIT, GENEAGENT_REPO, lookup
from helixbench.gateway.tool_api import _body
from helixbench.tools.executor import ToolExecutor
from helixbench.tools.geneagent_apis import NAMES, PUBTATOR, Requests, functions, upstream_docs
from helixbench.tools.genesets import geneset_settings

from .support.geneset_servers import GeneSetServer

HOSTS = ("biit.cs.ut.ee", "maayanlab.cloud", "www.ncbi.nlm.nih.gov", "eutils.ncbi.nlm.nih.gov")
CALLS = [
    ("get_complex_for_gene_set", {"gene_set": "ERBB2, KRAS"}),
    ("get_disease_for_single_gene", {"gene_name": "KRAS"}),
    ("get_domain_for_single_gene", {"gene_name": "HRAS"}),
    ("get_enrichment_for_gene_set", {"gene_set": "ERBB2,KRAS,HRAS"}),
    ("get_pathway_for_gene_set", {"gene_set": "ERBB2, KRAS"}),
    ("get_interactions_for_gene_set", {"gene_set": "ERBB2,KRAS"}),
    ("get_gene_summary_for_single_gene", {"gene_name": "KRAS", "specie": "Homo"}),
    ("get_pubmed_articles", {"term": "KRAS signaling"}),
    ("get_gene_summary_for_single_gene", {"gene_name": "KRAS"}),  # a call upstream refuses
]


class _Gateway:
    """``requests`` for upstream's module: each request prepared by requests itself,
    then read as the tool gateway reads it (URL, body) and sent to the executor."""

    def __init__(self, via: Requests):
        self.via = via

    def _send(self, method, url, **kwargs):
        prepared = requests.Request(method, url, **kwargs).prepare()
        public = prepared.url.replace("http://", "https://", 1)  # the sandbox's front
        raw = prepared.body.encode() if isinstance(prepared.body, str) else prepared.body
        body, kind = _body(raw, prepared.headers.get("Content-Type", ""))
        if method == "GET":
            body = None
        return self.via.send(public, body, kind)

    def get(self, url, params=None, **kwargs):
        return self._send("GET", url, params=params, **kwargs)

    def post(self, url, **kwargs):
        return self._send("POST", url, **kwargs)


def _upstream_function(mirror, name: str, gateway: _Gateway):
    path = mirror / lookup(GENEAGENT_REPO, f"apis/{name}.py", GENEAGENT_COMMIT).relpath
    spec = importlib.util.spec_from_file_location(f"upstream_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.requests = types.SimpleNamespace(get=gateway.get, post=gateway.post)
    return getattr(module, name)


def _outcome(function, arguments):
    try:
        return "returned", function(**arguments)
    except Exception as exc:  # noqa: BLE001 (the error is what is compared)
        return "raised", f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize(("name", "arguments"), CALLS)
def test_each_function_sends_and_returns_what_upstreams_does(mirror, tmp_path, name, arguments):
    with GeneSetServer() as services:
        routes = services.routes() | {PUBTATOR: f"{services.base}/pubtator/"}
        settings = {"mode": "live", "cache": str(tmp_path / "t.sqlite"), "routes": routes}
        settings |= {"budgets": str(tmp_path / "b"), "rates": dict.fromkeys(HOSTS, 1000)}
        executor = ToolExecutor(geneset_settings(settings))
        theirs, ours = Requests(executor, "q"), Requests(executor, "q")
        upstream = _upstream_function(mirror, name, _Gateway(theirs))
        assert _outcome(functions(ours)[name], arguments) == _outcome(upstream, arguments)
    sent = [[(r.url, r.method) for r in side.results] for side in (ours, theirs)]
    assert sent[0] == sent[1] and (sent[0] or "specie" not in arguments)
    assert all(r.error is None and r.status == 200 for r in ours.results)  # served, not refused
    assert [r.cache for r in theirs.results] == ["hit"] * len(theirs.results)  # ours first


def test_every_function_is_reproduced_and_takes_upstreams_schema(mirror):
    pubmed = lookup(GENEAGENT_REPO, "apis/get_pubmed_articles.py", GENEAGENT_COMMIT)
    docs = upstream_docs((mirror / pubmed.relpath).parent)
    assert list(docs) == list(NAMES) and {n for n, _ in CALLS} == set(NAMES)
    for name, doc in docs.items():
        assert doc["name"] == name and doc["parameters"]["required"]
