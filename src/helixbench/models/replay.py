"""Replay: answer each prompt with the completion recorded for exactly that prompt.

Completions are keyed by the sha256 of the full prompt text, so a prompt that
differs by one byte from the recording is a miss: this is the fidelity check of
our prompt builder and loop. Where a recorded question ended in ``lengthError``
the refused prompt was never logged; the refusal is replayed at the call that
follows the question's last logged step.

A recording keeps no usage: a call's tokens are counted from the prompt and the
completion by the recorded model's own tokenizer where it can be had offline
(Codex: p50k_base, :mod:`.tokens`), and the identity names it.
"""

from __future__ import annotations

from ..digests import sha256_text
from ..sources.recordings import RECORDINGS, RecordedItem
from . import Backend, Completion, CompletionRequest, ContextLengthError, ModelMiss
from .tokens import TokenCounter, encoding_for


class ReplayModel(Backend):
    name = "replay"
    recorded = True

    def __init__(self, items: list[RecordedItem], identity: dict):
        encoding = encoding_for(identity.get("model", ""))
        self._tokens = TokenCounter(encoding) if encoding else None
        self._identity = identity | ({"tokenizer": encoding.name} if encoding else {})
        self._by_prompt: dict[str, dict[str, str]] = {}  # key -> {question: completion}
        self._refusals: dict[str, int] = {}  # question -> call index that was refused
        for item in items:
            for prompt, completion in item.steps:
                self._by_prompt.setdefault(sha256_text(prompt), {})[item.question] = completion
            if item.final_text == "lengthError":
                self._refusals[item.question] = len(item.steps)

    @classmethod
    def create(cls, spec: dict, recorded, recording_source: dict, **_) -> ReplayModel:
        return cls.from_recording(recorded, spec, recording_source)

    @classmethod
    def from_recording(cls, items: list[RecordedItem], spec: dict, source: dict) -> ReplayModel:
        """``source``: the recorded file's ``url`` and pinned ``sha256``."""
        identity = {
            "backend": "replay",
            "recording": spec["recording"],
            "model": RECORDINGS[spec["recording"]]["model"],
            "file": source["url"],
            "sha256": source["sha256"],
        }
        return cls(items, identity)

    def identity(self) -> dict:
        return dict(self._identity)

    def complete(self, request: CompletionRequest) -> Completion:
        recorded = self._by_prompt.get(sha256_text(request.prompt), {})
        if request.question in recorded:
            return self._counted(request.prompt, recorded[request.question])
        if len(set(recorded.values())) == 1:  # same prompt logged under another question
            return self._counted(request.prompt, next(iter(recorded.values())))
        if self._refusals.get(request.question) == request.call_index:
            raise ContextLengthError("recorded context-length refusal", cache="hit")
        raise ModelMiss(
            f"no recorded completion for this prompt (sha256 {sha256_text(request.prompt)[:16]}, "
            f"call {request.call_index} of {request.question_id})"
        )

    def _counted(self, prompt: str, completion: str) -> Completion:
        if self._tokens is None:  # no figure rather than a false zero
            return Completion(completion, cache="hit")
        return Completion(
            completion,
            cache="hit",
            prompt_tokens=self._tokens(prompt),
            completion_tokens=self._tokens(completion),
        )
