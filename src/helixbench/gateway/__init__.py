"""Gateways that put an agent someone else wrote on the board unchanged.

A run of ``kind: agent`` starts, on 127.0.0.1, a **model gateway**
(:mod:`.model_api`: OpenAI-compatible chat, legacy completions and functions, the
Azure deployment routes, ``/v1/models``) whose every call is served by the run's
model through the response cache, the cost ledger, the retries and the request
limit; and a **tool gateway** (:mod:`.tool_api`: NCBI E-utils and BLAST, g:Profiler,
Enrichr, PubTator under their own paths, and NCBI's functions over MCP,
:mod:`.mcp_tools`) whose every request goes through the tool executor (allowlist,
shared budgets, cache, modes, the seeded 2023 replies). An agent that hard-codes
the public hosts reaches the tool gateway without an edit: in its sandbox
(:mod:`.sandbox`) those hosts resolve to a front that passes its requests to the
gateway, and nothing else is reachable. Without a sandbox (``sandbox:
cooperative``) the ``sitecustomize`` in ``agent_site/`` (first on the agent's
``PYTHONPATH``) sends ``urllib``'s and ``requests``' calls to the gateway and
refuses any other socket.

Each question gets a :class:`Session`, named by a token the agent is given as its
API key (and, for tools, in a header the ``sitecustomize`` adds or a ``/s/<token>/``
path prefix): its model and tool calls become the question's events, in order,
counted against the method's caps. The real API key stays with the run's model;
the agent only ever sees its token. A request that comes through a sandbox's door
is its sandbox's question's, whatever token it names (:data:`DOOR_HEADER`, set by the
door alone).
"""

from __future__ import annotations

import secrets as _secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from ..transcripts import Event

# Shaped like an OpenAI key: clients that check a key's form take it (BRAD's
# load_openai asks for one that starts with "sk-" before it will start).
TOKEN_PREFIX = "sk-helixbench-agent-"
TOKEN_HEADER = "X-Helixbench-Session"
# The token of the sandbox a request came through, written by its door (which drops
# any the agent sent): a sandboxed agent acts only as its own question.
DOOR_HEADER = "X-Helixbench-Door"
# Refusals a session's own process may report (the cooperative sitecustomize's); a
# sandboxed session's are reported by its first process alone, over a channel of its own.
MAX_REPORTED_COUNT = 10**9


class CapReached(Exception):
    """A session's model or tool calls reached the method's cap."""


@dataclass
class Session:
    """One question's calls through the gateways (or one long-lived agent's, switched
    from question to question)."""

    token: str
    question_id: str
    question: str
    max_model_calls: int
    max_tool_calls: int
    # True where the agent runs without a sandbox (cooperative): what it reports of
    # itself (a refused socket) is all there is, so it may report; never in a sandbox.
    self_reported: bool = False
    events: list = field(default_factory=list)
    routes: Counter = field(default_factory=Counter)
    model_calls: int = 0
    tool_calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, question_id: str, question: str) -> None:
        """The next question of a long-lived agent: its own events from here."""
        with self.lock:
            self.question_id, self.question = question_id, question
            self.events, self.routes = [], Counter()
            self.model_calls = self.tool_calls = 0

    def model_call(self, route: str) -> int:
        """The index of a new model call on ``route``; CapReached past the cap."""
        with self.lock:
            self.routes[route] += 1
            if self.model_calls >= self.max_model_calls:
                raise CapReached(f"{self.max_model_calls} model calls (max_model_calls)")
            self.model_calls += 1
            return self.model_calls - 1

    def tool_call(self, route: str) -> int:
        """The model call a new tool call belongs to; CapReached past the cap."""
        with self.lock:
            self.routes[route] += 1
            if self.tool_calls >= self.max_tool_calls:
                raise CapReached(f"{self.max_tool_calls} tool calls (max_tool_calls)")
            self.tool_calls += 1
            return max(self.model_calls - 1, 0)

    def record(self, kind: str, index: int, data: dict, started: float) -> None:
        with self.lock:
            self.events.append(Event(kind, index, data, time.perf_counter() - started))


class Sessions:
    """The sessions of one run job, by token."""

    def __init__(self):
        self._by_token: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(
        self, question_id: str, question: str, caps: dict, self_reported: bool = False
    ) -> Session:
        token = TOKEN_PREFIX + _secrets.token_hex(12)
        session = Session(token, question_id, question, **caps, self_reported=self_reported)
        with self._lock:
            self._by_token[token] = session
        return session

    def close(self, session: Session) -> None:
        with self._lock:
            self._by_token.pop(session.token, None)

    def find(self, token: str | None) -> Session | None:
        if not token:
            return None
        with self._lock:
            return self._by_token.get(token.strip())


def bearer_token(headers, path_token: str | None = None) -> str | None:
    """The session token of a request: its sandbox door's (:data:`DOOR_HEADER`), else
    the one its path names (``path_token``), ``Authorization: Bearer``, Azure's
    ``api-key`` header, or the header the agent's ``sitecustomize`` adds."""
    door = headers.get(DOOR_HEADER)
    if door:
        return door
    if path_token:
        return path_token
    value = headers.get("Authorization") or ""
    if value.lower().startswith("bearer "):
        return value[7:].strip()
    return headers.get("api-key") or headers.get(TOKEN_HEADER)
