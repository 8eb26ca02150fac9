"""``tool_replies.jsonl``: every tool reply the report's runs read from the tool cache,
exported with the report (and so listed, with its sha256, in its RO-Crate); and
``code_executions.jsonl``, every execution of the code tools they read (or made),
with the scratch folder each left.

On another machine, ``helixbench cache --import tool_replies.jsonl`` (or
``code_executions.jsonl``) puts them in that machine's caches (entries already there
are kept), and the same config runs offline (``tools: {mode: offline}``) with the
same replies: an agent's or a model's run can be replayed where NCBI is out of
reach, or years after NCBI changed.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
from pathlib import Path

from ... import paths
from ...tools import tool_settings
from ...tools.cache import CachedReply, reply_to_json
from ...tools.urls import canonical_url

# Where a tool event's reply came from when not the tool cache: a replayed run's own
# recording, the run's demonstration snapshot, a recorded enrichment (pinned files).
NOT_CACHED = ("replay", "snapshot", "recorded")


def used_keys(records: dict) -> list[str]:
    """The cache keys of every tool call whose reply the records show came through the
    tool cache (a hit, or a live reply stored there)."""
    urls = set()
    for of_task in records.values():
        for record in of_task:
            for event in record.get("events", ()):
                data = event.get("data") or {}
                url = data.get("url") or ""
                cached = data.get("cache") not in (None, *NOT_CACHED)
                if event.get("type") == "tool" and url.startswith("https://") and cached:
                    urls.add(url)
    return sorted({canonical_url(url) for url in urls})  # each URL read once


def export_tool_replies(keys, out: Path, cache: Path | None = None) -> int:
    """Write the cached replies of ``keys`` (the runs' :func:`used_keys`) to ``out``,
    one JSON line each, in key order; returns how many. The cache is read, never
    written."""
    cache = Path(cache or tool_settings("offline").get("cache") or paths.TOOL_CACHE)
    keys = sorted(set(keys))
    lines = []
    if keys and cache.is_file():
        columns = [f.name for f in fields(CachedReply)]
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as conn:
            for key in keys:
                row = conn.execute(
                    f"SELECT {', '.join(columns)} FROM replies WHERE key = ?", (key,)
                ).fetchone()
                if row:
                    lines.append(json.dumps(reply_to_json(CachedReply(*row)), sort_keys=True))
    Path(out).write_text("".join(line + "\n" for line in lines))
    return len(lines)


def used_executions(records: dict) -> list[str]:
    """The cache keys of every code execution the records show (executed or replayed)."""
    keys = {
        (event.get("data") or {}).get("key")
        for of_task in records.values()
        for record in of_task
        for event in record.get("events", ())
        if event.get("type") == "tool" and (event.get("data") or {}).get("route") == "code"
    }
    return sorted(k for k in keys if k)


def export_code_executions(keys, out: Path, cache: Path | None = None) -> int:
    """Write the cached executions of ``keys`` (:func:`used_executions`) to ``out``, one
    JSON line each, in key order; returns how many. The cache is read, never written."""
    from ...gateway.code import ExecutionCache

    cache = Path(cache or tool_settings("offline").get("code_cache") or paths.CODE_CACHE)
    lines = ExecutionCache(cache).export(keys) if keys and cache.is_file() else []
    Path(out).write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
    return len(lines)
