"""Every tool request and reply in one SQLite file, safe with many writers at once.

``replies`` holds the reply to each canonical URL (secrets removed, parameters
sorted: :func:`helixbench.tools.urls.canonical_url`), with status, fetch time and
where it came from (``live`` with the answering base URL, or ``seed:<recording>``
for replies taken from a recorded run). ``requests`` logs every request that left
the process, attempt by attempt, so politeness can be audited afterwards.

Many jobs write at once: see :class:`helixbench.store.SqliteStore`.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from ..store import SqliteStore, utc_now

__all__ = ["CachedReply", "ReplyCache", "reply_from_json", "reply_to_json", "utc_now"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    status INTEGER,
    body BLOB,
    rid TEXT,
    truncated_at INTEGER,
    fetched_at TEXT NOT NULL,
    origin TEXT NOT NULL,
    elapsed_s REAL
);
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    url TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    elapsed_s REAL,
    status INTEGER,
    bytes INTEGER,
    error TEXT
);
"""


_COLUMNS = (
    "key",
    "url",
    "status",
    "body",
    "rid",
    "truncated_at",
    "fetched_at",
    "origin",
    "elapsed_s",
)


@dataclass(frozen=True)
class CachedReply:
    key: str
    url: str
    status: int | None
    body: bytes | None
    rid: str | None  # a recorded BLAST Put kept only its request id
    truncated_at: int | None  # a recorded reply upstream cut at this many bytes
    fetched_at: str
    origin: str
    elapsed_s: float | None = None

    def serves(self, needed_bytes: int | None) -> bool:
        """Whether this reply is whole enough for a caller who keeps ``needed_bytes``."""
        if self.truncated_at is None:
            return True
        return needed_bytes is not None and needed_bytes <= self.truncated_at


def reply_to_json(reply: CachedReply) -> dict:
    """A cached reply as one line of an export (``tool_replies.jsonl``): the body in
    base64, with its sha256."""
    body = reply.body
    return {
        **{c: getattr(reply, c) for c in _COLUMNS if c != "body"},
        "body": base64.b64encode(body).decode() if body is not None else None,
        "body_sha256": hashlib.sha256(body).hexdigest() if body is not None else None,
    }


def reply_from_json(line: dict, origin_prefix: str = "") -> CachedReply:
    """The cached reply an export line holds (its body checked against its sha256);
    ``origin_prefix`` says where it was imported from."""
    body = base64.b64decode(line["body"]) if line.get("body") is not None else None
    if body is not None and hashlib.sha256(body).hexdigest() != line.get("body_sha256"):
        raise ValueError(f"{line.get('url')}: the body does not match its sha256")
    fields = {c: line.get(c) for c in _COLUMNS if c != "body"}
    fields["origin"] = origin_prefix + str(fields["origin"])
    return CachedReply(**fields, body=body)


class ReplyCache(SqliteStore):
    schema = SCHEMA

    def get(self, key: str) -> CachedReply | None:
        row = self._query_one(f"SELECT {', '.join(_COLUMNS)} FROM replies WHERE key = ?", (key,))
        return CachedReply(*row) if row else None

    def put(self, reply: CachedReply, replace: bool = True) -> None:
        self.put_many([reply], replace=replace)

    def put_many(self, replies: list[CachedReply], replace: bool = False) -> int:
        """Store ``replies`` in one transaction; returns how many rows were new or replaced."""
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = (
            f"{verb} INTO replies ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        )
        rows = [tuple(getattr(r, c) for c in _COLUMNS) for r in replies]
        return self._transaction(lambda conn: conn.executemany(sql, rows))

    def log_request(
        self,
        key: str,
        url: str,
        attempt: int,
        started_at: str,
        elapsed_s: float | None,
        status: int | None,
        size: int | None,
        error: str | None,
    ) -> None:
        row = (key, url, attempt, started_at, elapsed_s, status, size, error)
        self._transaction(
            lambda conn: conn.execute(
                "INSERT INTO requests (key, url, attempt, started_at, elapsed_s, status,"
                " bytes, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        )

    def count(self, table: str = "replies") -> int:
        return super().count(table)
