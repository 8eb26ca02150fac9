"""SQLite files that many jobs read and write at once (the tool and model caches).

The file is in WAL mode, every write is one short ``BEGIN IMMEDIATE`` transaction,
and a busy or locked database is waited for and retried, never reported: 8
parallel jobs (or more) lose nothing and never fail with "database is locked".
"""

from __future__ import annotations

import random
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class SqliteStore:
    schema = ""  # CREATE TABLE IF NOT EXISTS ... statements of the subclass

    def __init__(self, path: Path, busy_timeout_s: float = 60.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout_s = busy_timeout_s
        self._conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None)
        self._retry(self._setup)

    def _setup(self) -> None:
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(self.schema)

    def _retry(self, action, *args):
        # sqlite's own busy timeout covers most contention; a lock upgrade can still
        # fail at once ("database is locked"), so wait and try again.
        deadline = time.monotonic() + self._busy_timeout_s
        delay = 0.01
        while True:
            try:
                return action(*args)
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if ("locked" not in message and "busy" not in message) or (
                    time.monotonic() > deadline
                ):
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)

    def _transaction(self, work):
        """Run ``work(conn)`` in one write transaction; returns rows changed."""

        def run():
            self._conn.execute("BEGIN IMMEDIATE")
            before = self._conn.total_changes
            try:
                work(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return self._conn.total_changes - before

        return self._retry(run)

    def _query_one(self, sql: str, params: tuple = ()):
        return self._retry(lambda: self._conn.execute(sql, params).fetchone())

    def count(self, table: str) -> int:
        if not table.isidentifier():
            raise ValueError(table)
        return self._query_one(f"SELECT COUNT(*) FROM {table}")[0]

    def close(self) -> None:
        self._conn.close()
