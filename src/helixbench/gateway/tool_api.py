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
public host itself, which resolves there to a front that passes the stream to this
gateway's front socket after one line naming the question's token
(:class:`FrontHandler`); the URL is then ``https://<Host header><path>``.
GET and POST (JSON or form bodies, as g:Profiler and Enrichr take them) are served;
the reply is the service's status and body, or, for a refused or failed call, a
status that says so (403 refused, 502 failed) with the executor's message.
"""

from __future__ import annotations

import json
import time
from email.parser import BytesParser
from email.policy import HTTP
from urllib.parse import parse_qsl, unquote, urlsplit

from .. import secrets
from ..loopback import LoopbackServer, QuietHandler
from ..tools import ToolRequest, ToolResult
from ..tools.functions import reply_text
from . import CapReached, Sessions, bearer_token

# A service's own path prefix -> its public host.
PUBLIC_PATHS = {
    "/entrez/eutils/": "eutils.ncbi.nlm.nih.gov",
    "/blast/Blast.cgi": "blast.ncbi.nlm.nih.gov",
    "/Blast.cgi": "blast.ncbi.nlm.nih.gov",
    "/gprofiler/": "biit.cs.ut.ee",
    "/Enrichr/": "maayanlab.cloud",
    "/research/pubtator3-api/": "www.ncbi.nlm.nih.gov",
}
# What an agent tried and could not do, reported by the sitecustomize (a socket it did
# not open) or the sandbox (a refused connection or datagram, a foreign name).
REFUSED_PATH = "/_refused"
FRONT_PREAMBLE = b"HELIXBENCH "  # the sandbox front's first line: HELIXBENCH <token>


class ToolGateway(LoopbackServer):
    """The tool gateway of one run job: ``executor`` answers, ``sessions`` record."""

    def __init__(
        self, executor, sessions: Sessions, reply_cap: int | None = None, demonstrations=None
    ):
        # reply_cap: what the agent keeps of a reply (GeneGPT's loop: 10,000 bytes); a
        # recorded reply upstream cut at that size serves only such an agent.
        # demonstrations: a Snapshot whose replies answer its URLs (the calls GeneGPT's
        # main.py makes to build its header get the replies a genegpt run's header
        # embeds, as a header is always built from the run's snapshot).
        state = {
            "executor": executor,
            "sessions": sessions,
            "reply_cap": reply_cap,
            "demonstrations": demonstrations,
        }
        super().__init__(state, _Handler)


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


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._serve(None)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._serve(raw)

    def _target(self) -> tuple[str | None, str | None]:
        """(token, public URL) of the request."""
        return public_url(self.path)

    def _serve(self, raw: bytes | None) -> None:
        token, url = self._target()
        session = self.state["sessions"].find(token or bearer_token(self.headers))
        if session is None:
            return self._reply(401, b"helixbench tool gateway: unknown or missing session")
        if urlsplit(self.path).path == REFUSED_PATH:
            self._record_refusal(session, dict(parse_qsl(urlsplit(self.path).query)))
            return self._reply(204, b"")
        if url is None:
            where = urlsplit(self.path).path.replace(session.token, "<token>")[:200]
            self._record(session, None, f"path:{where}", "refused: no service at this path")
            return self._reply(404, b"helixbench tool gateway: no service at this path")
        body, kind = _body(raw, self.headers.get("Content-Type", ""))
        started = time.perf_counter()
        try:
            index = session.tool_call(urlsplit(url).netloc)
        except CapReached as exc:
            self._record(session, None, url, f"refused: the agent reached its cap of {exc}")
            return self._reply(429, f"helixbench: cap of {exc}".encode())
        request = ToolRequest(
            url,
            session.question_id,
            index,
            needed_bytes=self.state["reply_cap"],
            body=body,
            body_kind=kind,
        )
        result = demonstration_reply(self.state["demonstrations"], request)
        result = result or self.state["executor"].call(request)
        rendered = reply_text(result.value())[:2000]  # the transcript keeps the start
        data = {**result.describe(rendered), "route": urlsplit(url).netloc}
        session.record("tool", index, data, started)
        self._reply(*result.as_http())

    def send_error(self, code: int, message: str | None = None, explain=None) -> None:
        """http.server's own refusals (a request line too long: 414; a malformed one: 400)
        are recorded under the session the request names, where it names one."""
        line = getattr(self, "raw_requestline", b"")[:4096].decode("latin-1", "replace")
        headers = getattr(self, "headers", None)
        token = bearer_token(headers) if headers is not None else None
        if not token and "/s/" in line:
            token = line.split("/s/", 1)[1].split("/", 1)[0].split(" ", 1)[0]
        session = self.state["sessions"].find(token)
        if session is not None:
            shown = " ".join(line.replace(session.token, "<token>").split())[:200]
            self._record(session, None, f"request:{shown}", f"refused: HTTP {code} {message}")
        super().send_error(code, message, explain)

    def _record_refusal(self, session, query: dict) -> None:
        count = max(1, int(query["count"])) if query.get("count", "").isdigit() else 1
        if "syscall" in query:  # a system call the sandbox's seccomp filter refused
            call, detail = query["syscall"][:40], query.get("detail", "")[:60]
            what = f"{call}({detail})" if detail else call
            error = f"refused: {count} call{'s' if count > 1 else ''} of {what} (seccomp)"
            return self._record(session, None, f"syscall:{what}", error, "syscall", count)
        if "name" in query:  # a lookup of a name that is not an allowlisted host
            name = query["name"][:253]
            error = f"refused: {name} does not resolve (only the allowlisted hosts do)"
            return self._record(session, None, f"dns:{name}", error, "unresolved", count)
        host = query.get("host", "?")
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host  # IPv6
        where = f"{host}:{query.get('port', '?')}"[:300]
        proto = query.get("proto", "tcp")[:3]
        what = "datagram" if proto == "udp" else "connection"
        error = f"refused: {count} {what}{'s' if count > 1 else ''} to {where}"
        kind = "udp" if proto == "udp" else "socket"
        self._record(session, None, f"{kind}:{where}", error, count=count)

    def _record(self, session, index, url: str, error: str, route="refused", count=1) -> None:
        data = {"url": url, "method": self.command, "status": None, "bytes": 0, "cache": None}
        data |= {"error": error, "rendered": f"Error: {error}", "route": route}
        if count > 1:
            data["count"] = count
        session.record("tool", index if index is not None else 0, data, time.perf_counter())

    def _reply(self, status: int, data: bytes) -> None:
        data = secrets.redact_bytes(data)  # (also the gateway's own messages)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


class FrontHandler(_Handler):
    """The tool gateway's front socket: what an agent in a sandbox sends to a public
    host, after the sandbox's line naming the question's token."""

    def handle(self) -> None:
        first = self.rfile.readline(512)
        if not first.startswith(FRONT_PREAMBLE):
            return
        self.front_token = first[len(FRONT_PREAMBLE) :].strip().decode("ascii", "replace")
        super().handle()

    def _target(self) -> tuple[str | None, str | None]:
        host = (self.headers.get("Host") or "").strip().lower()
        target = self.path
        if target.startswith(("http://", "https://")):  # an absolute form (a proxy's)
            parts = urlsplit(target)
            host, target = parts.netloc, parts.path + (f"?{parts.query}" if parts.query else "")
        if not host:
            return self.front_token, None
        if not target.startswith("/"):
            target = "/" + target
        # Port 443 or 80 inside: the URL the agent asked for is the public https one.
        host = host.removesuffix(":443").removesuffix(":80")
        return self.front_token, f"https://{host}{target}"

    def send_error(self, code: int, message: str | None = None, explain=None) -> None:
        session = self.state["sessions"].find(getattr(self, "front_token", None))
        if session is not None:
            line = getattr(self, "raw_requestline", b"")[:4096].decode("latin-1", "replace")
            shown = " ".join(line.split())[:200]
            self._record(session, None, f"request:{shown}", f"refused: HTTP {code} {message}")
        QuietHandler.send_error(self, code, message, explain)


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
