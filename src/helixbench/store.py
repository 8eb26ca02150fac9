"""SQLite files that many jobs read and write at once (the tool and model caches).

The file is in WAL mode, every write is one short ``BEGIN IMMEDIATE`` transaction,
and a busy or locked database is waited for and retried, never reported: 8
parallel jobs (or more) lose nothing and never fail with "database is locked".
Each thread of a job (a run job keeps many questions in flight) has its own
connection, as sqlite3 asks.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from contextlib import contextmanager
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
        self._local = threading.local()
        # This process's writers queue here, not in sqlite's busy handler (which
        # sleeps up to 100 ms a try): many threads of one job write one at a time.
        self._write_lock = threading.Lock()
        self._retry(self._setup)

    @property
    def _conn(self) -> sqlite3.Connection:
        """This thread's connection to the file."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout_s, isolation_level=None)
            self._local.conn = conn
        return conn

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
            with self._write_lock:
                return write()

        def write():
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

    def _query_all(self, sql: str, params: tuple = ()) -> list:
        return self._retry(lambda: self._conn.execute(sql, params).fetchall())

    def count(self, table: str) -> int:
        if not table.isidentifier():
            raise ValueError(table)
        return self._query_one(f"SELECT COUNT(*) FROM {table}")[0]

    def close(self) -> None:
        self._conn.close()
        self._local.conn = None


class KeyedLocks:
    """One lock per key, held while it is used: two threads asking for one key (one
    URL, one prompt) at once wait for each other, so the second finds the first's
    answer in the cache instead of asking again; other keys go on."""

    def __init__(self):
        self._lock = threading.Lock()
        self._locks: dict[str, list] = {}  # key -> [lock, users]

    @contextmanager
    def hold(self, key: str):
        with self._lock:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if not entry[1]:
                    del self._locks[key]
