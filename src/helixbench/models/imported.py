"""The ``imported`` backend: a published system whose answers are read from its
outputs (:mod:`helixbench.imports`); it names the system and answers no prompt."""

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
