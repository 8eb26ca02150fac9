"""Tools behind one small interface: a URL in, a reply (or a recorded error) out.

The method hands every URL the model wrote to a :class:`Toolbox`; a toolbox
never raises for a bad call, it returns a :class:`ToolResult` with ``error`` set,
so a run always finishes and the transcript shows what went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ToolRequest:
    url: str
    question_id: str
    index: int  # the model call (0-based) whose completion asked for this URL


@dataclass(frozen=True)
class ToolResult:
    url: str
    index: int
    body: bytes | None = None  # the reply as received
    text: str | None = None  # a reply that is text already (a recorded BLAST RID)
    status: int | None = None
    error: str | None = None
    cache: str | None = None  # "hit" / "miss" / "replay"

    def value(self) -> bytes | str:
        """What the method renders into the prompt."""
        if self.error is not None:
            return f"Error: {self.error}"
        return self.body if self.body is not None else (self.text or "")

    def describe(self, rendered: str) -> dict:
        """The transcript entry for this call."""
        size = len(self.body) if self.body is not None else len((self.text or "").encode())
        return {
            "url": self.url,
            "status": self.status,
            "bytes": size if self.error is None else 0,
            "cache": self.cache,
            "error": self.error,
            "rendered": rendered,
        }


class Toolbox(Protocol):
    def call(self, request: ToolRequest) -> ToolResult: ...
