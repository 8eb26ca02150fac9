"""Backends that answer no prompt, only say what answers: ``imported`` (a published
system whose answers are read from its outputs, :mod:`helixbench.sources.published`) and
``enrichment`` (no language model: the ``gsea-top1`` method names a gene set by
enrichment analysis)."""

from __future__ import annotations

from ..sources.published import resolve_source
from . import AnswerSource


class ImportedSource(AnswerSource):
    name = "imported"
    published = True

    def __init__(self, spec: dict):
        self.source = resolve_source(spec["source"], "source")

    @classmethod
    def create(cls, spec: dict, **_) -> ImportedSource:
        return cls(spec)

    def identity(self) -> dict:
        return {
            "backend": "imported",
            "source": self.source["name"],
            "repo": self.source["repo"],
            "commit": self.source["commit"],
            "model": self.source.get("model"),
            "prompt": self.source.get("prompt"),
        }


class EnrichmentSource(AnswerSource):
    name = "enrichment"

    def __init__(self, spec: dict):
        self.spec = spec

    @classmethod
    def create(cls, spec: dict, **_) -> EnrichmentSource:
        return cls(spec)

    def identity(self) -> dict:
        return {"backend": "enrichment", "tool": "g:Profiler g:GOSt (recorded or live)"}
