"""A loopback server that speaks the OpenAI API (``/v1/completions`` and
``/v1/chat/completions``), for driving the real ``openai`` client in tests.

Its "model" answers from a script (or echoes the prompt's last line), honours
stop strings and ``max_tokens`` (whitespace tokens) as a real server does, refuses
prompts past a context limit with OpenAI's error shape, injects faults on request
(429 with Retry-After, 500, a stall, any raw reply), lists what it serves at
``GET /v1/models``, can hold a shared context pool that concurrent requests
overflow (as llama.cpp's slots do), and records every request it receives.
"""

from __future__ import annotations

import collections
import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass, field

from helixbench.loopback import LoopbackServer, QuietHandler


@dataclass
class OpenAIServerState:
    script: collections.deque = field(default_factory=collections.deque)
    context_chars: int = 100_000  # a prompt longer than this is refused
    faults: collections.deque = field(default_factory=collections.deque)
    received: list = field(default_factory=list)  # (path, body, headers) of each POST
    raw: list = field(default_factory=list)  # each POST's body as it came, bytes
    listings: int = 0  # GET /v1/models requests
    lock: threading.Lock = field(default_factory=threading.Lock)
    # GET /v1/models: the entries it lists (llama.cpp adds a volatile "created").
    served: list = field(default_factory=lambda: [{"id": "test-model", "owned_by": "test"}])
    fingerprint: str | None = None  # a reply's system_fingerprint
    no_tools: bool = False  # refuse requests that offer tools, as some servers do
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens
    # A shared context pool (llama.cpp's -c over its slots): prompt characters in
    # flight at once past it are refused with llama.cpp's 500; each request is held
    # ``hold_s`` seconds so that concurrent ones overlap.
    pool_chars: int | None = None
    hold_s: float = 0.0
    # An oracle: a prompt whose last message is a key here is answered "Answer: <value>"
    # (``answers``), or with the reply itself (``replies``: a reply to a prompt, or a
    # function of the prompt giving one or None).
    answers: dict = field(default_factory=dict)
    replies: dict | object = field(default_factory=dict)
    # A scripted chat model that reads its whole conversation (tool results too): a
    # function of the request's messages giving a reply, or ``{"tool_calls": [(name,
    # arguments)]}`` to call functions; None leaves the request to the rest.
    chat: object = None
    in_flight: int = 0
    overflows: int = 0
    # A served model's speed and size: each completion takes ``latency_s``; past
    # ``capacity`` requests at once the next is refused with 429 (``Retry-After``:
    # ``retry_after_s``, None: no header), and ``refuse_rate`` of the others are too
    # (a rate limit that bites at random, seeded). ``slots`` is what GET /props says
    # (llama.cpp's total_slots; None: no /props).
    latency_s: float = 0.0
    capacity: int | None = None
    retry_after_s: float | None = None
    refuse_rate: float = 0.0
    slots: int | None = None
    # A function-calling model: a chat request with tools and fewer than this many
    # tool results in its conversation calls ``esearch`` (a term of its own per
    # question and round, so every call is a request).
    tool_rounds: int = 0
    tool_name: str = "esearch"  # or "blast": a sequence of its own per question and round
    refused: int = 0  # 429s sent
    requests_in_flight: int = 0  # completions being served now
    peak_in_flight: int = 0
    in_flight_log: list = field(default_factory=list)  # (time, requests in flight)


class OpenAIServer(LoopbackServer):
    def __init__(self, state: OpenAIServerState | None = None):
        super().__init__(state or OpenAIServerState(), _Handler)
        self.base_url = f"{self.base}/v1"

    def mean_in_flight(self) -> float:
        """Requests in flight, averaged over the time from the first to the last."""
        log = sorted(self.state.in_flight_log)
        if len(log) < 2 or log[-1][0] == log[0][0]:
            return float(log[0][1]) if log else 0.0
        area = sum((b[0] - a[0]) * a[1] for a, b in zip(log, log[1:], strict=False))
        return area / (log[-1][0] - log[0][0])

    def chat_model(self) -> dict:
        """The config entry of a chat model this server serves (no key needed)."""
        return {
            "backend": "openai",
            "api": "chat",
            "model": "m",
            "base_url": self.base_url,
            "api_key_env": None,
        }


class _Handler(QuietHandler):
    state: OpenAIServerState
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers: a client reuses connections

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path.rstrip("/") == "/props":  # llama.cpp's server properties
            if self.state.slots is None:
                return self._send(404, {"error": {"message": "not found"}})
            return self._send(200, {"total_slots": self.state.slots})
        with self.state.lock:
            self.state.listings += 1
        if self.path.rstrip("/").endswith("/v1/models"):
            entries = [
                {**e, "object": "model", "created": int(time.time())} for e in self.state.served
            ]
            return self._send(200, {"object": "list", "data": entries})
        return self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        with self.state.lock:
            headers = {k.lower(): v for k, v in self.headers.items()}
            self.state.received.append((self.path, body, headers))
            self.state.raw.append(raw)
            fault = self.state.faults.popleft() if self.state.faults else None
        if fault:
            kind = fault[0]
            if kind == "stall":
                time.sleep(fault[1])
            elif kind == "429":
                error = {"message": "Rate limit reached", "type": "requests", "code": None}
                return self._send(429, {"error": error}, {"Retry-After": str(fault[1])})
            elif kind == "500":
                return self._send(500, {"error": {"message": "server error", "type": "server"}})
            elif kind == "raw":  # ("raw", status, body bytes): any reply at all
                return self._send_bytes(fault[1], fault[2])
        if self.state.latency_s or self.state.capacity or self.state.refuse_rate:
            return self._serve_timed(body)
        return self._complete(body)

    def _serve_timed(self, body: dict) -> None:
        """A completion that takes ``latency_s``, within the server's ``capacity``."""
        state = self.state
        with state.lock:
            full = state.capacity is not None and state.requests_in_flight >= state.capacity
            refused = full or (state.refuse_rate and _chance(state) < state.refuse_rate)
            if refused:
                state.refused += 1
            else:
                state.requests_in_flight += 1
                state.peak_in_flight = max(state.peak_in_flight, state.requests_in_flight)
                state.in_flight_log.append((time.monotonic(), state.requests_in_flight))
        if refused:
            error = {"message": "Rate limit reached: too many requests", "type": "requests"}
            headers = (
                {} if state.retry_after_s is None else {"Retry-After": str(state.retry_after_s)}
            )
            return self._send(429, {"error": error}, headers)
        try:
            time.sleep(state.latency_s)
            self._complete(body)
        finally:
            with state.lock:
                state.requests_in_flight -= 1
                state.in_flight_log.append((time.monotonic(), state.requests_in_flight))

    def _complete(self, body: dict) -> None:
        if body.get("tools") and self.state.no_tools:  # a server that takes no tools
            error = {
                "message": "tools are not supported by this model",
                "type": "invalid_request_error",
            }
            return self._send(400, {"error": error})
        if self.path.endswith("/chat/completions"):
            prompt = body["messages"][-1].get("content") or ""
        elif self.path.endswith("/completions"):
            prompt = body["prompt"]
        else:
            return self._send(404, {"error": {"message": "not found"}})
        if self.state.pool_chars is not None:
            with self.state.lock:
                full = self.state.in_flight + len(prompt) > self.state.pool_chars
                self.state.overflows += full
                if not full:
                    self.state.in_flight += len(prompt)
            if full:  # llama.cpp's words when its shared pool is exhausted
                error = {
                    "code": 500,
                    "message": "Context size has been exceeded.",
                    "type": "server_error",
                }
                return self._send(500, {"error": error})
            time.sleep(self.state.hold_s)
            with self.state.lock:
                self.state.in_flight -= len(prompt)
        if len(prompt) > self.state.context_chars:
            error = {
                "message": f"This model's maximum context length is {self.state.context_chars} "
                "tokens. However, you requested more.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
            return self._send(400, {"error": error})
        with self.state.lock:
            text = self.state.script.popleft() if self.state.script else None
        if text is None and self.state.chat is not None and "messages" in body:
            text = self.state.chat(body["messages"])
        if text is None and body.get("tools") and self.state.tool_rounds:
            rounds = sum(m.get("role") == "tool" for m in body["messages"])
            if rounds < self.state.tool_rounds:
                question = next(m["content"] for m in body["messages"] if m["role"] == "user")
                tag = hashlib.sha256(question.encode()).hexdigest()[:8]  # one per question
                term = f"{question.rstrip('?. ').rsplit(' ', 1)[-1]} {tag} {rounds}"
                arguments = {"db": "gene", "term": term}
                if self.state.tool_name == "blast":
                    sequence = "".join("ACGT"[int(c, 16) % 4] for c in tag * 4) + "ACGT" * rounds
                    arguments = {"sequence": sequence}
                text = {"tool_calls": [(self.state.tool_name, arguments)]}
        calls = None
        if isinstance(text, dict):  # a scripted function call: {"tool_calls": [(name, args)]}
            calls = [
                {
                    "id": f"call-{i}",
                    "type": "function",
                    "function": {
                        "name": name,
                        # a string is sent as it is (malformed arguments, say)
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
                for i, (name, arguments) in enumerate(text["tool_calls"])
            ]
            text = ""
        if text is None and prompt.strip() in self.state.answers:
            text = "Answer: " + self.state.answers[prompt.strip()]
        if text is None:
            replies = self.state.replies
            text = replies(prompt) if callable(replies) else replies.get(prompt.strip())
        if text is None:
            text = "Answer: " + prompt.rstrip("\n").rsplit("\n", 1)[-1]
        cap = body.get("max_completion_tokens") or body.get("max_tokens") or 16  # (newer name)
        text, finish = _decode(text, body.get("stop") or [], cap)
        if calls:
            finish = "tool_calls"
        usage = {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": len(text.split()),
            "total_tokens": len(prompt.split()) + len(text.split()),
        }
        if self.state.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.state.cached_tokens}
        if self.path.endswith("/chat/completions"):
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = calls
            choice = {"index": 0, "message": message, "finish_reason": finish}
            kind = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
            kind = "text_completion"
        reply = {
            "id": "cmpl-test",
            "object": kind,
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [choice],
            "usage": usage,
        }
        if self.state.fingerprint:
            reply["system_fingerprint"] = self.state.fingerprint
        self._send(200, reply)

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


_RANDOM = random.Random(0)


def _chance(state) -> float:  # under state.lock: one seeded sequence per process
    return _RANDOM.random()


def _decode(text: str, stop: list[str], max_tokens: int) -> tuple[str, str]:
    """What a server returns for ``text``: cut at the first stop string or the token cap."""
    cuts = [text.find(s) for s in stop if s in text]
    if cuts:
        return text[: min(cuts)], "stop"
    words = text.split(" ")
    if len(words) > max_tokens:
        return " ".join(words[:max_tokens]), "length"
    return text, "stop"
