"""The tool gateway: the web services an agent calls, on 127.0.0.1, each request sent
through the run's tool executor and recorded as a tool event of its session.

A request names its public URL one of three ways:

- ``/<host>/<path>?<query>``: what the agent's ``sitecustomize`` writes for any
  ``https://<host>/<path>`` the agent asks for (so a foreign host arrives here too,
  and is refused and recorded);
- the service's own path (:data:`PUBLIC_PATHS`): ``/entrez/eutils/esearch.fcgi``,
  ``/blast/Blast.cgi``, ``/gprofiler/api/gost/profile/``, ``/Enrichr/addList``,
  ``/research/pubtator3-api/...``, for an agent given this gateway as its base URL;
- either, after ``/s/<token>`` (an agent that cannot send headers).

The session is the token of the ``X-Helixbench-Session`` header or the path prefix.
Inside an agent's sandbox (:mod:`.sandbox`) requests come another way: to the
public host itself, which resolves there to a front that passes each request to this
gateway's front socket (:data:`FRONT_SOCKET`) with its sandbox's token in the door's
header; the URL is then ``https://<Host header><path>``. GET and POST (JSON or form
bodies, as g:Profiler and Enrichr take them) are served; the reply is the service's
status and body, or, for a refused or failed call, a status that says so (403
refused, 502 failed) with the executor's message.

What an agent tried and was refused (a connection, a datagram, a lookup, a system
call, a door's refusal) is recorded by its sandbox's first process, over a socket of
its own (:data:`RECORDS_SOCKET`, with a key the agent never sees): an agent cannot
write its own record. Only an agent without a sandbox (``sandbox: cooperative``)
reports for itself, one refused connection a request.
"""

from __future__ import annotations

import hmac
import json
import time
from email.parser import BytesParser
from email.policy import HTTP
from urllib.parse import parse_qsl, unquote, urlsplit

from .. import secrets
from ..tools import ToolRequest, ToolResult
from ..tools.functions import reply_text
from . import MAX_REPORTED_COUNT, CapReached, Sessions, bearer_token
from .sandbox import FRONT_SOCKET, RECORDS_SOCKET
from .server import AsgiServer, blocking, limit_body, socket_name

# A service's own path prefix -> its public host.
PUBLIC_PATHS = {
    "/entrez/eutils/": "eutils.ncbi.nlm.nih.gov",
    "/blast/Blast.cgi": "blast.ncbi.nlm.nih.gov",
    "/Blast.cgi": "blast.ncbi.nlm.nih.gov",
    "/gprofiler/": "biit.cs.ut.ee",
    "/Enrichr/": "maayanlab.cloud",
    "/research/pubtator3-api/": "www.ncbi.nlm.nih.gov",
}
# What an agent tried and could not do, reported by the sandbox's first process (a
# refused connection or datagram, a foreign name, a refused system call, a door's
# refusal) or, without a sandbox, by the agent's sitecustomize (a socket it did not open).
REFUSED_PATH = "/_refused"
RECORDER_HEADER = "X-Helixbench-Recorder"
# Why a sandbox's door refused a request, as its first process reports it.
DOOR_REFUSALS = {
    "busy": "connections over the sandbox's cap of {cap} in flight (HTTP 503)",
    "slow": "connections that sent no whole request within {cap} s (HTTP 408)",
    "head": "requests whose head ran past {cap} bytes (HTTP 431)",
    "body": "request bodies past {cap} bytes (HTTP 413)",
    "bad": "requests that were not HTTP/1.x (HTTP 400)",
    "evicted": "idle connections closed past {cap} waiting at once",
}
BODY_LIMIT_BYTES = 8 << 20


class ToolGateway(AsgiServer):
    """The tool gateway of one run job: ``executor`` answers, ``sessions`` record;
    ``recorder_key`` the key of the sandboxes' records channel."""

    def __init__(
        self,
        executor,
        sessions: Sessions,
        reply_cap: int | None = None,
        demonstrations=None,
        recorder_key: str | None = None,
        body_limit: int = BODY_LIMIT_BYTES,
    ):
        # reply_cap: what the agent keeps of a reply (GeneGPT's loop: 10,000 bytes); a
        # recorded reply upstream cut at that size serves only such an agent.
        # demonstrations: a Snapshot whose replies answer its URLs (the calls GeneGPT's
        # main.py makes to build its header get the replies a genegpt run's header
        # embeds, as a header is always built from the run's snapshot).
        self.state = {
            "executor": executor,
            "sessions": sessions,
            "reply_cap": reply_cap,
            "demonstrations": demonstrations,
            "recorder_key": recorder_key,
        }
        self._app = _App(self.state)
        super().__init__(limit_body(self._app, body_limit, self._app.too_large))


def demonstration_reply(snapshot, request: ToolRequest) -> ToolResult | None:
    """The snapshot's reply to ``request``'s URL, as a tool result; None where it has none."""
    reply = snapshot.replies.get(request.url) if snapshot and request.body is None else None
    if reply is None:
        return None
    return ToolResult(
        request.url,
        request.index,
        body=reply.body,
        text=reply.rid,
        status=200 if reply.body is not None else None,
        cache="snapshot",
        origin=f"snapshot:{snapshot.id}",
    )


def public_url(path_and_query: str) -> tuple[str | None, str | None]:
    """(session token from a ``/s/<token>`` prefix, the public URL) of a request line's
    target; the URL None where the path names no service."""
    parts = urlsplit(path_and_query)
    path, token = parts.path, None
    if path.startswith("/s/"):
        _, _, token_and_rest = path.partition("/s/")
        token, _, rest = token_and_rest.partition("/")
        path = "/" + rest
    query = f"?{parts.query}" if parts.query else ""
    for prefix, host in PUBLIC_PATHS.items():
        if path.startswith(prefix):
            return token, f"https://{host}{path}{query}"
    first, _, rest = path.lstrip("/").partition("/")
    first = unquote(first)  # a client may send [::1] as %5B::1%5D
    # /<host>/<path>: the sitecustomize's form; any host, a port or an address too,
    # so that the executor refuses (and records) what is not on the allowlist.
    if "." in first or ":" in first or first.startswith("[") or first == "localhost":
        return token, f"https://{first}/{rest}{query}"
    return token, None


class _App:
    """The gateway's ASGI app: the tool routes on 127.0.0.1 and ``tool.sock``, the
    public hosts' front on :data:`FRONT_SOCKET`, the records on :data:`RECORDS_SOCKET`."""

    def __init__(self, state: dict):
        self.state = state

    async def __call__(self, scope, receive, send) -> None:
        from starlette.requests import Request

        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        where = socket_name(scope)
        if where == RECORDS_SOCKET:
            response = self._records(request)
        else:
            response = await self._serve(request, front=where == FRONT_SOCKET)
        await response(scope, receive, send)

    def _target(self, request, front: bool) -> tuple[str | None, str | None]:
        """(token the path names, public URL) of a request; the URL None where the
        request names no service."""
        target = request.scope.get("raw_path", b"").decode("latin-1") or request.url.path
        query = request.scope.get("query_string", b"").decode("latin-1")
        target += f"?{query}" if query else ""
        if not front:
            return public_url(target)
        host = (request.headers.get("host") or "").strip().lower()
        if target.startswith(("http://", "https://")):  # an absolute form (a proxy's)
            parts = urlsplit(target)
            host, target = parts.netloc, parts.path + (f"?{parts.query}" if parts.query else "")
        if not host:
            return None, None
        if not target.startswith("/"):
            target = "/" + target
        # Port 443 or 80 inside: the URL the agent asked for is the public https one.
        host = host.removesuffix(":443").removesuffix(":80")
        return None, f"https://{host}{target}"

    async def _serve(self, request, front: bool):
        token, url = self._target(request, front)
        session = self.state["sessions"].find(bearer_token(request.headers, token))
        if session is None:
            return _reply(401, b"helixbench tool gateway: unknown or missing session")
        path = request.url.path
        if path == REFUSED_PATH and session.self_reported and not front:
            record_refusal(session, dict(request.query_params), request.method, own=True)
            return _reply(204, b"")
        if url is None:
            where = path.replace(session.token, "<token>")[:200]
            _record(session, request.method, f"path:{where}", "refused: no service at this path")
            return _reply(404, b"helixbench tool gateway: no service at this path")
        raw = await request.body() if request.method == "POST" else None
        body, kind = _body(raw, request.headers.get("content-type", ""))
        started = time.perf_counter()
        try:
            index = session.tool_call(urlsplit(url).netloc)
        except CapReached as exc:
            error = f"refused: the agent reached its cap of {exc}"
            _record(session, request.method, url, error)
            return _reply(429, f"helixbench: cap of {exc}".encode())
        call = ToolRequest(
            url,
            session.question_id,
            index,
            needed_bytes=self.state["reply_cap"],
            body=body,
            body_kind=kind,
        )
        result = demonstration_reply(self.state["demonstrations"], call)
        result = result or await blocking(self.state["executor"].call, call)
        rendered = reply_text(result.value())[:2000]  # the transcript keeps the start
        data = {**result.describe(rendered), "route": urlsplit(url).netloc}
        session.record("tool", index, data, started)
        return _reply(*result.as_http())

    def _records(self, request):
        """A refusal a sandbox's first process reports, under its question."""
        key = self.state["recorder_key"]
        given = (request.headers.get(RECORDER_HEADER) or "").encode()
        if not key or not hmac.compare_digest(given, key.encode()):
            return _reply(403, b"")
        if request.url.path != REFUSED_PATH:
            return _reply(404, b"")
        session = self.state["sessions"].find(request.headers.get("x-helixbench-session"))
        if session is not None:
            record_refusal(session, dict(request.query_params), request.method)
        return _reply(204, b"")

    def too_large(self, scope, size: int) -> None:
        """A body past the gateway's limit, recorded under the session it names."""
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        token = None
        if socket_name(scope) != FRONT_SOCKET:
            token = public_url(scope.get("path", ""))[0]
        session = self.state["sessions"].find(bearer_token(headers, token))
        if session is not None:
            shown = scope.get("path", "").replace(session.token, "<token>")[:200]
            error = f"refused: HTTP 413, a body of {size}+ bytes"
            _record(session, scope.get("method", "POST"), f"request:{shown}", error)


def record_refusal(session, query: dict, method: str, own: bool = False) -> None:
    """One report of what was refused, as a tool event of ``session``: its count a whole
    number from 1 to :data:`MAX_REPORTED_COUNT`, its fields cut to size. ``own``: the
    agent's own report (cooperative), which may say only that one connection was
    refused."""
    count = query.get("count", "1")
    count = int(count) if count.isdigit() and len(count) < 12 else 1
    count = 1 if own else min(max(count, 1), MAX_REPORTED_COUNT)
    if not own and "syscall" in query:  # a system call the seccomp filter refused
        call, detail = query["syscall"][:40], query.get("detail", "")[:60]
        what = f"{call}({detail})" if detail else call
        error = f"refused: {count} call{'s' if count > 1 else ''} of {what} (seccomp)"
        return _record(session, method, f"syscall:{what}", error, "syscall", count)
    if not own and "name" in query:  # a lookup of a name that is not an allowlisted host
        name = query["name"][:253]
        error = f"refused: {name} does not resolve (only the allowlisted hosts do)"
        return _record(session, method, f"dns:{name}", error, "unresolved", count)
    if not own and "copy" in query:  # an entry the copy-out left out (root.copy_tree)
        where, why = query["copy"][:200], query.get("reason", "")[:120]
        error = f"refused: copy-out of {where}: {why}"
        if count > 1:
            error = f"refused: copy-out of {count} {why}"
        return _record(session, method, f"copy:{where}", error, "copy", count)
    if not own and query.get("door") in DOOR_REFUSALS:  # a door's refusal (doors.py)
        kind, port = query["door"], query.get("port", "?")[:8]
        cap = query.get("cap", "?")[:12]
        error = f"refused: {count} {DOOR_REFUSALS[kind].format(cap=cap)}"
        return _record(session, method, f"door:{port}:{kind}", error, count=count)
    host = query.get("host", "?")[:255]
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host  # IPv6
    where = f"{host}:{query.get('port', '?')[:8]}"[:300]
    proto = "udp" if query.get("proto") == "udp" and not own else "tcp"
    what = "datagram" if proto == "udp" else "connection"
    error = f"refused: {count} {what}{'s' if count > 1 else ''} to {where}"
    kind = "udp" if proto == "udp" else "socket"
    _record(session, method, f"{kind}:{where}", error, count=count)


def _record(session, method: str, url: str, error: str, route="refused", count=1) -> None:
    data = {"url": url, "method": method, "status": None, "bytes": 0, "cache": None}
    data |= {"error": error, "rendered": f"Error: {error}", "route": route}
    if count > 1:
        data["count"] = count
    session.record("tool", 0, data, time.perf_counter())


def _reply(status: int, data: bytes):
    from starlette.responses import Response

    data = secrets.redact_bytes(data)  # (also the gateway's own messages)
    return Response(data, status_code=status, media_type="application/octet-stream")


def _body(raw: bytes | None, content_type: str) -> tuple[dict | None, str]:
    """A POST body as the executor sends it again: JSON, or form fields (multipart or
    URL-encoded)."""
    if raw is None:
        return None, "json"
    lowered = content_type.lower()
    if "multipart/form-data" in lowered:
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw
        )
        fields = {
            part.get_param("name", header="content-disposition"): part.get_content()
            for part in message.iter_parts()
        }
        return {k: v.decode() if isinstance(v, bytes) else v for k, v in fields.items()}, "form"
    if "x-www-form-urlencoded" in lowered:
        return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)), "form"
    try:
        return json.loads(raw or b"{}"), "json"
    except ValueError:
        return {"raw": raw.decode("utf-8", "replace")}, "json"
