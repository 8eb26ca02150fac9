"""GeneAgent's tools (reference.md section 5), each a request through the executor.

- ``get_enrichment_for_gene_set``: g:Profiler g:GOSt (POST, hsapiens, threshold
  0.05), the top 5 terms;
- ``get_pathway_for_gene_set``: Enrichr (``addList`` POST, then ``enrich`` per
  library: KEGG_2021_Human, Reactome_2022, BioPlanet_2019, MSigDB_Hallmark_2020);
- ``get_gene_summary_for_single_gene``: E-utils gene (esearch, then esummary);
- ``get_pubmed_articles``: E-utils PubMed (esearch, then efetch abstracts);
- ``get_complex_for_gene_set``, ``get_interactions_for_gene_set``,
  ``get_disease_for_single_gene``, ``get_domain_for_single_gene``: PubTator3's
  AgentAPI (``complex/``, ``ppi/``, ``disease/``, ``cdd/``).

Every request goes through :class:`~helixbench.tools.executor.ToolExecutor`: the
allowlist (exactly these hosts), one polite budget per host, the shared cache,
offline and live modes. Masking keeps a set from being verified against its own
source: no g:Profiler for GO sets, no MSigDB_Hallmark_2020 for MSigDB sets. A
masked tool is not offered, and a call to it anyway is a recorded tool error that
sends nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from urllib.parse import quote, urlencode

from . import ToolRequest
from .executor import EUTILS_HOST, ToolExecutor, ToolSettings
from .functions import ToolCall, schema

GPROFILER_URL = "https://biit.cs.ut.ee/gprofiler/api/gost/profile/"
ENRICHR_URL = "https://maayanlab.cloud/Enrichr/"
PUBTATOR_URL = "https://www.ncbi.nlm.nih.gov/research/pubtator3-api/agentapi/"
EUTILS_URL = f"https://{EUTILS_HOST}/entrez/eutils/"
GENESET_HOSTS = (EUTILS_HOST, "biit.cs.ut.ee", "maayanlab.cloud", "www.ncbi.nlm.nih.gov")
ENRICHR_LIBRARIES = ("KEGG_2021_Human", "Reactome_2022", "BioPlanet_2019", "MSigDB_Hallmark_2020")
TOP_TERMS = 5
REPLY_CAP = 4000  # characters of a tool's answer the model sees

# Dataset -> what its sets must not be verified against.
MASKS = {
    "GO": {"tools": {"get_enrichment_for_gene_set"}, "libraries": set()},
    "MSigDB": {"tools": set(), "libraries": {"MSigDB_Hallmark_2020"}},
    "NeST": {"tools": set(), "libraries": set()},
}

_GENES = {"type": "string", "description": 'Gene symbols separated by ",", e.g. "ERBB2,KRAS".'}
_GENE = {"type": "string", "description": "One gene symbol, e.g. TP53."}
TOOL_SPECS = {
    "get_enrichment_for_gene_set": (
        "Top enriched GO, KEGG, Reactome and other terms of a gene set (g:Profiler).",
        {"genes": _GENES},
    ),
    "get_pathway_for_gene_set": (
        "Top pathways of a gene set in KEGG, Reactome, BioPlanet and MSigDB Hallmark (Enrichr).",
        {"genes": _GENES},
    ),
    "get_interactions_for_gene_set": (
        "Protein-protein interactions among genes of a set (PubTator3).",
        {"genes": _GENES},
    ),
    "get_complex_for_gene_set": (
        "Protein complexes the genes of a set take part in (PubTator3).",
        {"genes": _GENES},
    ),
    "get_gene_summary_for_single_gene": ("NCBI Gene's summary of one human gene.", {"gene": _GENE}),
    "get_disease_for_single_gene": ("Diseases linked to one gene (PubTator3).", {"gene": _GENE}),
    "get_domain_for_single_gene": ("Conserved domains of one gene (PubTator3).", {"gene": _GENE}),
    "get_pubmed_articles": (
        "Titles and abstracts of the top PubMed articles for a query.",
        {"query": {"type": "string", "description": "A PubMed query."}},
    ),
}  # fmt: skip
# What the agent itself asks about every claim's genes before the model's own calls.
EVIDENCE_TOOLS = (
    "get_enrichment_for_gene_set",
    "get_pathway_for_gene_set",
    "get_interactions_for_gene_set",
)


def geneset_settings(settings: dict) -> ToolSettings:
    """The executor settings of gene-set tools: the run's, with the allowlist
    extended to exactly GeneAgent's hosts."""
    base = ToolSettings.from_config(settings)
    hosts = tuple(dict.fromkeys((*base.allowed_hosts, *GENESET_HOSTS)))
    return replace(base, allowed_hosts=hosts)


class GeneSetTools:
    """The tools one gene set may use, masked for its dataset."""

    def __init__(self, executor: ToolExecutor, dataset: str | None):
        self.executor = executor
        self.dataset = dataset
        self.mask = MASKS.get(dataset, {"tools": set(), "libraries": set()})
        self.libraries = [lib for lib in ENRICHR_LIBRARIES if lib not in self.mask["libraries"]]

    @property
    def names(self) -> list[str]:
        return [name for name in TOOL_SPECS if name not in self.mask["tools"]]

    def schemas(self) -> list[dict]:
        """The offered tools as OpenAI function-calling schemas."""
        return [
            schema(name, TOOL_SPECS[name][0], TOOL_SPECS[name][1], list(TOOL_SPECS[name][1]))
            for name in self.names
        ]

    def describe_for_text(self) -> str:
        """The offered tools, one line each, for the text protocol."""
        return "\n".join(
            f"- {name}({', '.join(TOOL_SPECS[name][1])}): {TOOL_SPECS[name][0]}"
            for name in self.names
        )

    def call(self, name: str, arguments: dict, question_id: str, index: int) -> ToolCall:
        call = ToolCall(name, arguments, "")
        if name not in TOOL_SPECS:
            call.error = f"unknown tool {name!r}; available: {', '.join(self.names)}"
        elif name in self.mask["tools"]:
            call.error = (
                f"{name} is masked for this gene set (it would verify it against its source)"
            )
        else:
            missing = [k for k in TOOL_SPECS[name][1] if not str(arguments.get(k) or "").strip()]
            if missing:
                call.error = f"{name} needs {', '.join(missing)}"
        if call.error:
            call.text = f"Error: {call.error}"
            return call
        try:
            call.text = getattr(self, "_" + name)(call, arguments, question_id, index)[:REPLY_CAP]
        except _ToolFailed as exc:
            call.error = str(exc)
            call.text = f"Error: {exc}"
        return call

    # -- requests ----------------------------------------------------------------------

    def _request(self, call: ToolCall, qid: str, index: int, url: str, body=None, kind="json"):
        result = self.executor.call(ToolRequest(url, qid, index, body=body, body_kind=kind))
        call.requests.append(result)
        if result.error is not None:
            raise _ToolFailed(result.error)
        return result.value()

    def _json(self, call, qid, index, url, body=None, kind="json"):
        raw = self._request(call, qid, index, url, body, kind)
        try:
            return json.loads(raw)
        except (TypeError, ValueError):
            raise _ToolFailed(f"not JSON: {str(raw)[:80]!r}") from None

    @staticmethod
    def _genes(arguments: dict) -> list[str]:
        return [g for g in re.split(r"[\s,;]+", str(arguments.get("genes", ""))) if g]

    def _get_enrichment_for_gene_set(self, call, arguments, qid, index) -> str:
        body = {
            "organism": "hsapiens",
            "query": self._genes(arguments),
            "user_threshold": 0.05,
            "no_evidences": True,
        }
        reply = self._json(call, qid, index, GPROFILER_URL, body)
        terms = sorted(reply.get("result", []), key=lambda t: t.get("p_value", 1.0))[:TOP_TERMS]
        if not terms:
            return "No significant enrichment term."
        return "\n".join(
            f"{t.get('name')} ({t.get('native')}, {t.get('source')}, p={t.get('p_value'):.3g})"
            for t in terms
        )

    def _get_pathway_for_gene_set(self, call, arguments, qid, index) -> str:
        list_id = self._enrichr_list(call, self._genes(arguments), qid, index)
        lines = []
        for library in self.libraries:
            for row in self._enrichr_rows(call, list_id, library, qid, index)[:TOP_TERMS]:
                # [rank, term, p-value, z-score, combined score, genes, adjusted p, ...]
                genes = ",".join(row[5]) if len(row) > 5 else ""
                lines.append(f"{library}: {row[1]} (p={row[2]:.3g}; {genes})")
        return "\n".join(lines) or "No pathway term."

    def _enrichr_list(self, call, genes: list[str], qid, index) -> int:
        body = {"list": "\n".join(genes), "description": "helixbench"}
        added = self._json(call, qid, index, ENRICHR_URL + "addList", body, kind="form")
        list_id = added.get("userListId")
        if list_id is None:
            raise _ToolFailed("Enrichr returned no userListId")
        return list_id

    def _enrichr_rows(self, call, list_id: int, library: str, qid, index) -> list:
        query = urlencode({"userListId": list_id, "backgroundType": library})
        return self._json(call, qid, index, f"{ENRICHR_URL}enrich?{query}").get(library, [])

    def enrichr_terms(
        self, genes: list[str], library: str, max_p: float, question_id: str, index: int
    ) -> ToolCall:
        """BRAD's enrichment step: the set's Enrichr terms in ``library`` with p <=
        ``max_p`` (at most 10). A GO library for a GO set is masked (it would name the
        set from its own source)."""
        call = ToolCall("enrichr", {"genes": ",".join(genes), "library": library}, "")
        if self.dataset == "GO" and library.startswith("GO_"):
            call.error = f"{library} is masked for GO sets (it would name the set from its source)"
            call.text = f"Error: {call.error}"
            return call
        try:
            list_id = self._enrichr_list(call, genes, question_id, index)
            rows = self._enrichr_rows(call, list_id, library, question_id, index)
        except _ToolFailed as exc:
            call.error, call.text = str(exc), f"Error: {exc}"
            return call
        kept = [row for row in rows if row[2] <= max_p][:10]
        call.text = "\n".join(f"{row[1]} (p={row[2]:.3g})" for row in kept) or "No term."
        return call

    def _pubtator(self, call, qid, index, interface: str, name: str) -> str:
        query = urlencode({"name": name, "retmode": "json", "limit": 10})
        reply = self._json(call, qid, index, f"{PUBTATOR_URL}{interface}/?{query}")
        results = reply.get("results", reply) if isinstance(reply, dict) else reply
        return json.dumps(results, ensure_ascii=False) if results else "No result."

    def _get_interactions_for_gene_set(self, call, arguments, qid, index) -> str:
        return self._pubtator(call, qid, index, "ppi", ",".join(self._genes(arguments)))

    def _get_complex_for_gene_set(self, call, arguments, qid, index) -> str:
        return self._pubtator(call, qid, index, "complex", ",".join(self._genes(arguments)))

    def _get_disease_for_single_gene(self, call, arguments, qid, index) -> str:
        return self._pubtator(call, qid, index, "disease", str(arguments["gene"]).strip())

    def _get_domain_for_single_gene(self, call, arguments, qid, index) -> str:
        return self._pubtator(call, qid, index, "cdd", str(arguments["gene"]).strip())

    def _get_gene_summary_for_single_gene(self, call, arguments, qid, index) -> str:
        gene = str(arguments["gene"]).strip()
        term = quote(f"{gene}[sym] AND human[orgn]")
        found = self._json(
            call, qid, index, f"{EUTILS_URL}esearch.fcgi?db=gene&retmode=json&retmax=1&term={term}"
        )
        ids = found.get("esearchresult", {}).get("idlist", [])
        if not ids:
            return f"No human gene {gene} in NCBI Gene."
        summary = self._json(
            call, qid, index, f"{EUTILS_URL}esummary.fcgi?db=gene&retmode=json&id={ids[0]}"
        )
        record = summary.get("result", {}).get(ids[0], {})
        return (
            f"{record.get('name', gene)} ({record.get('description', '')}): "
            f"{record.get('summary') or 'no summary'}"
        )

    def _get_pubmed_articles(self, call, arguments, qid, index) -> str:
        term = quote(str(arguments["query"]).strip())
        found = self._json(
            call,
            qid,
            index,
            f"{EUTILS_URL}esearch.fcgi?db=pubmed&retmode=json&retmax=3&term={term}",
        )
        ids = found.get("esearchresult", {}).get("idlist", [])
        if not ids:
            return "No PubMed article."
        text = self._request(
            call,
            qid,
            index,
            f"{EUTILS_URL}efetch.fcgi?db=pubmed&rettype=abstract&retmode=text&id={','.join(ids)}",
        )
        return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


class _ToolFailed(Exception):
    pass
