"""Demonstration snapshots: the NCBI replies a GeneGPT prompt header embeds.

Upstream fetched the demonstrations' replies live each time it built a header,
so every recorded run carries its own snapshot (the BLAST RID differs per run).
We take a snapshot once, store it as a versioned JSON file, and build headers
only from snapshots; nothing calls NCBI while a prompt is assembled.

File format (``format: 1``)::

    {"format": 1, "id": "snap-<16 hex>", "source": {...},
     "replies": [{"url": ..., "text": ... | "base64": ..., "rid": ...}, ...]}

``id`` is a digest of the replies alone, so the same replies always get the same
id whatever their source. A reply holds the body (as UTF-8 text, or base64 when
it is not UTF-8); a BLAST Put reply recorded by upstream holds only its RID.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..digests import sha256_text
from ..genegpt_format import parse_rendered_reply
from .jsonfiles import read_json

FORMAT = 1
_REPLY_LINE = re.compile(r"^\[(https?://[^\[\]]+)\]->\[", re.M)


class SnapshotError(ValueError):
    """A snapshot is malformed, or lacks a reply a header needs."""


@dataclass(frozen=True)
class SnapshotReply:
    url: str
    body: bytes | None = None
    rid: str | None = None  # a BLAST Put's request id, where only that was kept

    def value(self) -> bytes | str:
        return self.body if self.body is not None else self.rid

    def to_json(self) -> dict:
        out: dict = {"url": self.url}
        if self.body is not None:
            try:
                out["text"] = self.body.decode("utf-8")
            except UnicodeDecodeError:
                out["base64"] = base64.b64encode(self.body).decode("ascii")
        if self.rid is not None:
            out["rid"] = self.rid
        return out

    @classmethod
    def from_json(cls, data: dict) -> SnapshotReply:
        if "text" in data:
            body = data["text"].encode("utf-8")
        elif "base64" in data:
            body = base64.b64decode(data["base64"])
        else:
            body = None
        if body is None and data.get("rid") is None:
            raise SnapshotError(f"snapshot reply for {data.get('url')!r} has no body and no rid")
        return cls(url=data["url"], body=body, rid=data.get("rid"))


@dataclass(frozen=True)
class Snapshot:
    replies: dict[str, SnapshotReply]
    source: dict = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        canonical = json.dumps(
            [self.replies[u].to_json() for u in sorted(self.replies)], sort_keys=True
        )
        return "snap-" + sha256_text(canonical)[:16]

    def reply(self, url: str) -> SnapshotReply:
        try:
            return self.replies[url]
        except KeyError:
            raise SnapshotError(
                f"snapshot {self.id} has no reply for {url}; take a snapshot that covers "
                "every demonstration the mask selects"
            ) from None

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "id": self.id,
            "source": self.source,
            "replies": [r.to_json() for r in self.replies.values()],
        }

    def save(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Snapshot:
        data = read_json(path)
        if data.get("format") != FORMAT:
            raise SnapshotError(f"{path}: unsupported snapshot format {data.get('format')!r}")
        replies = [SnapshotReply.from_json(r) for r in data["replies"]]
        snapshot = cls({r.url: r for r in replies}, data.get("source", {}))
        if data.get("id") != snapshot.id:
            raise SnapshotError(f"{path}: id {data.get('id')} does not match its replies")
        return snapshot


def _literal_end(text: str, start: int) -> int:
    """End (exclusive) of the ``b'...'`` literal that starts at ``start``."""
    quote, i = text[start + 1], start + 2
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == quote:
            return i + 1
        else:
            i += 1
    raise SnapshotError("unterminated bytes literal in a demonstration reply")


def extract_from_header(header: str, source: dict | None = None) -> Snapshot:
    """The snapshot embedded in a recorded GeneGPT header (every ``[url]->[reply]`` line)."""
    replies: dict[str, SnapshotReply] = {}
    for match in _REPLY_LINE.finditer(header):
        url, start = match.group(1), match.end()
        if header[start : start + 2] in ("b'", 'b"'):
            end = _literal_end(header, start)
            value = parse_rendered_reply(header[start:end])
            if not isinstance(value, bytes):
                raise SnapshotError(f"cannot read the reply of {url} back into bytes")
            reply = SnapshotReply(url, body=value)
        else:
            end = header.index("]\n", start)
            reply = SnapshotReply(url, rid=header[start:end])
        if header[end : end + 2] != "]\n":
            raise SnapshotError(f"reply of {url} is not followed by ']\\n'")
        replies[url] = reply
    return Snapshot(replies, source or {})
