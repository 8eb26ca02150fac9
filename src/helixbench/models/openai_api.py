"""The ``openai`` backend: the OpenAI API, or any server that speaks it (vLLM,
Ollama, llama.cpp's server), through the official ``openai`` client (v1).

``api: completions`` sends the prompt with stop strings, as upstream's Codex run;
``api: chat`` sends the whole prompt as one user message, as upstream's chat
variant. The SDK's own retries are off: the calls that decide how many requests
are in flight own the retries (:mod:`.limits`), with one policy. 429, 408/409,
5xx, timeouts and dropped connections are retried ``retries`` times with
exponential backoff and jitter, honouring ``Retry-After``, the request's place
given up while it waits; 429, 502-504 and timeouts also tell the server's
:class:`~.limits.RequestLimit` that it is full. What the servers answer beyond that:

- a refusal of a prompt longer than the context window, recognised by each
  server's documented error type or wording (:data:`CONTEXT_REFUSALS`), is a
  :class:`ContextLengthError` (the method records ``lengthError``);
- llama.cpp's "Context size has been exceeded" (its slots share one context pool
  and concurrent long prompts overflow it) is a capacity signal: the window
  shrinks, and the call backs off and is retried (``capacity_retries``) holding a
  lock per server, so such retries go one at a time across every job of the machine;
- a reply with status 200 that is not a completion (not JSON, no choices, an
  error object) is retried like a 5xx, then a non-transient :class:`ModelError`;
- what still fails after the retries is a :class:`ModelError`, ``transient``
  where the server was unreachable, timed out or answered 429/5xx (the run job then
  keeps no record of the question, so a rerun retries it).

Requests in flight: at most ``concurrency`` to one server from all jobs of the
machine, by default what the server says it serves at once (llama.cpp's
``/props`` ``total_slots``), else :data:`DEFAULT_CONCURRENCY` (the OpenAI API:
:data:`OPENAI_CONCURRENCY`).

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
from .limits import limit_for

try:  # the HTTP library the openai client is built on (httpx2 from openai 3)
    from httpx2 import Response as HTTPResponse
except ImportError:
    from httpx import Response as HTTPResponse

log = logging.getLogger("helixbench.models")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Requests in flight where the config sets no `concurrency` and the server says
# nothing of its slots; the OpenAI API's own (its rate limits, not a number of
# slots, bound it: 429s then shrink the window).
DEFAULT_CONCURRENCY = 16
OPENAI_CONCURRENCY = 32
# Statuses retried; of them, those that say the server is full.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
OVERLOAD_STATUSES = frozenset({429, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0

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
        self.concurrency = spec.get("concurrency")
        self._lock_dir = Path(lock_dir) if lock_dir is not None else None
        # Capacity retries of every job calling this server take turns on one lock.
        self._lock_path = None
        if lock_dir is not None:
            name = hashlib.sha256(self.base_url.encode()).hexdigest()[:16]
            self._lock_path = Path(lock_dir) / f"endpoint-{name}.lock"
        self._limit = None
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
            max_retries=0,  # ours: one retry policy, that knows what is in flight
        )
        self._served: dict | None = None

    @property
    def supports_tools(self) -> bool:
        """Chat servers take tools through the API's function calling."""
        return self.api == "chat"

    @property
    def max_in_flight(self) -> int:
        """Requests this model may have in flight (the questions a run job keeps going)."""
        return self.limit.ceiling

    @property
    def limit(self):
        if self._limit is None:
            ceiling = int(self.concurrency or self._server_concurrency())
            self._limit = limit_for(self.base_url, ceiling, self._lock_dir)
        return self._limit

    def _server_concurrency(self) -> int:
        """What the server says it serves at once (llama.cpp's slots), else a default."""
        if self.base_url == DEFAULT_BASE_URL:
            return OPENAI_CONCURRENCY
        import urllib.request

        root = self.base_url.rstrip("/").removesuffix("/v1")
        try:
            with urllib.request.urlopen(f"{root}/props", timeout=5.0) as reply:
                slots = json.loads(reply.read()).get("total_slots")
        except (OSError, ValueError, AttributeError):  # no /props: not llama.cpp
            slots = None
        if isinstance(slots, int) and slots > 0:
            log.info("%s serves %d requests at once (/props total_slots)", self.base_url, slots)
            return slots
        return DEFAULT_CONCURRENCY

    def configured_identity(self) -> dict:
        """What the config says of the model: its identity but what the server serves."""
        identity = {
            "backend": "openai",
            "api": self.api,
            "model": self.model,
            "base_url": self.base_url,
        }
        if self.revision:
            identity["revision"] = self.revision
        return identity

    def identity(self) -> dict:
        identity = self.configured_identity()
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
        failed = malformed = capacity = 0
        limit = self.limit
        while True:
            started = time.monotonic()
            try:
                with limit.request():
                    if capacity:  # take turns with every job that hit the pool's limit
                        with self._turn():
                            completion = self._complete_once(request)
                    else:
                        completion = self._complete_once(request)
                limit.succeeded(time.monotonic() - started)
                return completion
            except MalformedReply as exc:
                malformed += 1
                if malformed > self.retries:
                    raise ModelError(f"malformed reply after {malformed} attempts: {exc}") from None
                self._sleep(malformed, f"malformed reply ({exc})")
            except self._openai.APIStatusError as exc:
                message, kind = _error_text(exc)
                lowered, status = message.lower(), exc.status_code
                if status in (400, 413, 500) and _is_context_refusal(lowered, kind):
                    raise ContextLengthError(_describe(status, message, kind)) from None
                if status == 400 and request.tools and "tool" in lowered:
                    raise ModelError(
                        f"{self.model} at {self.base_url} takes no tools (function calling): "
                        + _describe(status, message, kind)
                    ) from None
                if status >= 500 and any(s in lowered for s in CAPACITY_SIGNALS):
                    limit.overloaded()
                    capacity += 1
                    if capacity <= self.capacity_retries:
                        self._sleep(capacity, "the server's context pool is full")
                        continue
                elif status in RETRY_STATUSES:
                    if status in OVERLOAD_STATUSES:
                        limit.overloaded()
                    failed += 1
                    if failed <= self.retries:
                        wait = _retry_after(exc.response.headers)
                        self._sleep(failed, f"HTTP {status} from the server", wait)
                        continue
                transient = status >= 500 or status == 429
                raise ModelError(_describe(status, message, kind), transient=transient) from None
            except self._openai.APITimeoutError:
                limit.overloaded()
                failed += 1
                if failed > self.retries:
                    raise ModelError("timeout (retries spent)", transient=True) from None
                self._sleep(failed, "timeout")
            except self._openai.APIConnectionError as exc:
                failed += 1
                if failed > self.retries:
                    raise ModelError(f"connection failed: {exc}", transient=True) from None
                self._sleep(failed, "connection failed")

    def _sleep(self, attempt: int, why: str, retry_after: float | None = None) -> None:
        delay = min(60.0, self.backoff_s * 2 ** (attempt - 1))
        delay = delay / 2 + random.uniform(0, delay / 2)  # "equal jitter"
        if retry_after is not None:  # the server's word, within reason
            delay = max(delay, retry_after)
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
            "stop": list(request.stop),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        for name in request.unsent:  # (the server's defaults, as the peer leaves them)
            args.pop(name, None)
        if self.api == "chat":
            messages = list(request.messages or [{"role": "user", "content": request.prompt}])
            if request.tools:
                args["tools"] = list(request.tools)
                args.pop("stop", None)
                if request.parallel_tool_calls is not None:
                    args["parallel_tool_calls"] = request.parallel_tool_calls
            # (the model first, then the messages: the order the OpenAI clients send)
            path, body = "/chat/completions", {"model": self.model, "messages": messages, **args}
        else:
            path, body = "/completions", {"model": self.model, "prompt": request.prompt, **args}
        # The client's plain POST: its auth, base URL, timeout and error types, without
        # the typed parameters' transformation (3 ms a call, most of a call's CPU when
        # 64 are in flight on 2 cores); the body is JSON as we built it.
        raw = self._client.post(path, cast_to=HTTPResponse, body=body)
        return _parse_reply(raw.content, chat=self.api == "chat")


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


def _retry_after(headers) -> float | None:
    """Seconds a reply asks to wait (``retry-after-ms``, ``Retry-After`` in seconds or
    as a date); None where it asks nothing or more than :data:`MAX_RETRY_AFTER_S`."""
    from email.utils import parsedate_to_datetime

    wait = None
    if headers.get("retry-after-ms"):
        try:
            wait = float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    if wait is None and headers.get("retry-after"):
        value = headers["retry-after"]
        try:
            wait = float(value)
        except ValueError:
            try:
                wait = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                wait = None
    if wait is None or wait > MAX_RETRY_AFTER_S:
        return None
    return max(0.0, wait)


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
