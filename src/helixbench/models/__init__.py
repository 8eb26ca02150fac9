"""Model backends behind one small interface, selected by name.

A backend turns a :class:`CompletionRequest` into a :class:`Completion`. It raises
:class:`ContextLengthError` when the prompt does not fit (the method records a
``lengthError``) and :class:`ModelMiss` when it has no answer at all (a replay
of a prompt that was never recorded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CompletionRequest:
    prompt: str
    stop: tuple[str, ...]
    max_tokens: int
    temperature: float
    question_id: str  # which question the call belongs to, for logs and replay
    question: str
    call_index: int  # 0-based call number within the question


@dataclass(frozen=True)
class Completion:
    text: str
    cache: str | None = None  # "hit" / "miss" where the backend has a cache or a recording


class ContextLengthError(Exception):
    """The model refused the prompt as longer than its context window."""

    def __init__(self, message: str, cache: str | None = None):
        super().__init__(message)
        self.cache = cache  # "hit" when the refusal itself was replayed from a recording


class ModelMiss(Exception):
    """The backend has no completion for this prompt (replay: not recorded)."""

    cache = "miss"


class Model(Protocol):
    def identity(self) -> dict:
        """What exactly answers: backend, model id and revision or file digests."""

    def complete(self, request: CompletionRequest) -> Completion: ...


def create_model(spec: dict, **resources) -> Model:
    """The backend named by ``spec["backend"]``, built from the rest of ``spec``.

    ``resources`` carries what the plan resolved for this run; for replay,
    ``recorded`` (the recorded run's items) and ``recording_source`` (its URL and
    sha256, for the model's identity).
    """
    backend = spec.get("backend")
    if backend == "replay":
        from .replay import ReplayModel

        return ReplayModel.from_recording(
            resources["recorded"], spec, resources["recording_source"]
        )
    raise ValueError(f"unknown model backend {backend!r}; available: replay")
