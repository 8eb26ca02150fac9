"""Methods (solvers): how a question becomes model and tool calls, selected by ``kind``."""

from __future__ import annotations

from ..snapshots import Snapshot


def create_method(spec: dict, snapshot: Snapshot):
    """The method ``spec["kind"]`` names, configured from ``spec``."""
    if spec.get("kind") == "genegpt":
        from .genegpt import GeneGPT

        return GeneGPT.from_spec(spec, snapshot)
    raise ValueError(f"unknown method kind {spec.get('kind')!r}; available: genegpt")
