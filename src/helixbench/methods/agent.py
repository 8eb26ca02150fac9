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
In its sandbox the agent sees only its own code and runtime (what ``command``,
``python`` and ``env`` name, and ``paths:``), an empty ``HOME`` and its question's
folder: never the benchmarks' files, the user's home or other runs
(:mod:`helixbench.gateway.sandbox.view`). A timeout (``timeout_s``), a crash, a
non-zero exit or output that holds no answer is the question's recorded error
(``agent_timeout``, ``agent_error``, ``agent_no_answer``) with the tail of its
stderr, secrets redacted; a cap of ``limits:`` reached is ``agent_limit: <cap>``
(:mod:`helixbench.gateway.sandbox.limits`); ``max_model_calls`` and
``max_tool_calls`` cap a question's calls.

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
import logging
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import secrets
from ..datasets.snapshots import Snapshot
from ..environments import environment_python
from ..gateway import sandbox
from ..gateway.gateways import Gateways
from ..gateway.sandbox import limits, root, view
from ..gateway.sandbox.output import Caps, LineReader, kill, run_once
from ..paths import UPSTREAM_DIR
from ..transcripts import Event, QuestionResult
from . import Prepared
from .agent_answers import (
    AnswerFileTooLarge,
    answer_object,
    capped_answer,
    json_object,
    read_answer,
    read_own_file,
    reported_outcome,
)
from .choices import LETTERS, presentations
from .originals import RUNNERS_DIR

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder helixbench is imported from
AGENT_SITE = PACKAGE_ROOT / "helixbench" / "gateway" / "agent_site"
# Environment variables an agent keeps from the job's; no other (no key) reaches it.
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "HF_HOME", "HF_HUB_OFFLINE")
STDERR_TAIL = 2000
log = logging.getLogger("helixbench.agent")


@dataclass(frozen=True)
class AgentSettings:
    command: tuple[str, ...]
    python: str = sys.executable
    mode: str = "per-question"
    timeout_s: float = 300.0
    max_model_calls: int = 50
    max_tool_calls: int = 200
    max_tokens_ceiling: int | None = None  # the most a model call may ask (None: the gateway's)
    reply_cap: int | None = None  # bytes of a tool reply the agent keeps (None: all)
    env: tuple[tuple[str, str], ...] = ()
    sandbox: str = "isolated"  # or "cooperative": no namespaces, the sitecustomize only
    limits: limits.Limits = field(default_factory=limits.Limits)
    paths: tuple[str, ...] = ()  # more the agent reads (read-only)
    upstream: tuple[str, ...] = ()  # upstream files it reads (relpaths), shown one by one

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
            max_tokens_ceiling=spec.get("max_tokens_ceiling"),
            reply_cap=spec.get("reply_cap"),
            env=tuple(sorted((spec.get("env") or {}).items())),
            sandbox=spec.get("sandbox", "isolated"),
            limits=limits.Limits.from_spec(spec.get("limits")),
            paths=tuple(str(p) for p in spec.get("paths") or ()),
            upstream=tuple(spec.get("upstream") or ()),
        )

    @property
    def isolated(self) -> bool:
        return self.sandbox != "cooperative"


class Agent:
    """The ``agent`` method: one program, its gateways and (long-lived) its process."""

    def __init__(
        self, settings: AgentSettings, gateways: Gateways, workdir: Path, shown: dict | None = None
    ):
        self.settings = settings
        self.gateways = gateways
        self.workdir = workdir
        self.shown = shown or {}  # multiple-choice questions, as the method's variant shows them
        self._process = None  # long-lived: the process, its session and its stdout
        self._lock = threading.Lock()
        self.hidden: list[str] = []  # folders of its named files the sandbox does not show
        self._hinted = False

    @property
    def header(self) -> str:
        return "agent: " + " ".join(self.settings.command)

    def _caps(self) -> Caps:
        cpu = self.settings.limits.cpu_s if self.settings.isolated else None
        output = int(self.settings.limits.output_mb * limits.MB)
        return Caps(output, self.settings.timeout_s, cpu)

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        caps = {
            "max_model_calls": self.settings.max_model_calls,
            "max_tool_calls": self.settings.max_tool_calls,
        }
        result = QuestionResult(question_id=question_id)
        shown = self.shown.get(question_id)
        if shown is not None:  # its choices and the variant's prompt go with the question
            result.presented = list(shown.presented) or None
        if self.settings.mode == "long-lived":
            with self._lock:  # one question at a time in the one process
                session, (answer, error, info) = self._ask_long_lived(question_id, question, caps)
        else:
            session = self._open(question_id, question, caps)
            try:
                answer, error, info = self._ask_once(session, question_id, question)
            finally:
                self.gateways.sessions.close(session)
        answer, error = capped_answer(answer, error)
        hint = view.missing_file_hint(info["stderr_tail"], self.hidden)
        if error == "agent_error" and hint:
            info["hint"] = hint
            if not self._hinted:  # (once a run: every question would say the same)
                self._hinted = True
                log.warning("%s: %s", " ".join(self.settings.command), hint)
        info["routes"] = dict(sorted(session.routes.items()))
        events = list(session.events)
        result.events = [*events, Event("agent", len(events), info)]
        return result.finish(answer=answer, error=error)

    def _open(self, question_id: str, question: str, caps: dict):
        """A question's session; without a sandbox the agent's own reports of what it
        could not do are all there is, so its session takes them."""
        isolated = self.settings.isolated
        return self.gateways.sessions.open(question_id, question, caps, not isolated)

    # -- one process per question ------------------------------------------------------

    def _ask_once(self, session, question_id: str, question: str):
        with tempfile.TemporaryDirectory(dir=self.workdir, prefix="agent-") as tmp:
            tmp = Path(tmp)
            question_file, answer_file = tmp / "question.json", tmp / "answer.json"
            payload = json.dumps(self._payload(question_id, question))
            question_file.write_text(payload + "\n")
            values = self._values(session.token, question_id, question_file, answer_file, tmp)
            started = time.perf_counter()
            process, confined = self._start(values, tmp, per_question=True)
            try:
                cpu_used = _cpu_used(confined)
                stdin = (payload + "\n").encode()
                out, err, stopped = run_once(process, stdin, self._caps(), cpu_used)
                info = {
                    "mode": "per-question",
                    "exit_code": process.returncode,
                    "seconds": round(time.perf_counter() - started, 3),
                    "stderr_tail": secrets.redact(err.decode("utf-8", "replace")[-STDERR_TAIL:]),
                }
                failed = err.decode("utf-8", "replace") if process.returncode else None
                reached = _reached(stopped, confined, info, cpu_used(), failed)
            finally:
                if confined is not None:
                    confined.close()
            if stopped == "wall":
                return None, "agent_timeout", info
            try:
                written = read_own_file(answer_file)
            except AnswerFileTooLarge as exc:  # read no further: its start is no answer
                info["answer_file_bytes"] = exc.size
                return None, "agent_answer_too_long", info
            printed = out.decode("utf-8", "replace")
            answer = read_answer(written) if written else None
            answer = answer if answer is not None else read_answer(printed)
            error, report = reported_outcome(answer_object(written or printed) or {}, answer)
            if report is not None:
                info["runner"] = report
            if reached:  # a cap before the program's own account of itself
                return answer, f"agent_limit: {reached[0]}", info
            if process.returncode != 0:
                return answer, "agent_error", info
            return answer, error, info

    # -- one process per shard -----------------------------------------------------------

    def _ask_long_lived(self, question_id: str, question: str, caps: dict):
        if self._process is None or self._process[0].poll() is not None:
            if self._process is not None and self._process[3] is not None:
                self._process[3].close()
            session = self._open(question_id, question, caps)
            own = Path(tempfile.mkdtemp(dir=self.workdir, prefix="agent-"))
            values = self._values(session.token, question_id, "", "", own)
            process, confined = self._start(values, own, per_question=False, text=True)
            reader = LineReader(process, int(self.settings.limits.output_mb * limits.MB))
            self._process = (process, session, reader, confined)
            atexit.register(kill, process)
            if confined is not None:
                atexit.register(confined.close)
        process, session, reader, confined = self._process
        session.start(question_id, question)
        reader.begin()
        started = time.perf_counter()
        cpu_used = _cpu_used(confined, since=True)
        process.stdin.write(json.dumps(self._payload(question_id, question)) + "\n")
        process.stdin.flush()
        answer, error, report, stopped = None, "agent_timeout", None, None
        deadline = time.monotonic() + self.settings.timeout_s
        quota = self._caps()
        while time.monotonic() < deadline:
            try:
                line = reader.lines.get(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                line = ""
            if line is None:  # the process ended
                error = "agent_error"
                break
            if reader.written > quota.output_bytes:
                stopped = "output"
                break
            used = cpu_used()
            if quota.cpu_s is not None and used is not None and used > quota.cpu_s:
                stopped = "cpu"
                break
            reply = json_object(line) if line else None
            if reply is not None and reply.get("id") == question_id:
                answer = read_answer(line)
                error, report = reported_outcome(reply, answer)
                break
        if error == "agent_timeout" or stopped:
            kill(process)
        info = {
            "mode": "long-lived",
            "exit_code": process.poll(),
            "seconds": round(time.perf_counter() - started, 3),
            "stderr_tail": secrets.redact("".join(reader.errors)[-STDERR_TAIL:]),
        }
        failed = "".join(reader.errors) if error == "agent_error" else None
        reached = _reached(stopped, confined, info, cpu_used(), failed)
        if reached:
            error = f"agent_limit: {reached[0]}"
        if report is not None:
            info["runner"] = report
        return session, (answer, error, info)

    # -- what the agent is given -----------------------------------------------------------

    def _payload(self, question_id: str, question: str) -> dict:
        """A question as the agent reads it; a multiple-choice one with its choices by
        letter, in the order shown, and the variant's prompt (the answer: a letter)."""
        payload = {"id": question_id, "question": question}
        shown = self.shown.get(question_id)
        if shown is not None:
            payload["prompt"] = shown.prompt
            payload["choices"] = dict(zip(LETTERS, shown.options, strict=False))
        return payload

    def _start(self, values: dict, cwd: Path, per_question: bool, text: bool = False):
        """The agent's process (in its sandbox where isolated, with what confines it)."""
        argv = [a.format(**values) for a in self.settings.command]
        env = self._env(values)
        confined = None
        if self.settings.isolated:  # its own namespaces: the gateways are the only way out
            given = [Path(p.format(**values)).expanduser().absolute() for p in self.settings.paths]
            visible = view.visible_paths(
                self.settings.python,
                argv,
                [env[k] for k, _ in self.settings.env],
                cwd,
                [f"{UPSTREAM_DIR}/{relpath}" for relpath in self.settings.upstream],
                [str(p) for p in given],
                env.get("PATH", ""),
            )
            self.hidden = view.hidden_folders(argv, visible)
            confined = self.gateways.sandbox.confine(
                argv, env, cwd, values["token"], visible, self.settings.limits, per_question
            )
            argv, env = confined.command, self.gateways.sandbox.launcher_env()
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            text=text,
            start_new_session=True,  # a timeout kills the agent's children too
            pass_fds=confined.pass_fds if confined is not None else (),
        )
        if confined is not None:
            confined.started()
        return process, confined

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
            # The public hosts answer inside with a certificate of the run's own CA; its
            # home is an empty folder of its own.
            env |= self.gateways.sandbox.ca_env() | {"TMPDIR": "/tmp", "HOME": root.HOME}
            env.pop("HF_HOME", None)  # the user's cache, which it does not see (or names)
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


def _cpu_used(confined, since: bool = False):
    """A function giving the CPU seconds of the sandbox's processes (from ``since``
    this call, for a long-lived agent's question); None without a sandbox."""
    if confined is None:
        return lambda: None
    start = (confined.status().get("cpu_s") or 0.0) if since else 0.0

    def used() -> float | None:
        value = confined.status().get("cpu_s")
        return None if value is None else round(value - start, 2)

    return used


def _reached(stopped: str | None, confined, info: dict, cpu_s, failed_with=None) -> list[str]:
    """The caps a question reached, first the one that stopped it (recorded in
    ``info`` with its CPU seconds)."""
    found = [stopped] if stopped and stopped != "wall" else []
    if confined is not None:
        found += [cap for cap in confined.reached(failed_with) if cap not in found]
    if cpu_s is not None:
        info["cpu_s"] = cpu_s
    if found:
        info["limits_reached"] = found
    return found


_GATEWAYS: dict[tuple, Gateways] = {}
_GATEWAYS_LOCK = threading.Lock()


def prepare(context) -> Prepared:
    """An agent task: the run's model and tools behind gateways shared by the shard's
    tasks, and the program to run."""
    from ..tools import tool_settings
    from ..tools.executor import ToolExecutor
    from ..tools.genesets import geneset_settings
    from ..tools.rest import FUNCTIONS as REST
    from ..tools.rest import rest_settings
    from .toolsets import LANGUAGES, code_settings

    spec = context.run["method_spec"]
    names = tuple(spec.get("tools") or ())  # code over MCP; Ensembl's and UniProt's hosts
    languages = [n for n in names if n in LANGUAGES]
    settings = AgentSettings.from_spec(spec)
    if settings.isolated:
        sandbox.require()  # the cause and the fix, before any question runs
    snapshot_path = context.task.get("snapshot")  # GeneGPT's main.py: its header's replies
    key = (id(context.model), context.run["model"], context.run["method"], snapshot_path)
    with _GATEWAYS_LOCK:
        if key not in _GATEWAYS:  # loaded and started once for the shard's tasks
            snapshot = Snapshot.load(Path(snapshot_path)) if snapshot_path else None
            # NCBI's hosts and GeneAgent's services, as the gene-set methods reach them
            reached = geneset_settings(tool_settings(context.tools_mode))
            executor = ToolExecutor(rest_settings(reached, (*names, *(REST if languages else ()))))
            code = code_settings(spec, languages) if languages else None
            _GATEWAYS[key] = Gateways(
                context.model,
                executor,
                context.run["model"],
                settings.reply_cap,
                snapshot,
                code,
                settings.limits,
                settings.max_tokens_ceiling,
            )
    snapshot = _GATEWAYS[key].demonstrations
    agent = Agent(settings, _GATEWAYS[key], _GATEWAYS[key].workdir, presentations(context))
    info = {
        "agent": {
            "command": list(settings.command),
            "mode": settings.mode,
            "sandbox": settings.sandbox,
        }
    }
    if settings.isolated:  # its caps, and what holds each on this machine
        info["agent"]["limits"] = settings.limits.as_dict() | {"timeout_s": settings.timeout_s}
        info["agent"]["limits_held"] = limits.held(settings.limits, limits.cgroups())
    if spec.get("original"):  # a seed system run unchanged: what ran it, and the override
        built = json.loads(Path(spec["python"]).read_text())
        info["agent"] |= {
            "original": spec["original"],
            "sleep_scale": spec.get("sleep_scale", 1),
            "environment": {k: built.get(k) for k in ("built_with", "python_version", "packages")},
        }
    return Prepared(agent, context.model, None, snapshot.id if snapshot else None, info)
