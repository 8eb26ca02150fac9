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
import time

from ..transcripts import Event
from . import CapReached, Sessions, bearer_token
from .server import AsgiServer, limit_body

_TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("session", default=None)
BODY_LIMIT_BYTES = 8 << 20


class MCPGateway(AsgiServer):
    """The MCP server of one run job, on 127.0.0.1 (uvicorn in a thread)."""

    def __init__(
        self, functions, sessions: Sessions, unix_path=None, languages=(), body_limit=None
    ):
        # unix_path: the same server on a Unix socket too (an agent's sandbox's door);
        # languages: the code tools offered (their CodeTools set as ``code`` before use)
        self.functions, self.sessions = functions, sessions
        self.languages, self.code = tuple(languages), None
        app = limit_body(
            _with_session(self._app()), body_limit or BODY_LIMIT_BYTES, self._too_large
        )
        super().__init__(app, [unix_path] if unix_path else [], lifespan="on")

    def url(self, token: str) -> str:
        return f"{self.base}/s/{token}/mcp"

    def _too_large(self, scope, size: int) -> None:
        """A body past the limit: a refused tool event of the session it names."""
        from starlette.datastructures import Headers

        path = scope.get("path", "")
        token = path[3:].partition("/")[0] if path.startswith("/s/") else None
        session = self.sessions.find(bearer_token(Headers(scope=scope), token))
        if session is not None:
            error = f"refused: HTTP 413, a body of {size}+ bytes"
            data = {"url": "mcp", "method": "POST", "status": None, "bytes": 0, "cache": None}
            data |= {"error": error, "rendered": f"Error: {error}", "route": "refused"}
            session.record("tool", 0, data, time.perf_counter())

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
    """ASGI: the session token from the sandbox door's header, ``/s/<token>``
    (stripped) or the session header, for the tool calls this request makes."""
    from starlette.datastructures import Headers

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            path, token = scope["path"], None
            if path.startswith("/s/"):
                token, _, rest = path[3:].partition("/")
                scope = {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}
            _TOKEN.set(bearer_token(Headers(scope=scope), token))
        await app(scope, receive, send)

    return wrapped
