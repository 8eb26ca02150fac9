"""Model backends behind one small interface, selected by name.

A backend turns a :class:`CompletionRequest` into a :class:`Completion`. It raises
:class:`ContextLengthError` when the prompt does not fit (the method records a
``lengthError``), :class:`ModelMiss` when it has no answer at all (a replay of a
prompt that was never recorded) and :class:`ModelError` when the call failed for
good: the method records the error and moves on. A failure that says nothing about
the question (the server unreachable, timeouts, 5xx after retries) is
``transient``: the run job keeps no record of that question, so a rerun retries it,
and stops after a few in a row (:mod:`helixbench.runner`).

Backends: ``replay`` (recorded runs), ``imported`` (a published system's
outputs, read rather than computed), ``enrichment`` (no language model, for
enrichment baselines), ``openai`` (the OpenAI API or any
OpenAI-compatible server: vLLM, Ollama, llama.cpp) and ``transformers`` (a local
Hugging Face model). Every backend but replay answers through a response cache
(:mod:`helixbench.models.cache`).
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
    # The part of the prompt every question of the run shares (a method's header): a
    # local model may keep its key/value cache on disk and share it between jobs.
    shared_prefix: str | None = None
    # Function calling (chat backends that support it): the conversation so far and
    # the offered tools (OpenAI schemas); ``prompt`` then renders the conversation.
    messages: tuple[dict, ...] | None = None
    tools: tuple[dict, ...] | None = None


@dataclass(frozen=True)
class Completion:
    text: str
    cache: str | None = None  # "hit" / "miss" where the backend has a cache or a recording
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reused_tokens: int | None = None  # prompt tokens served from a reused key/value cache
    finish_reason: str | None = None  # "stop", "length", "tool_calls", ...
    tool_calls: tuple[dict, ...] | None = None  # [{"id", "name", "arguments"}] (function calling)
    # What the server said answered (its reply's ``model`` and ``system_fingerprint``).
    served: dict | None = None
    latency_s: float | None = None  # a cached answer: how long the call took when made


class ContextLengthError(Exception):
    """The model refused the prompt as longer than its context window."""

    def __init__(self, message: str, cache: str | None = None):
        super().__init__(message)
        self.cache = cache  # "hit" when the refusal itself was replayed from a recording


class ModelMiss(Exception):
    """The backend has no completion for this prompt (replay: not recorded)."""

    cache = "miss"


class ModelError(Exception):
    """The call failed for good (retries spent, timeout, bad request); recorded, not raised.

    ``transient``: the failure is the server's state, not the question's (unreachable,
    timed out, 5xx after retries): a rerun should try the question again.
    """

    cache = "miss"

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


def call_fields(completion: Completion | None, error: Exception | None) -> dict:
    """What a model event records of a call's outcome (every method's transcript)."""
    data = {
        "cache": completion.cache if completion is not None else getattr(error, "cache", None),
        "error": None if error is None else str(error),
        **{
            name: getattr(completion, name, None)
            for name in ("prompt_tokens", "completion_tokens", "reused_tokens", "finish_reason")
        },
    }
    if getattr(error, "transient", False):
        data["transient"] = True
    if completion is not None and completion.served:
        data["served"] = completion.served
    if completion is not None and completion.latency_s is not None:
        data["original_latency_s"] = completion.latency_s
    return data


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
    if backend == "imported":
        from .imported import ImportedModel

        return ImportedModel(spec)
    if backend == "enrichment":
        from .imported import EnrichmentModel

        return EnrichmentModel(spec)
    if backend == "openai":
        from .openai_api import OpenAIModel

        model = OpenAIModel(spec)
    elif backend == "transformers":
        from .local import TransformersModel

        model = TransformersModel(
            spec,
            converted=resources.get("model_dir"),
            threads=resources.get("threads"),
            prefix_cache=resources.get("prefix_cache"),
        )
    else:
        raise ValueError(f"unknown model backend {backend!r}; available: {', '.join(BACKENDS)}")
    if resources.get("cache") is None:
        return model
    from .cache import CachedModel, ModelCache

    return CachedModel(model, ModelCache(resources["cache"]))


BACKENDS = ("replay", "imported", "enrichment", "openai", "transformers")


def ask(model: Model, prompt: str, question: str, tag: str, max_tokens: int) -> str:
    """One greedy call outside any method's loop (a judge's grade, an extractor's
    answer), up to the first newline; ``tag`` names the call in logs and caches."""
    from ..digests import sha256_text

    request = CompletionRequest(
        prompt=prompt,
        stop=("\n",),
        max_tokens=max_tokens,
        temperature=0.0,
        question_id=f"{tag}:" + sha256_text(prompt)[:16],
        question=question,
        call_index=0,
    )
    return model.complete(request).text
