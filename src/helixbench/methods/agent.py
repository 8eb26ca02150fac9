"""``kind: agent``: answers from a program someone else wrote, run unchanged behind
helixbench's gateways (:mod:`helixbench.gateway`).

The method names the program (``command``, an argv list; placeholders below) and
the Python it runs with (``python``: an interpreter, or a venv's directory; the
run job's own by default). Two ways to talk:

- ``mode: per-question`` (the default): one process per question. The question
  comes as JSON on stdin (``{"id", "question"}``) and in ``{question_file}``; the
  answer is a JSON object with ``answer`` on stdout or in ``{answer_file}``, or
  else the last stdout line that starts with ``Answer:``.
- ``mode: long-lived``: one process per shard, for agents that take minutes to
  start: a question a JSON line on stdin, its answer a JSON line on stdout
  (``{"id", "answer"}``, and as in an answer file ``error`` and ``runner``), one
  question at a time.

The agent's environment holds only what it needs: ``PATH``, ``HOME``, the locale,
its own ``env`` settings, and the gateways': ``OPENAI_BASE_URL`` and
``OPENAI_API_BASE`` (openai<1), ``AZURE_OPENAI_ENDPOINT``, ``OPENAI_API_KEY`` /
``AZURE_OPENAI_API_KEY`` (the question's session token: no real key reaches it),
``HELIXBENCH_TOOLS_URL`` (the tool gateway, for agents that take a base URL) and
``HELIXBENCH_MCP_URL``. It runs in a sandbox of its own (``sandbox: isolated``, the
default: :mod:`helixbench.gateway.sandbox`), where NCBI's public hosts answer
through the tool gateway and nothing else is reachable; with ``sandbox:
cooperative`` it runs without one and the ``sitecustomize`` sends a Python agent's
hard-coded NCBI requests to the tool gateway (its runs are marked unsandboxed).
A timeout (``timeout_s``), a crash, a non-zero exit or output
that holds no answer is the question's recorded error (``agent_timeout``,
``agent_error``, ``agent_no_answer``) with the tail of its stderr, secrets
redacted; ``max_model_calls`` and ``max_tool_calls`` cap a question's calls.

Placeholders in ``command`` and ``env``: ``{python}``, ``{question_file}``,
``{answer_file}``, ``{question_id}``, ``{workdir}``, ``{model_url}``,
``{tool_url}``, ``{mcp_url}``, ``{token}``, ``{upstream_dir}`` (the fetched
upstream files) and ``{runners}`` (the originals' runners, :mod:`.originals`).
An answer file's object may also hold ``error`` (the program's own error name,
recorded as the question's) and ``runner`` (what a runner reports, kept in the
record's agent event).

``reply_cap``: the bytes of a tool reply the agent keeps, where it cuts them (GeneGPT's
loop: 10,000). A recorded reply that upstream cut at that size then serves it from
the seeded cache; without it such a reply is a miss offline (the agent may read more
than the recording kept), and a live request in the other modes.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import secrets
from ..datasets.snapshots import Snapshot
from ..gateway import Sessions, sandbox
from ..paths import UPSTREAM_DIR
from ..transcripts import Event, QuestionResult
from . import Prepared
from .originals import RUNNERS_DIR

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder helixbench is imported from
AGENT_SITE = PACKAGE_ROOT / "helixbench" / "gateway" / "agent_site"
# Environment variables an agent keeps from the job's; no other (no key) reaches it.
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "HF_HOME", "HF_HUB_OFFLINE")
# An answer is a name, a list or a sentence: past this it is the agent's output gone
# wrong, kept as that question's error (the record holds its start).
MAX_ANSWER_CHARS = 100_000
STDERR_TAIL = 2000


@dataclass(frozen=True)
class AgentSettings:
    command: tuple[str, ...]
    python: str = sys.executable
    mode: str = "per-question"
    timeout_s: float = 300.0
    max_model_calls: int = 50
    max_tool_calls: int = 200
    reply_cap: int | None = None  # bytes of a tool reply the agent keeps (None: all)
    env: tuple[tuple[str, str], ...] = ()
    sandbox: str = "isolated"  # or "cooperative": no namespaces, the sitecustomize only

    @classmethod
    def from_spec(cls, spec: dict) -> AgentSettings:
        if not spec.get("command"):
            raise ValueError("an agent method needs `command` (an argv list)")
        python = spec.get("python") or sys.executable
        if Path(python).is_dir():  # a venv
            python = str(Path(python) / "bin" / "python")
        elif python.endswith(".json"):  # an environment the original_env rule built
            python = environment_python(python)
        return cls(
            command=tuple(str(a) for a in spec["command"]),
            python=python,
            mode=spec.get("mode", "per-question"),
            timeout_s=float(spec.get("timeout_s", 300.0)),
            max_model_calls=int(spec.get("max_model_calls", 50)),
            max_tool_calls=int(spec.get("max_tool_calls", 200)),
            reply_cap=spec.get("reply_cap"),
            env=tuple(sorted((spec.get("env") or {}).items())),
            sandbox=spec.get("sandbox", "isolated"),
        )

    @property
    def isolated(self) -> bool:
        return self.sandbox != "cooperative"


class Gateways:
    """The model, tool and MCP gateways of one run job, started once, closed at exit."""

    def __init__(
        self, model, executor, served_name: str, reply_cap: int | None = None, demonstrations=None
    ):
        from ..gateway.mcp_tools import MCPGateway
        from ..gateway.model_api import ModelGateway
        from ..gateway.tool_api import FrontHandler, ToolGateway
        from ..tools.functions import NCBIFunctions

        self.sessions = Sessions()
        self.demonstrations = demonstrations
        # The run job's own directory for its agents' questions (mode 700, removed at
        # exit): another job's agents do not share it.
        self.workdir = Path(tempfile.mkdtemp(prefix="helixbench-agents-"))
        doors = self.workdir / ".doors"  # the gateways' Unix sockets, for the sandboxes
        doors.mkdir(mode=0o700)
        self.model = ModelGateway(model, self.sessions, served_name).__enter__()
        self.model.serve_unix(doors / "model.sock")
        self.tools = ToolGateway(executor, self.sessions, reply_cap, demonstrations).__enter__()
        self.tools.serve_unix(doors / "tool.sock")
        self.tools.serve_unix(doors / "tool-front.sock", FrontHandler)
        self.mcp = MCPGateway(NCBIFunctions(executor), self.sessions, doors / "mcp.sock")
        self.mcp.__enter__()
        ports = {self.model.port: "model.sock", self.tools.port: "tool.sock"}
        ports[self.mcp.port] = "mcp.sock"
        self.sandbox = sandbox.Sandbox(self.workdir, doors, executor.settings.allowed_hosts, ports)
        atexit.register(self.close)

    def close(self) -> None:
        for server in (self.mcp, self.tools, self.model):
            server.__exit__(None, None, None)
        shutil.rmtree(self.workdir, ignore_errors=True)


class Agent:
    """The ``agent`` method: one program, its gateways and (long-lived) its process."""

    def __init__(self, settings: AgentSettings, gateways: Gateways, workdir: Path):
        self.settings = settings
        self.gateways = gateways
        self.workdir = workdir
        self._process = None  # long-lived: the process, its session and its stdout
        self._lock = threading.Lock()

    @property
    def header(self) -> str:
        return "agent: " + " ".join(self.settings.command)

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        caps = {
            "max_model_calls": self.settings.max_model_calls,
            "max_tool_calls": self.settings.max_tool_calls,
        }
        result = QuestionResult(question_id=question_id)
        if self.settings.mode == "long-lived":
            with self._lock:  # one question at a time in the one process
                session, (answer, error, info) = self._ask_long_lived(question_id, question, caps)
        else:
            session = self.gateways.sessions.open(question_id, question, caps)
            try:
                answer, error, info = self._ask_once(session, question_id, question)
            finally:
                self.gateways.sessions.close(session)
        answer, error = capped_answer(answer, error)
        info["routes"] = dict(sorted(session.routes.items()))
        events = list(session.events)
        result.events = [*events, Event("agent", len(events), info)]
        return result.finish(answer=answer, error=error)

    # -- one process per question ------------------------------------------------------

    def _ask_once(self, session, question_id: str, question: str):
        with tempfile.TemporaryDirectory(dir=self.workdir, prefix="agent-") as tmp:
            tmp = Path(tmp)
            question_file, answer_file = tmp / "question.json", tmp / "answer.json"
            payload = json.dumps({"id": question_id, "question": question})
            question_file.write_text(payload + "\n")
            values = self._values(session.token, question_id, question_file, answer_file, tmp)
            started = time.perf_counter()
            process = self._start(values, tmp)
            try:
                out, err = process.communicate(
                    (payload + "\n").encode(), timeout=self.settings.timeout_s
                )
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill(process)
                out, err = process.communicate()
                timed_out = True
            info = {
                "mode": "per-question",
                "exit_code": process.returncode,
                "seconds": round(time.perf_counter() - started, 3),
                "stderr_tail": secrets.redact(err.decode("utf-8", "replace")[-STDERR_TAIL:]),
            }
            if timed_out:
                return None, "agent_timeout", info
            written = answer_file.read_text() if answer_file.is_file() else None
            answer = read_answer(written) if written else None
            answer = answer if answer is not None else read_answer(out.decode("utf-8", "replace"))
            if process.returncode != 0:
                return answer, "agent_error", info
            error, report = reported_outcome(_json_object(written) or {}, answer)
            if report is not None:
                info["runner"] = report
            return answer, error, info

    # -- one process per shard -----------------------------------------------------------

    def _ask_long_lived(self, question_id: str, question: str, caps: dict):
        if self._process is None or self._process[0].poll() is not None:
            session = self.gateways.sessions.open(question_id, question, caps)
            own = Path(tempfile.mkdtemp(dir=self.workdir, prefix="agent-"))
            values = self._values(session.token, question_id, "", "", own)
            process = self._start(values, own, text=True)
            lines: queue.Queue = queue.Queue()
            errors: list[str] = []
            threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
            threading.Thread(target=_collect, args=(process.stderr, errors), daemon=True).start()
            self._process = (process, session, lines, errors)
            atexit.register(_kill, process)
        process, session, lines, errors = self._process
        session.start(question_id, question)
        started = time.perf_counter()
        process.stdin.write(json.dumps({"id": question_id, "question": question}) + "\n")
        process.stdin.flush()
        answer, error, report = None, "agent_timeout", None
        deadline = time.monotonic() + self.settings.timeout_s
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:  # the process ended
                error = "agent_error"
                break
            reply = _json_object(line)
            if reply is not None and reply.get("id") == question_id:
                answer = read_answer(line)
                error, report = reported_outcome(reply, answer)
                break
        if error == "agent_timeout":
            _kill(process)
        info = {
            "mode": "long-lived",
            "exit_code": process.poll(),
            "seconds": round(time.perf_counter() - started, 3),
            "stderr_tail": secrets.redact("".join(errors)[-STDERR_TAIL:]),
        }
        if report is not None:
            info["runner"] = report
        return session, (answer, error, info)

    # -- what the agent is given -----------------------------------------------------------

    def _start(self, values: dict, cwd: Path, text: bool = False) -> subprocess.Popen:
        argv = [a.format(**values) for a in self.settings.command]
        env = self._env(values)
        if self.settings.isolated:  # its own namespaces: the gateways are the only way out
            box = self.gateways.sandbox
            named = [self.settings.python, *argv, *(env[k] for k, _ in self.settings.env)]
            # The project and helixbench's own Python stay readable wherever they are
            # (a clone under /tmp too): an original's environment links to them.
            named += [os.getcwd(), sys.prefix, str(PACKAGE_ROOT)]
            visible = _named_paths(named, cwd)
            argv = box.command(argv, env, cwd, values["token"], visible)
            env = box.launcher_env()
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            text=text,
            start_new_session=True,  # a timeout kills the agent's children too
        )

    def _values(self, token, question_id, question_file, answer_file, workdir) -> dict:
        return {
            "python": self.settings.python,
            "question_file": str(question_file),
            "answer_file": str(answer_file),
            "question_id": question_id,
            "workdir": str(workdir),
            "model_url": self.gateways.model.base_url,
            "tool_url": f"{self.gateways.tools.base}/s/{token}",
            "mcp_url": self.gateways.mcp.url(token),
            "token": token,
            "upstream_dir": str(Path(UPSTREAM_DIR).resolve()),
            "runners": str(RUNNERS_DIR),
        }

    def _env(self, values: dict) -> dict:
        env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
        model = values["model_url"]
        env |= {
            "OPENAI_BASE_URL": model,
            "OPENAI_API_BASE": model,  # openai<1
            "AZURE_OPENAI_ENDPOINT": model.removesuffix("/v1"),
            "OPENAI_API_KEY": values["token"],
            "AZURE_OPENAI_API_KEY": values["token"],
            "HELIXBENCH_TOOLS_URL": values["tool_url"],
            "HELIXBENCH_MCP_URL": values["mcp_url"],
            "HELIXBENCH_QUESTION_ID": values["question_id"],
            "PYTHONUNBUFFERED": "1",
        }
        if self.settings.isolated:
            # The public hosts answer inside with a certificate of the run's own CA.
            env |= self.gateways.sandbox.ca_env() | {"TMPDIR": "/tmp"}
        else:  # cooperative: the sitecustomize routes a Python agent's requests
            gateways = [self.gateways.model.base, self.gateways.tools.base, self.gateways.mcp.base]
            env |= {
                "HELIXBENCH_GATEWAY_TOOLS": self.gateways.tools.base,
                "HELIXBENCH_GATEWAY_TOKEN": values["token"],
                "HELIXBENCH_GATEWAY_URLS": " ".join(gateways),
                "PYTHONPATH": str(AGENT_SITE),
            }
        env |= {k: str(v).format(**values) for k, v in self.settings.env}
        return env


def _named_paths(values, own: Path) -> list[str]:
    """The existing absolute paths among ``values`` (an interpreter's whole venv), but
    those in the question's own folder: what the agent may read in a sandbox."""
    found = []
    for value in values:
        for part in str(value).split(os.pathsep):
            path = Path(part)
            if not path.is_absolute() or not path.exists() or path.is_relative_to(own):
                continue
            if path.parent.name == "bin" and (path.parent.parent / "pyvenv.cfg").exists():
                path = path.parent.parent  # a venv's python: the venv
            found.append(str(path))
    return found


def environment_python(marker: str) -> str:
    """The interpreter of an environment the ``original_env`` rule built (its marker)."""
    try:
        return json.loads(Path(marker).read_text())["python"]
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{marker}: not a built environment ({exc})") from None


def read_answer(text: str | None) -> str | None:
    """An agent's answer: a JSON object's ``answer`` (its last such line), else its last
    line that starts with ``Answer:``; None where it holds neither."""
    if not text:
        return None
    whole = _json_object(text)
    if whole is not None and "answer" in whole:
        return None if whole["answer"] is None else str(whole["answer"])
    lines = [line.strip() for line in text.strip().splitlines()]
    for line in reversed(lines):
        found = _json_object(line)
        if found is not None and "answer" in found:
            return None if found["answer"] is None else str(found["answer"])
    for line in reversed(lines):
        if line.lower().startswith("answer:"):
            return line
    return None


def reported_outcome(reply: dict, answer: str | None) -> tuple[str | None, dict | None]:
    """The question's error and the runner's report (secrets removed) that an answer
    object states: its own ``error`` (GeneGPT's lengthError) if any, else
    ``agent_no_answer`` where it holds no answer."""
    error = None if answer is not None else "agent_no_answer"
    if reply.get("error"):
        error = str(reply["error"])
    report = reply.get("runner")
    if report is not None:
        report = json.loads(secrets.redact(json.dumps(report)))
    return error, report


def _json_object(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError):  # nested past Python's limit: not one
        return None
    return value if isinstance(value, dict) else None


def capped_answer(answer: str | None, error: str | None) -> tuple[str | None, str | None]:
    """An answer longer than :data:`MAX_ANSWER_CHARS` is that question's recorded error
    (``agent_answer_too_long``), its start kept: no agent's output can swell a record."""
    if answer is None or len(answer) <= MAX_ANSWER_CHARS:
        return answer, error
    cut = f"{answer[:MAX_ANSWER_CHARS]} [... {len(answer) - MAX_ANSWER_CHARS} more characters]"
    return cut, "agent_answer_too_long"


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _collect(stream, into: list) -> None:
    for line in stream:
        into.append(line)
        del into[:-200]


def _kill(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_GATEWAYS: dict[tuple, Gateways] = {}
_GATEWAYS_LOCK = threading.Lock()


def prepare(context) -> Prepared:
    """An agent task: the run's model and tools behind gateways shared by the shard's
    tasks, and the program to run."""
    from ..tools import tool_settings
    from ..tools.executor import ToolExecutor
    from ..tools.genesets import geneset_settings

    spec = context.run["method_spec"]
    settings = AgentSettings.from_spec(spec)
    if settings.isolated:
        sandbox.require()  # the cause and the fix, before any question runs
    snapshot_path = context.task.get("snapshot")  # GeneGPT's main.py: its header's replies
    key = (id(context.model), context.run["model"], context.run["method"], snapshot_path)
    with _GATEWAYS_LOCK:
        if key not in _GATEWAYS:  # loaded and started once for the shard's tasks
            snapshot = Snapshot.load(Path(snapshot_path)) if snapshot_path else None
            # NCBI's hosts and GeneAgent's services, as the gene-set methods reach them
            executor = ToolExecutor(geneset_settings(tool_settings(context.tools_mode)))
            _GATEWAYS[key] = Gateways(
                context.model, executor, context.run["model"], settings.reply_cap, snapshot
            )
    snapshot = _GATEWAYS[key].demonstrations
    agent = Agent(settings, _GATEWAYS[key], _GATEWAYS[key].workdir)
    info = {
        "agent": {
            "command": list(settings.command),
            "mode": settings.mode,
            "sandbox": settings.sandbox,
        }
    }
    if spec.get("original"):  # a seed system run unchanged: what ran it, and the override
        built = json.loads(Path(spec["python"]).read_text())
        info["agent"] |= {
            "original": spec["original"],
            "sleep_scale": spec.get("sleep_scale", 1),
            "environment": {k: built.get(k) for k in ("built_with", "python_version", "packages")},
        }
    return Prepared(agent, context.model, None, snapshot.id if snapshot else None, info)
