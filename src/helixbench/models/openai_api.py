"""The ``openai`` backend: the OpenAI API, or any server that speaks it (vLLM,
Ollama, llama.cpp's server), through the official ``openai`` client (v1).

``api: completions`` sends the prompt with stop strings, as upstream's Codex run;
``api: chat`` sends the whole prompt as one user message, as upstream's chat
variant. The client retries 429, 5xx and connection errors with exponential
backoff and honours ``Retry-After``. What the servers answer beyond that:

- a refusal of a prompt longer than the context window, recognised by each
  server's documented error type or wording (:data:`CONTEXT_REFUSALS`), is a
  :class:`ContextLengthError` (the method records ``lengthError``);
- llama.cpp's "Context size has been exceeded" (its slots share one context pool
  and concurrent long prompts overflow it) is a capacity signal: the call backs
  off and is retried holding a lock per server, so such retries go one at a time
  across every job of the machine;
- a reply with status 200 that is not a completion (not JSON, no choices, an
  error object) is retried like a 5xx, then a non-transient :class:`ModelError`;
- what still fails after the retries is a :class:`ModelError`, ``transient``
  where the server was unreachable, timed out or answered 5xx (the run job then
  keeps no record of the question, so a rerun retries it).

The model's identity includes what the server says it serves (``GET /v1/models``,
its stable fields), so a server that swapped its model behind the same URL gets
no answer cached from the old one. Each reply's ``model`` and
``system_fingerprint`` are kept with its completion. The API key is read from the
environment variable the config names, registered as a secret (redacted from
every text stored or shown) and goes nowhere else.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import random
import re
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from .. import secrets
from . import Backend, Completion, CompletionRequest, ContextLengthError, ModelError

log = logging.getLogger("helixbench.models")

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# How servers refuse a prompt longer than their context window: the error's type or
# code, else its wording (lower case).
CONTEXT_REFUSAL_TYPES = frozenset(
    {
        "context_length_exceeded",  # OpenAI (code)
        "exceed_context_size_error",  # llama.cpp's server (type)
    }
)
CONTEXT_REFUSALS = (
    # OpenAI, vLLM: "This model's maximum context length is N tokens. However, ..."
    "maximum context length",
    # vLLM: "The decoder prompt (length N) is longer than the maximum model length of M"
    "maximum model length",
    # llama.cpp: "request (N tokens) exceeds the available context size (M tokens), ..."
    "exceeds the available context size",
    # Ollama, where it refuses instead of truncating
    "input exceeds context length",
    "input length exceeds the context length",
    "context length exceeded",
)
# llama.cpp, when concurrent requests overflow the context pool its slots share.
CAPACITY_SIGNALS = ("context size has been exceeded",)
# Fields of a /v1/models entry that say which model is served (``created`` is the time
# of the request on llama.cpp, vLLM's ``permission`` holds fresh ids: left out).
SERVED_FIELDS = ("id", "owned_by", "root", "parent", "max_model_len", "meta")


class MalformedReply(Exception):
    """A 200 reply that is not a completion."""


class OpenAIModel(Backend):
    name = "openai"

    @classmethod
    def create(cls, spec: dict, lock_dir: Path | None = None, **_) -> OpenAIModel:
        return cls(spec, lock_dir)

    @classmethod
    def chats(cls, spec: dict) -> bool:
        return spec.get("api", "completions") == "chat"

    @classmethod
    def endpoint(cls, spec: dict) -> str:
        """``endpoint_<host>_<port>``: one Snakemake resource per server."""
        netloc = urlsplit(spec.get("base_url") or DEFAULT_BASE_URL).netloc
        return "endpoint_" + re.sub(r"[^A-Za-z0-9]+", "_", netloc).strip("_").lower()

    def __init__(self, spec: dict, lock_dir: Path | None = None):
        import openai

        self._openai = openai
        self.api = spec.get("api", "completions")
        self.model = spec["model"]
        self.base_url = spec.get("base_url") or DEFAULT_BASE_URL
        self.revision = spec.get("revision")
        self.retries = int(spec.get("retries", 4))
        self.capacity_retries = int(spec.get("capacity_retries", 6))
        self.backoff_s = float(spec.get("backoff_s", 1.0))
        self.check_served = spec.get("check_served", True)
        # Capacity retries of every job calling this server take turns on one lock.
        self._lock_path = None
        if lock_dir is not None:
            name = hashlib.sha256(self.base_url.encode()).hexdigest()[:16]
            self._lock_path = Path(lock_dir) / f"endpoint-{name}.lock"
        key_env = spec.get("api_key_env", "OPENAI_API_KEY")
        key = os.environ.get(key_env) if key_env else None
        if not key:
            if self.base_url == DEFAULT_BASE_URL:
                raise ModelError(f"set the environment variable {key_env} to use the OpenAI API")
            key = "not-needed"  # a local server that checks no key
        else:
            secrets.register(key)
        self._client = openai.OpenAI(
            api_key=key,
            base_url=self.base_url,
            timeout=spec.get("timeout_s", 120.0),
            max_retries=self.retries,
        )
        self._served: dict | None = None

    @property
    def supports_tools(self) -> bool:
        """Chat servers take tools through the API's function calling."""
        return self.api == "chat"

    def identity(self) -> dict:
        identity = {
            "backend": "openai",
            "api": self.api,
            "model": self.model,
            "base_url": self.base_url,
        }
        if self.revision:
            identity["revision"] = self.revision
        if self.check_served:
            identity["served"] = self.served()
        return identity

    def served(self) -> dict:
        """What the server says it serves: the stable fields of its ``/v1/models`` entry
        for our model (or its only entry: llama.cpp serves one model whatever the name
        asked). Asked once per process; an unreachable server is a transient error."""
        if self._served is None:
            try:
                listed = self._client.models.list()
                entries = [e.model_dump() if hasattr(e, "model_dump") else dict(e) for e in listed]
            except self._openai.APIStatusError as exc:
                self._served = {"unavailable": f"HTTP {exc.status_code}"}
                return self._served
            except (self._openai.APIConnectionError, self._openai.APITimeoutError) as exc:
                raise ModelError(f"{self.base_url}/models: {exc}", transient=True) from None
            chosen = [e for e in entries if e.get("id") == self.model]
            if not chosen and len(entries) == 1:
                chosen = entries
            if not chosen:
                self._served = {"unavailable": f"{self.model!r} is not listed"}
            else:
                self._served = {k: chosen[0][k] for k in SERVED_FIELDS if k in chosen[0]}
        return self._served

    def complete(self, request: CompletionRequest) -> Completion:
        malformed = capacity = 0
        while True:
            try:
                if capacity:  # take turns with every job that hit the pool's limit
                    with self._turn():
                        return self._complete_once(request)
                return self._complete_once(request)
            except MalformedReply as exc:
                malformed += 1
                if malformed > self.retries:
                    raise ModelError(f"malformed reply after {malformed} attempts: {exc}") from None
                self._sleep(malformed, f"malformed reply ({exc})")
            except self._openai.APIStatusError as exc:
                message, kind = _error_text(exc)
                lowered = message.lower()
                if exc.status_code in (400, 413, 500) and _is_context_refusal(lowered, kind):
                    raise ContextLengthError(_describe(exc.status_code, message, kind)) from None
                if exc.status_code == 400 and request.tools and "tool" in lowered:
                    raise ModelError(
                        f"{self.model} at {self.base_url} takes no tools (function calling): "
                        + _describe(exc.status_code, message, kind)
                    ) from None
                if exc.status_code >= 500 and any(s in lowered for s in CAPACITY_SIGNALS):
                    capacity += 1
                    if capacity <= self.capacity_retries:
                        self._sleep(capacity, "the server's context pool is full")
                        continue
                transient = exc.status_code >= 500 or exc.status_code == 429
                raise ModelError(
                    _describe(exc.status_code, message, kind), transient=transient
                ) from None
            except self._openai.APITimeoutError:
                raise ModelError("timeout (retries spent)", transient=True) from None
            except self._openai.APIConnectionError as exc:
                raise ModelError(f"connection failed: {exc}", transient=True) from None

    def _sleep(self, attempt: int, why: str) -> None:
        delay = min(60.0, self.backoff_s * 2 ** (attempt - 1))
        delay = delay / 2 + random.uniform(0, delay / 2)
        log.info("%s; retry %d in %.1f s", why, attempt, delay)
        time.sleep(delay)

    @contextmanager
    def _turn(self):
        if self._lock_path is None:
            yield
            return
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _complete_once(self, request: CompletionRequest) -> Completion:
        args = {
            "model": self.model,
            "stop": list(request.stop),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if self.api == "chat":
            messages = list(request.messages or [{"role": "user", "content": request.prompt}])
            if request.tools:
                args["tools"] = list(request.tools)
                args.pop("stop")
                if request.parallel_tool_calls is not None:
                    args["parallel_tool_calls"] = request.parallel_tool_calls
            raw = self._client.chat.completions.with_raw_response.create(messages=messages, **args)
        else:
            raw = self._client.completions.with_raw_response.create(prompt=request.prompt, **args)
        return _parse_reply(raw.http_response.content, chat=self.api == "chat")


def _parse_reply(content: bytes, chat: bool) -> Completion:
    """A completion from a 200 reply's body; MalformedReply if it holds none."""
    try:
        reply = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedReply(f"not JSON ({exc.msg if hasattr(exc, 'msg') else exc})") from None
    if not isinstance(reply, dict):
        raise MalformedReply(f"a JSON {type(reply).__name__}, not an object")
    if "error" in reply and not reply.get("choices"):
        error = reply["error"]
        text = error.get("message") if isinstance(error, dict) else error
        raise MalformedReply(f"an error object with status 200: {text}")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedReply("no choices")
    choice = choices[0]
    calls = None
    if chat:
        message = choice.get("message")
        if not isinstance(message, dict):
            raise MalformedReply("a chat choice without a message")
        text = message.get("content") or ""
        if message.get("tool_calls"):
            try:
                calls = tuple(
                    {
                        "id": c["id"],
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                    }
                    for c in message["tool_calls"]
                )
            except (KeyError, TypeError) as exc:
                raise MalformedReply(f"a tool call without {exc}") from None
    else:
        text = choice.get("text")
        if text is None:
            raise MalformedReply("a choice without text")
    usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    served = {k: reply[k] for k in ("model", "system_fingerprint") if reply.get(k)}
    return Completion(
        text,
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        reused_tokens=cached,
        finish_reason=choice.get("finish_reason"),
        tool_calls=calls,
        served=served or None,
    )


def _is_context_refusal(lowered: str, kind: set[str]) -> bool:
    return bool(kind & CONTEXT_REFUSAL_TYPES) or any(m in lowered for m in CONTEXT_REFUSALS)


def _error_text(exc) -> tuple[str, set[str]]:
    """The message of an error reply, and its type and code (the words that classify it)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    if isinstance(error, dict):
        kind = {str(error[k]).lower() for k in ("type", "code") if error.get(k)}
        if error.get("message"):
            return secrets.redact(str(error["message"])), kind
    elif isinstance(error, str):
        return secrets.redact(error), set()
    return secrets.redact(str(getattr(exc, "message", exc))), set()


def _describe(status: int, message: str, kind: set[str]) -> str:
    """``HTTP 400 (type): message``: the status once, the error's names where given."""
    names = sorted(k for k in kind if not k.isdigit())
    return f"HTTP {status}" + (f" ({', '.join(names)})" if names else "") + f": {message}"
