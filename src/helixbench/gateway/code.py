"""Code as a tool: ``python`` and ``bash``, each call run in a fresh process of the
agent sandbox (:mod:`.sandbox`: the same root, caps and seccomp filter as agents),
recorded, and replayed.

A question's calls share a scratch folder (its working directory: files one call
writes, the next reads); nothing else is writable but the sandbox's ``/tmp`` and
``HOME``, and its network is the gateways': E-utils and the other allowlisted hosts
answer through the tool gateway, each request recorded under the question like any
tool call. The code runs with the tools environment's Python (Biopython, pydna,
primer3-py, pandas, numpy: ``workflow/envs/tools/code.yaml``), given on stdin.

Every execution is recorded: the code, stdout and stderr (the start kept, with
their full length and sha256), the exit status, the seconds, the cap that stopped
it. Executions are cached by the digest of the language, the code, the tools
environment, the caps and the scratch folder's files before the call; a hit gives
the recorded output and puts the scratch folder as the execution left it, so a
rerun, or a run resumed, executes nothing again. ``tools.mode``: ``offline`` and
``live`` take the cache first (code needs no network to run: a miss executes),
``refresh`` executes every call anew. The executions a report's runs read go with
it (``code_executions.jsonl``; ``helixbench cache --import`` puts them in another
machine's cache).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..digests import sha256_json
from ..environments import environment_python
from ..transcripts import Event
from .sandbox import limits as sandbox_limits
from .sandbox import view
from .sandbox.output import Caps, run_once

_KEPT = "Files it writes stay for the question's next calls."
LANGUAGES = {
    "python": "Run Python 3 code (with Biopython, pydna, primer3-py, pandas, numpy) and "
    f"return what it prints. {_KEPT}",
    "bash": f"Run a bash script and return what it prints. {_KEPT}",
}
# An execution's fields the cache does not keep (how it was answered, its requests).
NOT_STORED = ("cache", "key", "tool_events")
# What the model is shown of each stream, and what the record keeps.
SHOWN_CHARS = 10_000
KEPT_CHARS = 20_000


@dataclass(frozen=True)
class CodeSettings:
    """A method's code tools: which languages, and the caps of one execution."""

    languages: tuple[str, ...] = ("python", "bash")
    timeout_s: float = 60.0
    limits: sandbox_limits.Limits = field(
        default_factory=lambda: sandbox_limits.Limits(cpu_s=60.0, output_mb=8.0)
    )


@dataclass
class Execution:
    """One call of a code tool, as recorded and as shown to the model."""

    language: str
    code: str
    exit_code: int | None
    seconds: float
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    stdout_sha256: str
    stderr_sha256: str
    limit: str | None = None  # the cap that stopped it
    timed_out: bool = False
    cache: str = "miss"
    key: str = ""
    tool_events: list = field(default_factory=list)

    @property
    def text(self) -> str:
        """What the model reads back."""
        head = "timed out" if self.timed_out else f"exit status {self.exit_code}"
        if self.limit:
            head += f", stopped by its {self.limit} cap"
        parts = [f"{head} ({self.seconds:.2f} s)"]
        for name, text, size in (("stdout", self.stdout, self.stdout_bytes),
                                 ("stderr", self.stderr, self.stderr_bytes)):  # fmt: skip
            if size:
                shown = text[:SHOWN_CHARS]
                more = (
                    f"\n[... {size - len(shown.encode())} more bytes]" if size > len(shown) else ""
                )
                parts.append(f"{name}:\n{shown}{more}")
        return "\n".join(parts)

    def describe(self) -> dict:
        """The tool event's data."""
        return {
            "tool": self.language,
            "arguments": {"code": self.code},
            "code": self.code,
            "url": f"code:{self.language}",
            "route": "code",
            "status": self.exit_code,
            "exit_code": self.exit_code,
            "seconds": self.seconds,
            "limit": self.limit,
            "timed_out": self.timed_out,
            "stdout": self.stdout[:KEPT_CHARS],
            "stderr": self.stderr[:KEPT_CHARS],
            "stdout_bytes": self.stdout_bytes,
            "stderr_bytes": self.stderr_bytes,
            "stdout_sha256": self.stdout_sha256,
            "stderr_sha256": self.stderr_sha256,
            "cache": self.cache,
            "key": self.key,
            "error": None if self.exit_code == 0 and not self.limit else self.text[:300],
            "rendered": self.text[:2000],
        }


class CodeCall:
    """A code tool's call as a method records it: its execution, and the requests the
    code made (each a tool event of its own)."""

    def __init__(self, execution, index: int):
        self.execution, self.text = execution, execution.text
        self.events = [
            Event(e.type, index, {**e.data, "route": f"code:{e.data.get('route')}"}, e.latency_s)
            for e in execution.tool_events
        ]

    def describe(self) -> dict:
        return self.execution.describe()


class ExecutionCache:
    """Executions by key (SQLite, one writer at a time): the outcome and the scratch
    folder as the execution left it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS executions (key TEXT PRIMARY KEY, outcome TEXT, "
                "files BLOB, origin TEXT, stored_at REAL)"
            )

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def get(self, key: str) -> tuple[dict, bytes] | None:
        with self._lock, self._connect() as db:
            row = db.execute(
                "SELECT outcome, files FROM executions WHERE key = ?", (key,)
            ).fetchone()
        return (json.loads(row[0]), row[1]) if row else None

    def put(self, key: str, outcome: dict, files: bytes, origin: str = "executed") -> None:
        with self._lock, self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO executions VALUES (?, ?, ?, ?, ?)",
                (key, json.dumps(outcome), files, origin, time.time()),
            )

    def export(self, keys) -> list[dict]:
        """The executions ``keys`` name, as lines of ``code_executions.jsonl``."""
        lines = []
        with self._lock, self._connect() as db:
            for key in sorted(set(keys)):
                row = db.execute(
                    "SELECT outcome, files FROM executions WHERE key = ?", (key,)
                ).fetchone()
                if row:
                    lines.append(
                        {
                            "key": key,
                            "outcome": json.loads(row[0]),
                            "files": base64.b64encode(row[1]).decode("ascii"),
                            "files_sha256": hashlib.sha256(row[1]).hexdigest(),
                        }
                    )
        return lines

    def import_lines(self, lines, origin: str) -> tuple[int, int]:
        """(stored, kept) of exported executions: an entry already here is kept."""
        stored = kept = 0
        for line in lines:
            files = base64.b64decode(line["files"])
            if hashlib.sha256(files).hexdigest() != line["files_sha256"]:
                raise ValueError(f"execution {line['key'][:12]}: its files' sha256 differs")
            if self.get(line["key"]) is not None:
                kept += 1
                continue
            self.put(line["key"], line["outcome"], files, f"import:{origin}")
            stored += 1
        return stored, kept


def scratch_digest(folder: Path) -> str:
    """The files of a scratch folder (relative paths, modes, contents), as one digest."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def pack(folder: Path) -> bytes:
    """A scratch folder's files as a gzipped tar (links and devices left out)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(folder.rglob("*")):
            if (path.is_file() or path.is_dir()) and not path.is_symlink():
                archive.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return buffer.getvalue()


def unpack(files: bytes, folder: Path) -> None:
    """``folder`` emptied, then holding the files of ``files`` (as :func:`pack` packs)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(files), mode="r:gz") as archive:
        archive.extractall(folder, filter="data")


class CodeTools:
    """The code tools of one run job's questions, run through ``gateways`` (their
    sandbox and tool gateway), executions cached in ``cache``."""

    def __init__(
        self,
        gateways,
        env_marker: str,
        cache: ExecutionCache,
        mode: str,
        settings: CodeSettings | None = None,
    ):
        self.gateways = gateways
        self.python = environment_python(env_marker)
        self.environment = _identity(env_marker)
        self.cache, self.mode = cache, mode
        self.settings = settings or CodeSettings()
        self.scratch_root = Path(gateways.workdir) / "scratch"

    @property
    def names(self) -> tuple[str, ...]:
        return self.settings.languages

    def schemas(self, documented: bool = True) -> list[dict]:
        from ..tools.functions import schema

        code = {"code": {"type": "string", "description": "The program, in full."}}
        return [
            schema(name, LANGUAGES[name] if documented else None, code, ["code"])
            for name in self.names
        ]

    def scratch(self, question_id: str, attempt: str = "") -> Path:
        """The question's scratch folder (``attempt``: an agent's session, whose calls
        start from an empty folder)."""
        name = hashlib.sha256(f"{question_id}\0{attempt}".encode()).hexdigest()[:16]
        folder = self.scratch_root / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def begin(self, question_id: str) -> None:
        """A question (re)starts: its first call sees an empty scratch folder, so that a
        rerun or a resumed run asks the cache what the first run asked."""
        shutil.rmtree(self.scratch(question_id), ignore_errors=True)

    def run(self, language: str, code: str, question_id: str, attempt: str = "") -> Execution:
        """Run (or replay) one call of ``language`` on the question's scratch folder."""
        folder = self.scratch(question_id, attempt)
        caps = self.settings.limits.as_dict() | {"timeout_s": self.settings.timeout_s}
        key = sha256_json(
            {
                "language": language,
                "code": code,
                "environment": self.environment,
                "caps": caps,
                "scratch": scratch_digest(folder),
            }
        )
        if self.mode != "refresh":
            found = self.cache.get(key)
            if found is not None:
                outcome, files = found
                unpack(files, folder)
                return Execution(**{**outcome, "cache": "hit", "key": key})
        execution = self._execute(language, code, question_id, folder)
        execution.key = key
        outcome = {k: v for k, v in vars(execution).items() if k not in NOT_STORED}
        self.cache.put(key, outcome, pack(folder))
        return execution

    def _execute(self, language: str, code: str, question_id: str, folder: Path) -> Execution:
        box = self.gateways.sandbox
        calls = {"max_model_calls": 0, "max_tool_calls": 200}
        session = self.gateways.sessions.open(question_id, f"{language} code", calls)
        argv = [self.python, "-"] if language == "python" else ["bash", "-s"]
        env = {k: os.environ[k] for k in ("LANG", "LC_ALL", "TZ") if k in os.environ}
        env |= box.ca_env() | {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/home/agent",
            "TMPDIR": "/tmp",
            "PYTHONUNBUFFERED": "1",
            "MPLBACKEND": "Agg",
            "HELIXBENCH_TOOLS_URL": f"{self.gateways.tools.base}/s/{session.token}",
        }
        visible = view.visible_paths(self.python, argv, [], folder, [], [], env["PATH"])
        caps = self.settings.limits
        confined = box.confine(argv, env, folder, session.token, visible, caps, True)
        started = time.perf_counter()
        try:
            process = subprocess.Popen(
                confined.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=box.launcher_env(),
                cwd=folder,
                start_new_session=True,
                pass_fds=confined.pass_fds,
            )
            confined.started()
            quota = Caps(
                int(caps.output_mb * sandbox_limits.MB), self.settings.timeout_s, caps.cpu_s
            )
            cpu_used = lambda: confined.status().get("cpu_s")  # noqa: E731
            out, err, stopped = run_once(process, code.encode(), quota, cpu_used)
            failed = err.decode("utf-8", "replace") if process.returncode else None
            reached = [stopped] if stopped and stopped != "wall" else []
            reached += [c for c in confined.reached(failed) if c not in reached]
        finally:
            confined.close()
            self.gateways.sessions.close(session)
        return Execution(
            language=language,
            code=code,
            exit_code=process.returncode,
            seconds=round(time.perf_counter() - started, 3),
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            stdout_bytes=len(out),
            stderr_bytes=len(err),
            stdout_sha256=hashlib.sha256(out).hexdigest(),
            stderr_sha256=hashlib.sha256(err).hexdigest(),
            limit=reached[0] if reached else None,
            timed_out=stopped == "wall",
            tool_events=list(session.events),
        )


def _identity(env_marker: str) -> dict:
    """What decides the tools environment's behaviour: its Python and packages."""
    built = json.loads(Path(env_marker).read_text())
    return {"python": built.get("python_version"), "packages": built.get("packages")}
