"""Which upstream files hold what runs are judged by: a benchmark's questions and
answers, a recorded run (its prompts hold the gold), a published system's outputs.
An agent is never shown one (:mod:`helixbench.gateway.sandbox.view`)."""

from __future__ import annotations

from ..benchmarks import question_files
from ..datasets.upstream import UpstreamFile
from .published import SOURCES
from .recordings import RECORDINGS


def answer_key(relpath: str) -> str | None:
    """What the upstream file ``relpath`` (``<host>/<path>``) holds of a benchmark's
    answers, or None."""
    if relpath in {f.relpath for f in question_files()}:
        return "a benchmark's questions and answers"
    for name, recording in RECORDINGS.items():
        for folder in recording["dirs"].values():
            if relpath.startswith(_prefix(recording, folder)):
                return f"recorded runs ({name})"
    for name, source in SOURCES.items():
        for pattern in source.get("files", {}).values():
            patterns = pattern.values() if isinstance(pattern, dict) else [pattern]
            for each in patterns:
                folder = each.split("{", 1)[0].rsplit("/", 1)[0] + "/"
                if relpath.startswith(_prefix(source, folder)):
                    return f"a published system's outputs ({name})"
    return None


def _prefix(repository: dict, folder: str) -> str:
    probe = UpstreamFile(repository["repo"], repository["commit"], folder + "x", None, "")
    return probe.relpath[:-1]
