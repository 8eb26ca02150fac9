"""Methods (solvers): how a question becomes model and tool calls, selected by ``kind``."""

from __future__ import annotations

from ..snapshots import Snapshot


def create_method(spec: dict, snapshot: Snapshot | None = None, imported=None):
    """The method ``spec["kind"]`` names, configured from ``spec``; ``imported``: the
    items of an imported source's task (kind ``imported``)."""
    if spec.get("kind") == "genegpt":
        from .genegpt import GeneGPT

        return GeneGPT.from_spec(spec, snapshot)
    if spec.get("kind") == "imported":
        from .imported import ImportedAnswers

        return ImportedAnswers(imported)
    raise ValueError(f"unknown method kind {spec.get('kind')!r}; available: genegpt, imported")
