"""BRAD's retrieval-augmented answer (Pickard et al.; Jpickard1/BRAD, MIT), re-implemented.

For each question: retrieve chunks of the corpus's index (:mod:`helixbench.retrieval`;
MMR by default, ``k`` = 3), optionally after multi-query expansion (the model writes
other phrasings; the chunks of all are pooled) and contextual compression (the model
keeps of each chunk only what bears on the question; a chunk with nothing is
dropped), both off by default as in BRAD; then one model call with the chunks and
their sources in the prompt ("Source: ... Content: ...", as BRAD's chain shows them).
For gene sets BRAD's enrichment step comes first: Enrichr (``enrichr_library``,
GO_Biological_Process_2021 by default) through the tool executor, the terms with
p <= ``enrichr_max_p`` (0.5) given to the model beside the chunks; the name is read
off a ``Process: <name>`` line as for ``closed-book``.

The prompts are ours (prompt version :data:`PROMPT_VERSION`): BRAD hands its
retrieved documents to LangChain's "stuff" question-answering chain; ours state the
answer contract of the benchmark as the other methods do. Each record logs the
retrieval (query, chunk ids, sources, scores, texts) as a ``retrieval`` event and,
for a gene set, the share of its genes whose summary was retrieved (``recall``; with
the default corpus, whose chunks each belong to one gene).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..benchmarks.genesets import DATASET as GENESET_DATASET
from ..retrieval import DEFAULT_CORPUS, DEFAULTS, Index
from ..tools import tool_settings
from ..tools.executor import ToolExecutor
from ..tools.genesets import GeneSetTools, geneset_settings
from ..transcripts import Event, QuestionResult
from . import Prepared
from .function_calling import CONTRACT, final_answer
from .genesets import SYSTEM, parse_process
from .session import Session, Stopped

PROMPT_VERSION = "brad-1"
QA_PROMPT = """Answer the question using the documents below where they hold the answer; \
where they do not, answer from what you know. {contract}

Documents:
{documents}

Question: {question}
"""
GENESET_PROMPT = """{system}
Name the most prominent biological process performed by this system of interacting \
proteins. Below are summaries of some of its genes retrieved from a library of gene \
descriptions, and the terms enriched in the set.
End your reply with one line of the form "Process: <name>".

Genes: {genes}

Retrieved summaries:
{documents}

Enriched terms ({library}, p <= {max_p}):
{terms}
"""
MULTIQUERY_PROMPT = """Write {n} other phrasings of the question below, to search a \
library of documents with. One per line, nothing else.

Question: {question}
"""
COMPRESS_PROMPT = """Copy from the text the sentences that help answer the question, \
word for word. If none does, reply NONE.

Question: {question}
Text: {text}
"""
SETTINGS = ("search", "k", "fetch_k", "lambda_mult")


@dataclass(frozen=True)
class Brad:
    index: Index
    genesets: bool = False
    search: str = DEFAULTS["search"]
    k: int = DEFAULTS["k"]
    fetch_k: int = DEFAULTS["fetch_k"]
    lambda_mult: float = DEFAULTS["lambda_mult"]
    multiquery: int = 0  # other phrasings to search with (0: off)
    compression: bool = False
    enrichr_library: str = "GO_Biological_Process_2021"
    enrichr_max_p: float = 0.5
    max_tokens: int = 400

    @classmethod
    def from_spec(cls, spec: dict, index: Index, genesets: bool) -> Brad:
        options = {k: spec[k] for k in SETTINGS if k in spec}
        for key in ("compression", "enrichr_library", "enrichr_max_p", "max_tokens"):
            if key in spec:
                options[key] = spec[key]
        multiquery = spec.get("multiquery", False)
        options["multiquery"] = 3 if multiquery is True else int(multiquery or 0)
        return cls(index=index, genesets=genesets, **options)

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        session = Session(question_id, question, model, result)
        try:
            chunks = self._retrieve(session, question)
            if self.genesets:
                return self._name(session, question, chunks, tools)
            prompt = QA_PROMPT.format(
                contract=CONTRACT, documents=_render(chunks), question=question
            )
            reply = session.ask(prompt, self.max_tokens).text
        except Stopped as stop:
            return result.finish(answer=None, error=stop.error)
        return result.finish(answer=final_answer(reply))

    def _retrieve(self, session: Session, question: str) -> list:
        queries = [question]
        if self.multiquery:
            prompt = MULTIQUERY_PROMPT.format(n=self.multiquery, question=question)
            reply = session.ask(prompt, 200).text
            queries += [q.strip(" -*0123456789.") for q in reply.splitlines() if q.strip()][
                : self.multiquery
            ]
        chunks, seen = [], set()
        for query in queries:
            for chunk in self.index.search(
                query, self.search, self.k, self.fetch_k, self.lambda_mult
            ):
                if chunk.chunk_id not in seen:
                    seen.add(chunk.chunk_id)
                    chunks.append(chunk)
        if self.compression:
            kept = []
            for chunk in chunks:
                prompt = COMPRESS_PROMPT.format(question=question, text=chunk.text)
                text = session.ask(prompt, 300).text.strip()
                if text and text.upper() != "NONE":
                    kept.append((chunk, text))
        else:
            kept = [(chunk, chunk.text) for chunk in chunks]
        # Recall needs chunks that name their gene: the default corpus's (one gene each).
        by_gene = self.index.settings["corpus"] == DEFAULT_CORPUS
        genes = set(question.split()) if self.genesets and by_gene else set()
        retrieved = {chunk.gene for chunk, _ in kept if chunk.gene}
        data = {
            "queries": queries,
            "search": self.search,
            "k": self.k,
            "index": self.index.key,
            "chunks": [
                {
                    "id": c.chunk_id,
                    "source": c.source,
                    "gene": c.gene,
                    "score": round(c.score, 6),
                    "text": text,
                }
                for c, text in kept
            ],
            "recall": len(genes & retrieved) / len(genes) if genes else None,
        }
        session.result.events.append(Event("retrieval", session.calls, data))
        return [(c, text) for c, text in kept]

    def _name(self, session: Session, question: str, chunks, tools) -> QuestionResult:
        genes = question.split()
        call = tools.enrichr_terms(
            genes, self.enrichr_library, self.enrichr_max_p, session.question_id, session.calls
        )
        session.result.events.append(Event("tool", session.calls, call.describe()))
        terms = call.text if not call.error else f"(none: {call.error})"
        prompt = GENESET_PROMPT.format(
            system=SYSTEM,
            genes=", ".join(genes),
            documents=_render(chunks),
            library=self.enrichr_library,
            max_p=self.enrichr_max_p,
            terms=terms,
        )
        reply = session.ask(prompt, self.max_tokens).text
        name = parse_process(reply)
        return session.result.finish(answer=name, error=None if name else "parse_error")


def _render(chunks) -> str:
    if not chunks:
        return "(none)"
    return "\n\n".join(f"Source: {_short(chunk.source)}\nContent: {text}" for chunk, text in chunks)


def _short(source: str) -> str:
    return re.sub(r"^.*/", "", source)


def prepare(context) -> Prepared:
    """BRAD on a question or a gene set: the run's model, the index the plan names,
    and for gene sets the gene-set tools (Enrichr) through the executor."""
    spec, task = context.run["method_spec"], context.task
    index = Index(task["index"], context.embeddings)
    genesets = task["benchmark"] == "genesets"
    tools = None
    if genesets:
        executor = ToolExecutor(geneset_settings(tool_settings(context.tools_mode)))
        tools = GeneSetTools(executor, GENESET_DATASET[task["task"]])
    info = {"prompt_version": PROMPT_VERSION, "index": index.key}
    return Prepared(Brad.from_spec(spec, index, genesets), context.model, tools, info=info)
