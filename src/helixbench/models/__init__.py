"""Model backends behind one small interface, selected by name.

A backend turns a :class:`CompletionRequest` into a :class:`Completion`. It raises
:class:`ContextLengthError` when the prompt does not fit (the method records a
``lengthError``), :class:`ModelMiss` when it has no answer at all (a replay of a
prompt that was never recorded) and :class:`ModelError` when the call failed for
good: the method records the error and moves on. A failure that says nothing about
the question (the server unreachable, timeouts, 5xx after retries) is
``transient``: the run job keeps no record of that question, so a rerun retries it,
and stops after a few in a row (:mod:`helixbench.run.shard`).

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
    # False: at most one tool call a turn (the API's ``parallel_tool_calls``); None: the
    # server's default.
    parallel_tool_calls: bool | None = None
    # Generation parameters left to the server's defaults, not sent (of "stop",
    # "max_tokens", "temperature"): a peer harness that sends none of them is asked as it
    # asks (inspect_evals' LAB-Bench). A backend that runs the model itself still uses
    # the values above.
    unsent: tuple[str, ...] = ()


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


def prompt_digest(request: CompletionRequest) -> str:
    """The sha256 of what a call shows the model: the prompt, or a chat's messages and
    tools. Every model event carries it (``prompt_sha256``), so two runs' calls can be
    paired by what they asked, whichever ran first."""
    from ..digests import sha256_json, sha256_text

    if request.messages:
        return sha256_json({"messages": list(request.messages), "tools": list(request.tools or [])})
    return sha256_text(request.prompt)


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


# Settings of a served model that shape no record: how many requests it takes at once.
# They reach run jobs through this variable (a job's spec leaves them out), so tuning
# them reruns no job and keeps every shard's partial records.
SERVING_ENV = "HELIXBENCH_SERVING"
SERVING_SETTINGS = ("concurrency",)


def serving_settings(model_name: str) -> dict:
    """The serving settings the workflow passed down for the model ``model_name``."""
    import json
    import os

    return json.loads(os.environ.get(SERVING_ENV) or "{}").get(model_name, {})


class Model(Protocol):
    """A language model: it answers prompts."""

    def identity(self) -> dict:
        """What exactly answers: backend, model id and revision or file digests."""

    def complete(self, request: CompletionRequest) -> Completion: ...


class Backend:
    """What a backend tells the rest of helixbench about itself. The plan, the runner
    and the report ask these, so nothing outside ``models/`` tests a backend's name;
    each backend class subclasses this and says what differs."""

    name = ""
    # Answers prompts (a Model). The others answer no prompt: an AnswerSource.
    answers_prompts = True
    # Answers from a recorded run: its runs cover the tasks the recording holds, each
    # task answered from its own recorded file, and its tool calls are replayed.
    recorded = False
    # A published system's outputs, read: its runs take the method ``imported``.
    published = False
    # Runs the model in the job's own process (PyTorch): its jobs need the local
    # stack (workflow/envs/local.yaml under --sdm conda).
    in_process = False

    @classmethod
    def threads(cls, spec: dict) -> int:
        """CPU threads a run job of this model asks Snakemake for."""
        return 1

    @classmethod
    def gpus(cls, spec: dict) -> int:
        """GPUs a run job of this model asks the cluster for."""
        return 0

    @classmethod
    def endpoint(cls, spec: dict) -> str | None:
        """The global resource that caps the jobs calling this model's server at once."""
        return None

    @classmethod
    def converted_dir(cls, spec: dict) -> str | None:
        """Where a prepared (converted) copy of the model lies, for its run jobs."""
        return None

    @classmethod
    def chats(cls, spec: dict) -> bool:
        """Whether the model takes a conversation (and tools: function calling)."""
        return False


class AnswerSource(Backend):
    """A backend that answers no prompt (a published system's outputs, enrichment
    analysis): methods read or compute its answers; it only says what it is."""

    answers_prompts = False

    def identity(self) -> dict:
        raise NotImplementedError


# Backend name -> (module, class), imported when asked for.
_BACKENDS = {
    "replay": ("replay", "ReplayModel"),
    "imported": ("imported", "ImportedSource"),
    "enrichment": ("imported", "EnrichmentSource"),
    "openai": ("openai_api", "OpenAIModel"),
    "transformers": ("local", "TransformersModel"),
}
BACKENDS = tuple(_BACKENDS)


def backend(name: str) -> type[Backend]:
    """The backend class ``name`` names (its facts; :func:`create_model` builds one)."""
    import importlib

    try:
        module, cls = _BACKENDS[name]
    except KeyError:
        raise ValueError(
            f"unknown model backend {name!r}; available: {', '.join(BACKENDS)}"
        ) from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def create_model(spec: dict, **resources) -> Model | AnswerSource:
    """The backend named by ``spec["backend"]``, built from the rest of ``spec``.

    ``resources`` carries what the plan resolved for this run; for replay,
    ``recorded`` (the recorded run's items) and ``recording_source`` (its URL and
    sha256, for the model's identity); for local models, ``model_dir``, ``threads``
    and ``prefix_cache``; ``cache``: the response cache every language model but
    replay answers through; ``name``: the config's name for the model, kept in it.
    """
    cls = backend(spec.get("backend"))
    model = cls.create(spec, **resources)
    if resources.get("cache") is None or not cls.answers_prompts or cls.recorded:
        return model
    from .cache import CachedModel, ModelCache

    return CachedModel(model, ModelCache(resources["cache"]), resources.get("name"))


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
