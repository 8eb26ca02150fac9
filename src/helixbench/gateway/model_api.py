"""The model gateway: an OpenAI-compatible server on 127.0.0.1 in front of the run's
model, for an agent to call as it would call OpenAI.

Routes (each also under Azure's ``/openai/deployments/<name>/...?api-version=``,
which openai<1 clients send with ``api_type: azure``):

- ``POST /v1/chat/completions``: ``messages`` with ``tools``/``tool_calls``, or the
  legacy ``functions``/``function_call`` (answered in kind), ``stop``,
  ``max_tokens``, ``temperature``;
- ``POST /v1/completions``: ``prompt`` (a string or a list of one), ``stop``,
  ``max_tokens`` (16 where unset, as the legacy API), ``temperature``;
- ``GET /v1/models``: the names the agent may ask for (any name is served by the
  run's model; the reply says which);
- ``POST /v1/embeddings``: where the gateway is given an encoder (RAGAs' similarity
  metrics: the ``embedding`` scorer's model), ``input`` a string or a list of them.

Every call is a :class:`~helixbench.models.CompletionRequest` to the run's model (so
through its response cache, its retries and its request limit) and a model event of
the session whose token the request carries as its API key. A context refusal is
answered as OpenAI answers one (400, ``context_length_exceeded``); a model that
failed for good as a 502; past the method's ``max_model_calls`` a 429 that says so;
a ``max_tokens`` that is not a whole number from 1 to the method's ceiling
(:data:`MAX_TOKENS_CEILING` unless it sets ``max_tokens_ceiling``) a 400 that says
why, before anything reaches the model (a paid API bills up to what is asked); a
body past the gateway's limit a 413 (:func:`.server.limit_body`).

Served by uvicorn (:mod:`.server`): each call waits for its model in the gateways'
thread pool, never holding a connection's thread.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlsplit

from .. import secrets
from ..models import (
    CompletionRequest,
    ContextLengthError,
    ModelError,
    call_fields,
    prompt_digest,
)
from . import CapReached, Sessions, bearer_token
from .server import AsgiServer, blocking, limit_body

_AZURE = re.compile(r"^/openai/deployments/[^/]+/(chat/completions|completions)$")
# The legacy completions API's default; chat's is the model's own (ours: 512).
COMPLETIONS_MAX_TOKENS = 16
CHAT_MAX_TOKENS = 512
# The most tokens an agent's call may ask for where its method sets no ceiling: above
# what today's chat models write in one reply for an answer, far below a bill no one
# meant to run up.
MAX_TOKENS_CEILING = 16_384
# A request body's limit at the gateway (a sandbox's door holds its agent to the
# method's own, ``limits.body_mb``).
BODY_LIMIT_BYTES = 8 << 20
# What a record keeps of one prompt an agent sent (a runaway agent's 20 MB prompt is
# described by its sha256 and length, and kept in part).
MAX_RECORDED_CHARS = 1_000_000


class ModelGateway(AsgiServer):
    """The model gateway of one run job, serving ``model`` to the ``sessions``."""

    def __init__(
        self,
        model,
        sessions: Sessions,
        served_name: str,
        encoder=None,
        max_tokens_ceiling: int = MAX_TOKENS_CEILING,
        body_limit: int = BODY_LIMIT_BYTES,
    ):
        """``encoder``: what answers ``/v1/embeddings`` (an object with ``encode(texts)``
        and ``label()``); None: the route is not served."""
        self.state = {
            "model": model,
            "sessions": sessions,
            "name": served_name,
            "encoder": encoder,
            "ceiling": max_tokens_ceiling,
        }
        app = limit_body(_Handler(self.state), body_limit, self._too_large)
        super().__init__(app)
        self.base_url = f"{self.base}/v1"

    def _too_large(self, scope, size: int) -> None:
        """A body past the limit: an event of the session it names, counted as a call."""
        from starlette.datastructures import Headers

        session = self.state["sessions"].find(bearer_token(Headers(scope=scope)))
        if session is None:
            return
        try:
            index = session.model_call(scope["path"])
        except CapReached:
            return
        error = f"request_too_large: a body of {size}+ bytes (HTTP 413)"
        data = {"route": scope["path"], "completion": None, "error": error}
        session.record("model", index, data, time.perf_counter())


def route_of(path: str) -> str | None:
    """``chat``, ``completions`` or ``embeddings`` for a path the gateway serves
    (OpenAI's or Azure's)."""
    path = urlsplit(path).path.rstrip("/")
    if path.endswith("/v1/chat/completions") or path == "/chat/completions":
        return "chat"
    if path.endswith("/v1/completions") or path == "/completions":
        return "completions"
    if path.endswith("/v1/embeddings") or path == "/embeddings":
        return "embeddings"
    match = _AZURE.match(path)
    if match:
        return "chat" if match.group(1).startswith("chat") else "completions"
    return None


def legacy_to_tools(body: dict) -> tuple[list, list | None, bool]:
    """A chat body's messages and tools in today's form, and whether it used the
    legacy ``functions``: assistant ``function_call`` turns become ``tool_calls``,
    ``function`` results become ``tool`` messages."""
    legacy = bool(body.get("functions"))
    tools = body.get("tools")
    if legacy:
        tools = [{"type": "function", "function": f} for f in body["functions"]]
    messages, pending = [], []
    for i, message in enumerate(body.get("messages") or []):
        message = dict(message)
        if message.get("role") == "assistant" and message.get("function_call"):
            call = message.pop("function_call")
            call_id = f"call-fn-{i}"
            pending.append(call_id)
            message["tool_calls"] = [{"id": call_id, "type": "function", "function": call}]
        elif message.get("role") == "function":
            message = {
                "role": "tool",
                "tool_call_id": pending.pop(0) if pending else f"call-fn-{i}",
                "content": message.get("content") or "",
            }
        messages.append(message)
    return messages, tools, legacy


def gateway_request(
    route: str, body: dict, question_id: str, question: str, index: int, ceiling: int | None = None
):
    """The request the run's model gets for an agent's OpenAI request body (``chat`` or
    ``completions``), and whether a chat body used the legacy ``functions``. A method
    that sends what a seed system sends builds its requests here too, so that the two
    share their response-cache entries. ``ceiling``: the most tokens a call may ask
    for (the default, where the body asks none, stays below it)."""
    legacy, chat = False, {}
    if route == "chat":
        messages, tools, legacy = legacy_to_tools(body)
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        chat = {"messages": tuple(messages), "tools": tuple(tools) if tools else None}
    else:
        prompt = body.get("prompt") or ""
        prompt = prompt[0] if isinstance(prompt, list) and prompt else prompt
    default_tokens = CHAT_MAX_TOKENS if route == "chat" else COMPLETIONS_MAX_TOKENS
    default_tokens = min(default_tokens, ceiling or default_tokens)
    request = CompletionRequest(
        prompt=str(prompt),
        stop=tuple(_stops(body.get("stop"))),
        # OpenAI's newer name first (LangChain's client sends it).
        max_tokens=int(
            body.get("max_completion_tokens") or body.get("max_tokens") or default_tokens
        ),
        temperature=float(body.get("temperature") or 0.0),
        question_id=question_id,
        question=question,
        call_index=index,
        **chat,
    )
    return request, legacy


def reply_message(completion, legacy: bool) -> dict:
    """The assistant message of a chat reply (a legacy ``function_call``, or
    ``tool_calls``)."""
    return _chat_reply("", completion, legacy)["choices"][0]["message"]


class _Handler:
    """The gateway's ASGI app."""

    def __init__(self, state: dict):
        self.state = state

    async def __call__(self, scope, receive, send) -> None:
        from starlette.requests import Request

        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        if request.method == "POST":
            response = await self._post(request)
        elif request.method in ("GET", "HEAD") and request.url.path.rstrip("/").endswith("/models"):
            entry = {"id": self.state["name"], "object": "model", "owned_by": "helixbench"}
            response = _json(200, {"object": "list", "data": [entry]})
        else:
            response = _error(404, "not found", "invalid_request_error")
        await response(scope, receive, send)

    async def _post(self, request):
        path = request.url.path
        route = route_of(path)
        if route == "embeddings" and self.state["encoder"] is not None:
            return await self._embeddings(request)
        if route is None or route == "embeddings":
            return _error(404, f"no route {path}", "invalid_request_error")
        session = self.state["sessions"].find(bearer_token(request.headers))
        if session is None:
            return _error(401, "unknown API key: use the one you were given", "auth_error")
        started = time.perf_counter()
        try:
            body = json.loads(await request.body() or b"{}")
        except (ValueError, RecursionError):
            body = None
        problem = malformed(route, body) or token_problem(body, self.state["ceiling"])
        try:
            index = session.model_call(path)
        except CapReached as exc:
            return _error(429, f"helixbench: the agent reached its cap of {exc}", "cap")
        if problem is not None:  # answered as OpenAI answers one, recorded, counted once
            data = {"route": path, "completion": None, "error": f"invalid_request: {problem}"}
            session.record("model", index, data, started)
            return _error(400, problem, "invalid_request_error")
        call, legacy = gateway_request(
            route, body, session.question_id, session.question, index, self.state["ceiling"]
        )
        completion, error = await blocking(self._complete, call)
        data = {
            "route": path,
            "prompt_sha256": prompt_digest(call),
            "prompt_chars": len(call.prompt),
            "prompt_increment": _increment(call),
            "completion": None if completion is None else completion.text,
            "tool_calls": list(completion.tool_calls or []) if completion else None,
            **call_fields(completion, error),
        }
        session.record("model", index, data, started)
        if isinstance(error, ContextLengthError):
            return _error(400, str(error), "invalid_request_error", "context_length_exceeded")
        if error is not None:
            return _error(502, secrets.redact(str(error)), "server_error")
        if route == "chat":
            return _json(200, _chat_reply(self.state["name"], completion, legacy))
        return _json(200, _completion_reply(self.state["name"], completion))

    def _complete(self, request: CompletionRequest):
        try:
            return self.state["model"].complete(request), None
        except (ContextLengthError, ModelError) as exc:
            return None, exc

    async def _embeddings(self, request):
        """The encoder's vectors of ``input``, recorded as an ``embedding`` event."""
        session = self.state["sessions"].find(bearer_token(request.headers))
        if session is None:
            return _error(401, "unknown API key: use the one you were given", "auth_error")
        started = time.perf_counter()
        try:
            body = json.loads(await request.body() or b"{}")
        except (ValueError, RecursionError):
            body = None
        texts = body.get("input") if isinstance(body, dict) else None
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(400, "'input' must be a string or a list of strings", "invalid")
        encoder = self.state["encoder"]
        vectors = await blocking(encoder.encode, texts)
        data = {"route": "/v1/embeddings", "texts": len(texts), "encoder": encoder.label()}
        session.record("embedding", len(session.events), data, started)
        rows = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return _json(
            200, {"object": "list", "data": rows, "model": encoder.label(), "usage": usage}
        )


def _error(status: int, message: str, kind: str, code: str | None = None):
    return _json(status, {"error": {"message": message, "type": kind, "code": code}})


def _json(status: int, payload: dict):
    from starlette.responses import Response

    # No secret the run holds reaches the agent, not even one a server echoed.
    data = secrets.redact_bytes(json.dumps(payload).encode())
    return Response(data, status_code=status, media_type="application/json")


def malformed(route: str, body) -> str | None:
    """What is wrong with a request body the gateway cannot serve; None if nothing."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    if route == "chat":
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return "'messages' must be a list of message objects"
        for key in ("tools", "functions"):
            if body.get(key) is not None and not isinstance(body[key], list):
                return f"'{key}' must be a list"
    else:
        prompt = body.get("prompt", "")
        if not isinstance(prompt, str | list) or (
            isinstance(prompt, list) and not all(isinstance(p, str) for p in prompt)
        ):
            return "'prompt' must be a string or a list of strings"
    for key, kind in (
        ("max_tokens", int),
        ("max_completion_tokens", int),
        ("temperature", int | float),
    ):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            return f"'{key}' must be a number"
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str | list):
        return "'stop' must be a string or a list of strings"
    return None


def token_problem(body, ceiling: int) -> str | None:
    """Why a request's ``max_tokens`` (or ``max_completion_tokens``) cannot be served:
    not a whole number from 1 to ``ceiling``; None where it can (or is not given)."""
    if not isinstance(body, dict):
        return None
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            return f"'{key}' must be a whole number"
        if not 1 <= value <= ceiling:
            return f"'{key}' must be from 1 to {ceiling} (this method's ceiling); {value} asked"
    return None


def _stops(stop) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else [str(s) for s in stop]


def _increment(request: CompletionRequest) -> str:
    """What the transcript shows of a call: the last message of a chat, else the
    prompt (an agent's prompts are its own), up to :data:`MAX_RECORDED_CHARS` (the
    event's ``prompt_sha256`` and ``prompt_chars`` describe the whole)."""
    if request.messages:
        last = request.messages[-1]
        text = f"[{last.get('role')}] {last.get('content') or ''}"
    else:
        text = request.prompt
    if len(text) <= MAX_RECORDED_CHARS:
        return text
    return f"{text[:MAX_RECORDED_CHARS]} [... {len(text) - MAX_RECORDED_CHARS} more characters]"


def _usage(completion) -> dict:
    prompt, done = completion.prompt_tokens or 0, completion.completion_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}


def _chat_reply(name: str, completion, legacy: bool) -> dict:
    message = {"role": "assistant", "content": completion.text or None}
    finish = completion.finish_reason or "stop"
    calls = list(completion.tool_calls or [])
    if calls and legacy:  # answered in kind: one function_call
        call = calls[0]
        message["function_call"] = {"name": call["name"], "arguments": call["arguments"]}
        finish = "function_call"
    elif calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ]
        finish = "tool_calls"
    return {
        "id": "chatcmpl-helixbench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(completion),
    }


def _completion_reply(name: str, completion) -> dict:
    choice = {
        "index": 0,
        "text": completion.text,
        "finish_reason": completion.finish_reason or "stop",
        "logprobs": None,
    }
    return {
        "id": "cmpl-helixbench",
        "object": "text_completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "usage": _usage(completion),
    }
