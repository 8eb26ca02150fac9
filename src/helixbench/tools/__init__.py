"""Tools behind one small interface: a URL in, a reply (or a recorded error) out.

The method hands every URL the model wrote to a :class:`Toolbox`; a toolbox
never raises for a bad call, it returns a :class:`ToolResult` with ``error`` set,
so a run always finishes and the transcript shows what went wrong.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Protocol

from .. import secrets
from ..genegpt_format import blast_put_page

# The config's ``tools`` settings (politeness, cache location) reach jobs through
# this variable: they shape no result, so tuning them must rerun no job.
SETTINGS_ENV = "HELIXBENCH_TOOLS"


@dataclass(frozen=True)
class ToolRequest:
    url: str
    question_id: str
    index: int  # the model call (0-based) whose completion asked for this URL
    needed_bytes: int | None = None  # the caller keeps this much of a reply (None: all)
    # A POST: its body (JSON, or multipart form fields), sent as ``body_kind`` says.
    body: dict | None = None
    body_kind: str = "json"  # "json" | "form"

    @property
    def method(self) -> str:
        return "GET" if self.body is None else "POST"


@dataclass(frozen=True)
class ToolResult:
    url: str
    index: int
    body: bytes | None = None  # the reply as received
    text: str | None = None  # a reply that is text already (a recorded BLAST RID)
    status: int | None = None
    error: str | None = None
    cache: str | None = None  # "hit" / "miss" / "stale" / "replay"; None: never looked up
    fetched_at: str | None = None  # when the reply left the server (UTC)
    origin: str | None = None  # "live <base URL>" or "seed:<recording>"
    attempts: int | None = None  # requests this call made (retries included)

    def value(self) -> bytes | str:
        """What the method renders into the prompt."""
        if self.error is not None:
            return f"Error: {self.error}"
        return self.body if self.body is not None else (self.text or "")

    method: str = "GET"

    def as_http(self) -> tuple[int, bytes]:
        """The status and body a program calling the service gets (an agent through
        the tool gateway, GeneAgent's ``apis/``): the service's reply; for a call
        refused or failed, a status that says so (403 refused, 404 not in the offline
        cache, 502 failed) and the executor's message; every secret redacted."""
        if self.body is not None and self.status is not None:  # the service's reply
            status, body = self.status, self.body
        elif self.error is not None:  # never sent (refused, not cached) or failed
            status = {"refused": 403, "offline": 404}.get(self.error.split(":")[0], 502)
            body = f"Error: {self.error}".encode()
        else:  # a seeded BLAST Put holds only its RID: shown as NCBI's page shows one
            status, body = 200, blast_put_page(self.text or "").encode()
        # A live reply that echoes a key the run holds reaches the program without it,
        # as the cached copy is stored without it.
        return status, secrets.redact_bytes(body)

    def describe(self, rendered: str) -> dict:
        """The transcript entry for this call."""
        size = len(self.body) if self.body is not None else len((self.text or "").encode())
        return {
            "url": self.url,
            "method": self.method,
            "status": self.status,
            "bytes": size,
            "cache": self.cache,
            "error": self.error,
            "fetched_at": self.fetched_at,
            "origin": self.origin,
            "attempts": self.attempts,
            "rendered": rendered,
        }


class Toolbox(Protocol):
    def call(self, request: ToolRequest) -> ToolResult: ...


def tool_settings(mode: str) -> dict:
    """The ``tools`` settings the workflow passed down, with ``mode`` set."""
    return {**json.loads(os.environ.get(SETTINGS_ENV) or "{}"), "mode": mode}


def create_toolbox(
    settings: dict,
    recorded=None,
    question_ids: dict[str, str] | None = None,
    url_rule: str = "first",
):
    """The toolbox a run's ``tools`` settings name: ``replay`` (the recorded items, read
    with the recording's ``url_rule``) or the executor."""
    if settings.get("mode") == "replay":
        from .replay import ReplayToolbox

        return ReplayToolbox(recorded or [], question_ids or {}, url_rule)
    from .executor import ToolExecutor, ToolSettings

    return ToolExecutor(ToolSettings.from_config(settings))
