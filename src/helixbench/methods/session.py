"""A question's calls, shared by the methods that make their own (the gene-set
kinds, GeneAgent as upstream wrote it, BRAD): :class:`Session` numbers each model
and tool call and logs it as an event, :class:`Stopped` ends the question where the
model failed for good, and :func:`parse_verdict` reads a verification report."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from ..models import (
    CompletionRequest,
    ContextLengthError,
    Model,
    ModelError,
    ModelMiss,
    call_fields,
    prompt_digest,
)
from ..transcripts import Event, QuestionResult


def parse_verdict(report: str | None) -> str:
    """The verdict a verification report states; ``unknown`` where it states none."""
    text = (report or "").lower()
    if "partially supported" in text or "partially support" in text:
        return "partially supported"
    if re.search(r"\b(refuted|not supported|unsupported|does not support)\b", text):
        return "refuted"
    if re.search(r"\bsupport(ed|s)?\b", text):
        return "supported"
    return "unknown"


class Stopped(Exception):
    """The model failed for good; the record ends with this error."""

    def __init__(self, error: str):
        super().__init__(error)
        self.error = error


@dataclass
class Session:
    """One gene set's calls: numbers them and logs each as an event."""

    question_id: str
    question: str
    model: Model
    result: QuestionResult
    calls: int = 0

    def ask(self, prompt: str, max_tokens: int, stop=(), messages=None, tools=None):
        request = CompletionRequest(
            prompt=prompt,
            stop=tuple(stop),
            max_tokens=max_tokens,
            temperature=0.0,
            question_id=self.question_id,
            question=self.question,
            call_index=self.calls,
            messages=tuple(messages) if messages else None,
            tools=tuple(tools) if tools else None,
        )
        return self.send(request, prompt if not messages else last_message(messages))

    def send(self, request: CompletionRequest, increment: str, continues: bool = False):
        """The model's completion of ``request``, logged as the next model event
        (``increment``: what the prompt adds); Stopped where the model failed."""
        started = time.perf_counter()
        error, completion = None, None
        try:
            completion = self.model.complete(request)
        except (ContextLengthError, ModelMiss, ModelError) as exc:
            error = exc
        data = {
            "prompt_sha256": prompt_digest(request),
            "prompt_chars": len(request.prompt),
            "prompt_increment": increment,
            "continues_previous": continues,
            "completion": completion.text if completion else None,
            "tool_calls": list(completion.tool_calls or []) if completion else None,
            **call_fields(completion, error),
        }
        self.result.events.append(Event("model", self.calls, data, time.perf_counter() - started))
        self.calls += 1
        if error is not None:
            kind = "lengthError" if isinstance(error, ContextLengthError) else "model_error"
            raise Stopped(kind)
        return completion

    def tool(self, tools, name: str, arguments: dict):
        started = time.perf_counter()
        call = tools.call(name, arguments, self.question_id, self.calls)
        self.result.events.append(
            Event("tool", self.calls, call.describe(), time.perf_counter() - started)
        )
        return call


def last_message(messages) -> str:
    last = messages[-1]
    return f"[{last['role']}] {last.get('content') or ''}"
