"""Every tool request and reply in one SQLite file, safe with many writers at once.

``replies`` holds the reply to each canonical URL (secrets removed, parameters
sorted: :func:`helixbench.tools.urls.canonical_url`), with status, fetch time and
where it came from (``live`` with the answering base URL, or ``seed:<recording>``
for replies taken from a recorded run). ``requests`` logs every request that left
the process, attempt by attempt, so politeness can be audited afterwards.

Many jobs write at once: see :class:`helixbench.store.SqliteStore`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..store import SqliteStore, utc_now

__all__ = ["CachedReply", "ReplyCache", "recorded_replies", "utc_now"]

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


def recorded_replies(
    items, origin: str, fetched_at: str, cap: int = 10_000, url_rule: str = "first"
) -> list[CachedReply]:
    """Cache entries for every tool reply a recorded GeneGPT run shows (its calls read
    with the ``url_rule`` it was recorded with).

    Upstream cut each reply at ``cap`` bytes before putting it in the prompt, so a
    recorded reply of exactly ``cap`` bytes may be a cut one: it is marked, and
    serves only callers that keep no more than that (see :meth:`CachedReply.serves`).
    """
    from ..genegpt_format import is_blast_put, parse_rendered_reply
    from ..recordings import recorded_tool_replies

    entries = []
    for item in items:
        for url, rendered in recorded_tool_replies(item, url_rule).values():
            if rendered is None or rendered.startswith("Error"):
                continue
            value = parse_rendered_reply(rendered)
            if not isinstance(value, bytes) and not is_blast_put(url):
                continue  # only a BLAST Put shows as text (its RID)
            body = value if isinstance(value, bytes) else None
            rid = None if body is not None else value
            entries.append(_recorded_reply(url, body, rid, origin, fetched_at, cap))
    return entries


def _recorded_reply(url, body, rid, origin: str, fetched_at: str, cap: int) -> CachedReply:
    """A cache entry for a reply a recording shows (a body, or a BLAST Put's RID)."""
    from .urls import canonical_url, strip_secrets

    return CachedReply(
        key=canonical_url(url),
        url=strip_secrets(url),
        status=200,
        body=body,
        rid=rid,
        truncated_at=cap if body is not None and len(body) >= cap else None,
        fetched_at=fetched_at,
        origin=origin,
    )


def demonstration_replies(items, origin: str, fetched_at: str, cap: int = 10_000):
    """Cache entries for the NCBI replies a recorded run's prompt header embeds (its
    demonstrations): a model that repeats a demonstration's call offline gets the
    reply the header shows, and a snapshot taken offline (``live_snapshot`` with
    ``tools: offline``) finds every one it asks for in a cache seeded from a run
    whose header has them all."""
    from ..recordings import recorded_header
    from ..snapshots import extract_from_header

    snapshot = extract_from_header(recorded_header(items))
    return [
        _recorded_reply(reply.url, reply.body, reply.rid, origin, fetched_at, cap)
        for reply in snapshot.replies.values()
    ]


def seed_from_recordings(recording: str, cache: ReplyCache, files: list[str]) -> list[dict]:
    """Put every tool reply the recorded run ``files`` show, in their answers and in
    their prompt header's demonstrations, into ``cache`` (replies already there are
    kept); returns per file its URL and the replies seeded. The files of one recorded
    run (one directory) tell their loop variant together."""
    from pathlib import Path

    from .. import paths
    from ..recordings import RecordingReader
    from ..upstream import relpath_url

    recordings = RecordingReader()
    runs: dict[str, list[str]] = {}
    for path in files:
        runs.setdefault(str(Path(path).parent), []).append(path)
    seeded, demonstrations = [], []
    for path in files:
        url = relpath_url(Path(path).relative_to(paths.UPSTREAM_DIR).as_posix())
        loop = recordings.loop(path, runs[str(Path(path).parent)])
        items = recordings.items(path)
        entries = recorded_replies(items, f"seed:{recording}", "recorded", url_rule=loop.url_rule)
        added = cache.put_many(entries, replace=False)
        seeded.append(
            {"url": url, "replies": len(entries), "added": added, "url_rule": loop.url_rule}
        )
        demonstrations.append(demonstration_replies(items, f"seed:{recording}", "recorded"))
    # The demonstrations last: where a question asked a demonstration's URL, the reply
    # its run got then is the one a replay of it must find.
    for file, entries in zip(seeded, demonstrations, strict=True):
        file["demonstrations"] = len(entries)
        file["added"] += cache.put_many(entries, replace=False)
    return seeded
