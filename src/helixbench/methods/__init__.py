"""Methods (solvers): how a question becomes model and tool calls, selected by ``kind``."""

from __future__ import annotations

from ..snapshots import Snapshot

GENESET_KINDS = ("closed-book", "geneagent", "gsea-top1")
KINDS = ("genegpt", "imported", *GENESET_KINDS)


def create_method(
    spec: dict,
    snapshot: Snapshot | None = None,
    imported=None,
    recorded_terms=None,
    recorded_loop: dict | None = None,
):
    """The method ``spec["kind"]`` names, configured from ``spec``; ``imported``: the
    items of an imported source's task (kind ``imported``); ``recorded_terms``:
    question text -> recorded top enrichment term (``gsea-top1``); ``recorded_loop``:
    the GeneGPT loop settings a replayed recording was made with."""
    if spec.get("kind") == "genegpt":
        from .genegpt import GeneGPT

        return GeneGPT.from_spec(spec, snapshot, recorded_loop)
    if spec.get("kind") == "imported":
        from .imported import ImportedAnswers

        return ImportedAnswers(imported)
    if spec.get("kind") == "closed-book":
        from .genesets import ClosedBook

        return ClosedBook.from_spec(spec)
    if spec.get("kind") == "geneagent":
        from .genesets import GeneAgent

        return GeneAgent.from_spec(spec)
    if spec.get("kind") == "gsea-top1":
        from .genesets import GseaTop1

        return GseaTop1(recorded_terms or {})
    raise ValueError(f"unknown method kind {spec.get('kind')!r}; available: {', '.join(KINDS)}")
