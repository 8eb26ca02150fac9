"""Verdicts kept by content, across the runs of a sweep and its score jobs: a text
scorer's score of an answer depends only on the scorer, the question and the answer,
so a sweep of similar systems computes each distinct (scorer, question, answer) once.

An entry holds the verdicts of one answer to one question by its task's kept scorers.
Its key is the digest of the scorers' namespace (their names, helixbench's own code,
and for the encoder its identity and library versions: a new version or another model
never reads an old verdict) and of the task, answer, gold and question text.
Kept in an SQLite file beside the model cache (:class:`..store.SqliteStore`: WAL, many
jobs at once). Scorers that read more than the answer (a record's choice, a judge with
its own call cache, a percentile against a background) are not kept here.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..datasets.jsonfiles import parse_json
from ..digests import sha256_json, sha256_text
from ..store import SqliteStore

LOOKUP_CHUNK = 500  # keys a query asks for (SQLite's bound parameters: 32,766 at most)


class KeptVerdicts(SqliteStore):
    schema = "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, verdict TEXT NOT NULL)"

    def found(self, keys: list[str]) -> dict[str, dict]:
        """Key -> the verdicts kept (scorer -> a score, None, or a (score, reason) pair)."""
        out = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), LOOKUP_CHUNK):
            chunk = unique[start : start + LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._query_all(
                f"SELECT key, verdict FROM verdicts WHERE key IN ({marks})", tuple(chunk)
            )
            out.update((key, _verdict(text)) for key, text in rows)
        return out

    def keep(self, verdicts: dict[str, dict]) -> None:
        if not verdicts:
            return
        rows = [(key, json.dumps(value)) for key, value in verdicts.items()]
        self._transaction(
            lambda conn: conn.executemany("INSERT OR IGNORE INTO verdicts VALUES (?, ?)", rows)
        )


def _verdict(text: str) -> dict:
    return {n: tuple(v) if isinstance(v, list) else v for n, v in parse_json(text).items()}


def kept_verdicts(model_cache) -> KeptVerdicts | None:
    """The verdicts kept beside the model cache; None: nothing kept (no model cache)."""
    return KeptVerdicts(Path(model_cache).parent / "verdicts.sqlite") if model_cache else None


def namespace(scorers: dict[str, dict | None], code: str) -> str:
    """The namespace of the verdicts of ``scorers`` (name -> identity, where a model's
    identity and library versions shape its scores) under helixbench's ``code``."""
    return sha256_json({"scorers": scorers, "code": code})


def question_digest(question) -> str:
    """What of a question a text scorer reads: its task, gold and text."""
    return sha256_text(json.dumps([question.task, question.gold, question.text]))


def verdict_key(space: str, question: str, answer) -> str:
    """The key of the verdicts (of ``space``'s scorers) on ``answer`` to the question
    of digest ``question`` (:func:`question_digest`)."""
    return sha256_text(f"{space}\0{question}\0{json.dumps(answer)}")
