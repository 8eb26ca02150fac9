"""GeneAgent's eight ``apis/`` functions with upstream's behaviour (ncbi-nlp/GeneAgent
at the pinned commit), each request sent through the tool executor.

Same URLs (old PubTator paths and Enrichr included), same bodies, same parameters
and return values, and the same exceptions where upstream's code raises: a call made
here and the same call made by upstream's own code through the tool gateway read the
same reply from the cache and hand the model the same text. A reply the executor
refuses or lacks reaches a function as the tool gateway answers it
(:meth:`~helixbench.tools.ToolResult.as_http`). The functions' schemas are upstream's
own ``*_doc`` dicts, read from the pinned files (never copied here).
"""

from __future__ import annotations

import ast
import json
from functools import partial
from pathlib import Path
from urllib.parse import urlencode
from xml.etree import ElementTree

from . import ToolRequest

PUBTATOR3 = "https://www.ncbi.nlm.nih.gov/research/pubtator3-api/agentapi/"
# upstream's disease, domain and interaction functions use PubTator's older path
PUBTATOR = "https://www.ncbi.nlm.nih.gov/research/pubtator-api/agentapi/"
EUTILS = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
ENRICHR = "https://maayanlab.cloud/Enrichr/"  # upstream writes http://; the service is https
LIBRARIES = ("KEGG_2021_Human", "Reactome_2022", "BioPlanet_2019", "MSigDB_Hallmark_2020")
NAMES = (
    "get_complex_for_gene_set",
    "get_disease_for_single_gene",
    "get_domain_for_single_gene",
    "get_enrichment_for_gene_set",
    "get_pathway_for_gene_set",
    "get_interactions_for_gene_set",
    "get_gene_summary_for_single_gene",
    "get_pubmed_articles",
)


def upstream_docs(apis_dir: Path) -> dict[str, dict]:
    """Each function's schema, ``<name>_doc`` of ``apis/<name>.py``, read as a literal."""
    docs = {}
    for name in NAMES:
        tree = ast.parse((Path(apis_dir) / f"{name}.py").read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == f"{name}_doc":
                docs[name] = ast.literal_eval(node.value)
    missing = [n for n in NAMES if n not in docs]
    if missing:
        raise ValueError(f"{apis_dir}: no schema for {', '.join(missing)}")
    return docs


class Response:
    """What upstream's code reads of a ``requests`` response."""

    def __init__(self, status: int, body: bytes):
        self.status_code, self.content = status, body
        self.ok = status < 400
        self.text = body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.text)


class Requests:
    """The requests of one question's function calls: each a tool call of the
    executor, ``results`` every result in order; ``index`` the model call they follow."""

    def __init__(self, executor, question_id: str):
        self.executor, self.question_id = executor, question_id
        self.index = 0
        self.results: list = []

    def send(self, url: str, body=None, kind: str = "json") -> Response:
        result = self.executor.call(
            ToolRequest(url, self.question_id, self.index, body=body, body_kind=kind)
        )
        self.results.append(result)
        return Response(*result.as_http())

    def get(self, base: str, params: dict) -> Response:
        return self.send(base.rstrip("?") + "?" + urlencode(params))


def functions(via: Requests) -> dict:
    """The eight functions, each sending through ``via``; called with the model's
    arguments they fail as upstream's do (a wrong argument names the function)."""
    return {name: partial(globals()[name], _via=via) for name in NAMES}


# -- the eight functions, as upstream's apis/ behave (module level: a TypeError names
# -- the function as upstream's message does) --------------------------------------------


def _pubtator(via, url: str, name: str, limit: int, failed: str):
    """PubTator's agent interface as upstream's four functions ask it: the results as
    JSON, or ``failed`` (``{status}`` filled in) for any other status than 200."""
    reply = via.get(url, {"name": name, "retmode": "json", "limit": limit})
    if reply.status_code == 200:
        return json.dumps(reply.json().get("results", {}))
    return failed.format(status=reply.status_code)


def get_complex_for_gene_set(gene_set, *, _via):
    gene_set = gene_set.replace(" ", "")
    return _pubtator(_via, PUBTATOR3 + "complex/", gene_set, 10, "Error: Unable to fetch data")


def get_disease_for_single_gene(gene_name, *, _via):
    return _pubtator(_via, PUBTATOR + "disease/", gene_name, 100, "Error: Unable to fetch data")


def get_domain_for_single_gene(gene_name, *, _via):
    return _pubtator(_via, PUBTATOR + "cdd/", gene_name, 10, "Error: Unable to fetch data")


def get_interactions_for_gene_set(gene_set, *, _via):
    failed = "Error: Unable to fetch data (Status Code: {status})"
    return _pubtator(_via, PUBTATOR + "ppi/", gene_set, 50, failed)


def get_enrichment_for_gene_set(gene_set, *, _via):
    genes = gene_set.replace(" ", "").split(",")
    query = {"organism": "hsapiens", "query": genes, "sources": []}
    query |= {"all_results": False, "user_threshold": 0.05}
    reply = _via.send("https://biit.cs.ut.ee/gprofiler/api/gost/profile/", query)
    if reply.status_code == 200:
        return json.dumps(reply.json()["result"][:5])
    return f"Error: {reply.status_code}"


def get_pathway_for_gene_set(gene_set, *, _via):
    genes = gene_set.replace(" ", "").split(",")
    form = {"list": "\n".join(genes), "description": "My gene set"}
    added = _via.send(ENRICHR + "addList", form, "form")
    if not added.ok:
        raise Exception("Error adding list to Enrichr:", added.text)
    list_id = json.loads(added.text)["userListId"]
    terms = {}
    for library in LIBRARIES:
        try:
            reply = _via.send(f"{ENRICHR}enrich?userListId={list_id}&backgroundType={library}")
            if not reply.ok:
                raise Exception("Error fetching pathway results:", reply.text)
            for row in reply.json()[library][:3]:
                terms[row[1]] = [row[2], ",".join(row[5]), library]
        except TypeError:  # upstream skips a library whose rows are not a list
            continue
    ranked = sorted(terms.items(), key=lambda item: item[1][0])  # by p-value
    found = [{"term": k, "overlapping genes": v[1], "database": v[2]} for k, v in ranked]
    return json.dumps(found[:5])


def get_gene_summary_for_single_gene(gene_name, specie, *, _via):
    search = {"db": "gene", "term": gene_name + " AND " + specie, "retmode": "json"}
    reply = _via.get(EUTILS + "esearch.fcgi", search | {"sort": "relevance"})
    ids = reply.json().get("esearchresult", {}).get("idlist", [])
    if not ids:
        return None
    summary = {"db": "gene", "id": ids[0], "retmode": "json", "sort": "relevance"}
    found = _via.get(EUTILS + "esummary.fcgi", summary).json().get("result", {})[ids[0]]
    found.pop("locationhist")
    return found


def get_pubmed_articles(term, *, _via):
    search = {"db": "pubmed", "term": term, "retmode": "xml", "retmax": "5"}
    reply = _via.get(EUTILS + "esearch.fcgi", search | {"sort": "relevance"})
    try:
        ids = [tag.text for tag in ElementTree.fromstring(reply.content).findall(".//Id")]
    except ElementTree.ParseError as exc:
        return f"Error parsing search results: {exc}"
    if not ids:
        return "No articles found for the query."
    fetch = {"db": "pubmed", "id": ",".join(ids), "retmode": "xml"}
    try:
        articles = ElementTree.fromstring(_via.get(EUTILS + "efetch.fcgi", fetch).content)
    except ElementTree.ParseError as exc:
        return f"Error parsing fetch results: {exc}"
    found = []
    for article in articles.findall(".//PubmedArticle"):
        pmid = _text(article, ".//PMID", "No PMID available")
        title = _text(article, ".//ArticleTitle", "No title available")
        abstract = _text(article, ".//Abstract/AbstractText", "No abstract available")
        found.append(f"PMID: {pmid}\nTitle: {title}\nAbstract: {abstract}\n")
    return "".join(found)


def _text(element, path: str, otherwise: str):
    found = element.find(path)
    return found.text if found is not None else otherwise
