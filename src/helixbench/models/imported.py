"""Backends that name what answers but answer no prompt: ``imported`` (a published
system whose answers are read from its outputs, :mod:`helixbench.imports`) and
``enrichment`` (no language model: the ``gsea-top1`` method names a gene set by
enrichment analysis)."""

from __future__ import annotations

from ..imports import resolve_source
from . import CompletionRequest, ModelError


class ImportedModel:
    def __init__(self, spec: dict):
        self.source = resolve_source(spec["source"], "source")

    def identity(self) -> dict:
        return {
            "backend": "imported",
            "source": self.source["name"],
            "repo": self.source["repo"],
            "commit": self.source["commit"],
            "model": self.source.get("model"),
            "prompt": self.source.get("prompt"),
        }

    def complete(self, request: CompletionRequest):
        raise ModelError("an imported model answers no prompt: its answers are read")


class EnrichmentModel:
    def __init__(self, spec: dict):
        self.spec = spec

    def identity(self) -> dict:
        return {"backend": "enrichment", "tool": "g:Profiler g:GOSt (recorded or live)"}

    def complete(self, request: CompletionRequest):
        raise ModelError("the enrichment backend answers no prompt: it is no language model")
