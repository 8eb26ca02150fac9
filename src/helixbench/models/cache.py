"""The response cache: a model call answered before is answered again from disk.

The key is a digest of everything that decides the completion: the backend's
identity (model id with revision or file digest, base URL, API kind), the
decoding parameters and the full prompt. Two models never share an entry; a server
model's identity includes what the server says it serves, so a model swapped
behind the same URL finds none of the old answers. Each call's record says
whether it was a hit or a miss, so a rerun of a finished sweep shows that it made
no model calls; a hit keeps the tokens and the latency of the call that made it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace

from .. import secrets
from ..digests import sha256_json
from ..store import KeyedLocks, SqliteStore, utc_now
from . import Completion, CompletionRequest, ContextLengthError, Model, ModelError

log = logging.getLogger("helixbench.models")

SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    text TEXT,
    refused TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    finish_reason TEXT,
    latency_s REAL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS identities (digest TEXT PRIMARY KEY, identity TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS identity_names (
    digest TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (digest, name)
);
"""


class ModelCache(SqliteStore):
    schema = SCHEMA

    def known_identity(self, configured: dict) -> dict | None:
        """The identity this cache last stored a completion under whose configured part
        (backend, API, model, base URL, revision) is ``configured``: what a server that
        cannot be reached served when it last answered."""
        rows = self._query_all(
            "SELECT i.identity, MAX(c.created_at) FROM identities i JOIN completions c"
            " ON c.identity = i.digest GROUP BY i.digest ORDER BY MAX(c.created_at) DESC"
        )
        for text, _ in rows:
            known = json.loads(text)
            if _covers(known, configured) and "served" in known:
                return known
        return None

    def get(self, key: str) -> tuple | None:
        return self._query_one(
            "SELECT text, refused, prompt_tokens, completion_tokens, finish_reason, latency_s"
            " FROM completions WHERE key = ?",
            (key,),
        )

    def put(
        self, key: str, identity: dict, row: tuple, latency_s: float, name: str | None = None
    ) -> None:
        """Store a completion; the identity itself and the config's name for the model
        are kept beside it (``helixbench cache`` shows them, not only the digest)."""
        digest = sha256_json(identity)

        def write(conn) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO completions (key, identity, text, refused, prompt_tokens,"
                " completion_tokens, finish_reason, latency_s, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, digest, *row, latency_s, utc_now()),
            )
            conn.execute(
                "INSERT OR IGNORE INTO identities VALUES (?, ?)",
                (digest, secrets.redact(json.dumps(identity, sort_keys=True))),
            )
            if name:
                conn.execute("INSERT OR IGNORE INTO identity_names VALUES (?, ?)", (digest, name))

        self._transaction(write)


def request_key(identity: dict, request: CompletionRequest) -> str:
    key = {
        "identity": identity,
        "prompt": request.prompt,
        "stop": list(request.stop),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    if request.messages:  # a conversation (function calling) decides the reply
        key["messages"] = list(request.messages)
    if request.tools:
        key["tools"] = list(request.tools)
    if request.parallel_tool_calls is not None:
        key["parallel_tool_calls"] = request.parallel_tool_calls
    if request.unsent:  # (a server's default temperature is not temperature 0)
        key["unsent"] = sorted(request.unsent)
    return sha256_json(key)


def _covers(known: dict, given: dict) -> bool:
    return all(known.get(k) == v for k, v in given.items())


class CachedModel:
    """A backend behind the response cache. Context-length refusals are cached too;
    failures (:class:`ModelError`) are not, so a rerun tries them again."""

    def __init__(self, model: Model, cache: ModelCache, name: str | None = None):
        self.model = model
        self.cache = cache
        self.name = name  # the config's name for the model, kept with its identity
        self._asking = KeyedLocks()  # one prompt asked once, however many threads ask it
        self._identity: dict | None = None  # (asked of the model once a process)

    @property
    def max_in_flight(self) -> int:
        return getattr(self.model, "max_in_flight", 1)

    def identity(self) -> dict:
        """The model's identity; where its server cannot be reached to say what it serves,
        the one this cache last answered for under the same configuration (so cached
        calls replay offline; a call the cache lacks still needs the server)."""
        if self._identity is not None:
            return self._identity
        try:
            self._identity = self.model.identity()
        except ModelError as exc:
            configured = getattr(self.model, "configured_identity", None)
            known = (
                self.cache.known_identity(configured()) if exc.transient and configured else None
            )
            if known is None:
                raise
            log.warning(
                "%s cannot be reached (%s): replaying from the response cache under the "
                "identity it last recorded",
                known.get("base_url", "the server"),
                exc,
            )
            self._identity = known
        return self._identity

    @property
    def supports_tools(self) -> bool:
        return getattr(self.model, "supports_tools", False)

    def complete(self, request: CompletionRequest) -> Completion:
        key = request_key(self.identity(), request)
        with self._asking.hold(key):
            return self._complete(key, request)

    def _complete(self, key: str, request: CompletionRequest) -> Completion:
        row = self.cache.get(key)
        if row is not None:
            text, refused, prompt_tokens, completion_tokens, finish, latency = row
            if refused is not None:
                raise ContextLengthError(refused, cache="hit")
            calls = None
            if request.tools:  # stored as {"content", "tool_calls"}
                stored = json.loads(text)
                text, calls = stored["content"], stored["tool_calls"]
                calls = tuple(calls) if calls else None
            return Completion(
                text,
                "hit",
                prompt_tokens,
                completion_tokens,
                None,
                finish,
                tool_calls=calls,
                latency_s=latency,
            )
        started = time.perf_counter()
        try:
            completion = self.model.complete(request)
        except ContextLengthError as exc:
            row = (None, str(exc), None, None, None)
            self.cache.put(key, self.identity(), row, time.perf_counter() - started, self.name)
            raise ContextLengthError(str(exc), cache="miss") from None
        text = secrets.redact(completion.text)
        if request.tools:
            calls = list(completion.tool_calls) if completion.tool_calls else None
            text = secrets.redact(json.dumps({"content": completion.text, "tool_calls": calls}))
        row = (
            text,
            None,
            completion.prompt_tokens,
            completion.completion_tokens,
            completion.finish_reason,
        )
        self.cache.put(key, self.identity(), row, time.perf_counter() - started, self.name)
        return replace(completion, cache="miss")
