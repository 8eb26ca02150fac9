"""The tool cache seeded from recorded runs: every NCBI reply a recorded GeneGPT run
shows (its tool calls and its prompt header's demonstrations) as a cache entry, so
an offline run of a new model gets the real 2023 reply wherever it asks what Codex
asked (the ``seed_tool_cache`` rule; ``tools: {seed: [...]}`` in config)."""

from __future__ import annotations

from pathlib import Path

from .. import paths
from ..datasets.snapshots import extract_from_header
from ..datasets.upstream import relpath_url
from ..genegpt_format import is_blast_put, parse_rendered_reply
from ..sources.recordings import RecordingReader, recorded_header, recorded_tool_replies
from .cache import CachedReply, ReplyCache
from .urls import canonical_url, strip_secrets


def recorded_replies(
    items, origin: str, fetched_at: str, cap: int = 10_000, url_rule: str = "first"
) -> list[CachedReply]:
    """Cache entries for every tool reply a recorded GeneGPT run shows (its calls read
    with the ``url_rule`` it was recorded with).

    Upstream cut each reply at ``cap`` bytes before putting it in the prompt, so a
    recorded reply of exactly ``cap`` bytes may be a cut one: it is marked, and
    serves only callers that keep no more than that (see :meth:`CachedReply.serves`).
    """
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
