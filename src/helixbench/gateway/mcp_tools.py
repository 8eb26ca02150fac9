"""NCBI's functions over MCP (the ``mcp`` SDK, streamable HTTP), for agents that take
MCP servers: ``esearch``, ``efetch``, ``esummary``, ``elink`` and ``blast``, the
function-calling protocol's own (:class:`helixbench.tools.functions.NCBIFunctions`),
with the same argument checks, sent through the same tool executor, each call a
tool event of the session named in the URL (``/s/<token>/mcp``) or the
``X-Helixbench-Session`` header. Where the method names them, ``python`` and
``bash`` too (:mod:`.code`): each call run in a sandbox of its own, outside the
agent's, on the question's scratch folder.
"""

from __future__ import annotations

import contextvars
import socket
import threading
import time

from ..transcripts import Event
from . import TOKEN_HEADER, CapReached, Sessions

_TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("session", default=None)


class MCPGateway:
    """The MCP server of one run job, on 127.0.0.1 (uvicorn in a thread)."""

    def __init__(self, functions, sessions: Sessions, unix_path=None, languages=()):
        # unix_path: the same server on a Unix socket too (an agent's sandbox's door);
        # languages: the code tools offered (their CodeTools set as ``code`` before use)
        self.functions, self.sessions = functions, sessions
        self.languages, self.code = tuple(languages), None
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._sockets = [self._socket]
        if unix_path is not None:
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.bind(str(unix_path))
            self._sockets.append(unix)
        self.port = self._socket.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._server = None
        self._thread = None

    def url(self, token: str) -> str:
        return f"{self.base}/s/{token}/mcp"

    def __enter__(self):
        import uvicorn

        config = uvicorn.Config(_with_session(self._app()), log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": self._sockets}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        for each in self._sockets:
            each.close()

    def _app(self):
        from mcp.server.mcpserver import MCPServer

        from ..tools.functions import FUNCTIONS
        from .code import LANGUAGES

        server = MCPServer("helixbench-ncbi", instructions="NCBI's web APIs, through helixbench")
        for name, (description, _, _) in FUNCTIONS.items():
            server.add_tool(self._tool(name), name=name, description=description)
        for name in self.languages:
            server.add_tool(self._code_tool(name), name=name, description=LANGUAGES[name])
        return server.streamable_http_app(stateless_http=True, json_response=True)

    def _tool(self, name: str):
        """The function the MCP server calls for ``name`` (typed for its schema)."""
        call = self._call

        def esearch(
            db: str, term: str, retmax: int | None = None, retmode: str | None = None,
            sort: str | None = None,
        ) -> str:  # fmt: skip
            return call("esearch", db=db, term=term, retmax=retmax, retmode=retmode, sort=sort)

        def efetch(db: str, id: str, retmax: int | None = None, retmode: str | None = None) -> str:
            return call("efetch", db=db, id=id, retmax=retmax, retmode=retmode)

        def esummary(
            db: str, id: str, retmax: int | None = None, retmode: str | None = None
        ) -> str:
            return call("esummary", db=db, id=id, retmax=retmax, retmode=retmode)

        def elink(dbfrom: str, db: str, id: str, retmode: str | None = None) -> str:
            return call("elink", dbfrom=dbfrom, db=db, id=id, retmode=retmode)

        def blast(sequence: str, hitlist_size: int | None = None) -> str:
            return call("blast", sequence=sequence, hitlist_size=hitlist_size)

        return {"esearch": esearch, "efetch": efetch, "esummary": esummary, "elink": elink,
                "blast": blast}[name]  # fmt: skip

    def _code_tool(self, language: str):
        def run(code: str) -> str:
            return self._call(language, code=code)

        return run

    def _call(self, name: str, **arguments) -> str:
        session = self.sessions.find(_TOKEN.get())
        if session is None:
            return "Error: unknown or missing helixbench session"
        arguments = {k: v for k, v in arguments.items() if v is not None}
        started = time.perf_counter()
        try:
            index = session.tool_call(f"mcp:{name}")
        except CapReached as exc:
            return f"Error: the agent reached its cap of {exc}"
        if name in self.languages:  # the requests the code made, then the execution
            from .code import CodeCall

            execution = self.code.run(name, arguments["code"], session.question_id, session.token)
            done = CodeCall(execution, index)
            session.events += [Event(e.type, e.index, e.data, e.latency_s) for e in done.events]
        else:
            done = self.functions.call(name, arguments, session.question_id, index)
        session.record("tool", index, {**done.describe(), "route": f"mcp:{name}"}, started)
        return done.text


def _with_session(app):
    """ASGI: the session token from ``/s/<token>`` (stripped) or the header, for the
    tool calls this request makes."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            path, token = scope["path"], None
            if path.startswith("/s/"):
                token, _, rest = path[3:].partition("/")
                scope = {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}
            headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            token = token or headers.get(TOKEN_HEADER.lower())
            _TOKEN.set(token)
        await app(scope, receive, send)

    return wrapped
