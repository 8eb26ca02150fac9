"""A loopback stand-in for NCBI's E-utils and BLAST URL API, for tests and benchmarks.

It serves recorded replies (or a deterministic echo), runs BLAST searches that are
WAITING for a few status checks and then READY, injects faults on request (429
with Retry-After, 500, a stalled reply, a redirect, an error that repeats the
query string back, a reply cut short of its Content-Length, a broken gzip body),
answers 429 whenever its own rate limit is exceeded, and records every request it
receives. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from helixbench.tools.urls import canonical_url

from . import LoopbackServer, QuietHandler


@dataclass
class Received:
    at: float
    path: str
    query: dict
    status: int


@dataclass
class NCBIServerState:
    replies: dict = field(default_factory=dict)  # canonical public URL -> body bytes
    # BLAST Put URL -> the RID to answer with (a recorded search's); any RID in
    # ``known_rids`` is a search its SearchInfo checks know
    put_rids: dict = field(default_factory=dict)
    known_rids: set = field(default_factory=set)
    latency_s: dict = field(default_factory=dict)  # "eutils" / "blast" -> seconds a reply takes
    eutils_rate: float | None = 3.0  # requests per second before a 429 (None: no limit)
    blast_interval: float | None = None  # seconds between BLAST contacts before a 429
    waiting_polls: int = 1  # status checks that say WAITING before READY
    rtoe: int = 0
    failed_rids: set = field(default_factory=set)
    faults: collections.deque = field(default_factory=collections.deque)
    received: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _eutils_times: collections.deque = field(default_factory=collections.deque)
    _blast_last: float | None = None
    _polls: dict = field(default_factory=dict)
    _next_rid: int = 0


class NCBIServer(LoopbackServer):
    def __init__(self, state: NCBIServerState | None = None):
        super().__init__(state or NCBIServerState(), _Handler)

    def routes(self) -> dict:
        """``tools.routes`` that send NCBI's public URLs to this server."""
        return {
            "https://eutils.ncbi.nlm.nih.gov/": f"{self.base}/",
            "https://blast.ncbi.nlm.nih.gov/": f"{self.base}/",
        }


class _Handler(QuietHandler):
    state: NCBIServerState

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        state = self.state
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        now = time.time()
        with state.lock:
            fault = state.faults.popleft() if state.faults else None
            status, body, headers = self._answer(parts.path, query, fault, now)
            state.received.append(Received(now, parts.path, query, status))
        if fault and fault[0] == "stall":
            time.sleep(fault[1])
        service = "blast" if parts.path.startswith("/blast") else "eutils"
        if state.latency_s.get(service):
            time.sleep(state.latency_s[service])
        length = len(body)
        if fault and fault[0] == "short":  # promise more than is sent, then close
            status, body, length = 200, b'{"esearchresult": {"idl', 4096
            self.close_connection = True
        if fault and fault[0] == "badgzip":
            status, body = 200, b"\x1f\x8b\x08\x00not really gzip"
            headers = {**headers, "Content-Encoding": "gzip"}
            length = len(body)
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _answer(self, path, query, fault, now):
        state = self.state
        if fault:
            kind = fault[0]
            if kind == "429":
                return 429, b"Too Many Requests", {"Retry-After": str(fault[1])}
            if kind == "500":
                return 500, b"Internal Server Error", {}
            if kind == "redirect":
                return 302, b"", {"Location": fault[1]}
            if kind == "echo":  # an error that repeats the request back, key and all
                raw = urlsplit(self.path).query
                return 400, f'{{"error": "invalid request: {raw}"}}'.encode(), {}
        if path.startswith("/entrez/eutils/"):
            if state.eutils_rate is not None:
                window = state._eutils_times
                while window and window[0] <= now - 1.0:
                    window.popleft()
                if len(window) >= state.eutils_rate:
                    return 429, b'{"error":"API rate limit exceeded"}', {"Retry-After": "1"}
                window.append(now)
            key = canonical_url(f"https://eutils.ncbi.nlm.nih.gov{path}?" + _query(query))
            body = state.replies.get(key)
            if body is None:
                body = json.dumps({"echo": key}).encode()
            return 200, body, {"Content-Type": "application/json"}
        if path == "/blast/Blast.cgi":
            if state.blast_interval is not None:
                if state._blast_last is not None and now - state._blast_last < state.blast_interval:
                    return 429, b"contact BLAST at most once per interval", {}
                state._blast_last = now
            return self._blast(query)
        return 404, b"not found", {}

    def _blast(self, query):
        state = self.state
        cmd = query.get("CMD")
        if cmd == "Put":
            public = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?" + _query(query)
            rid = state.put_rids.get(canonical_url(public))
            if rid is None:
                state._next_rid += 1
                rid = f"RID{state._next_rid:04d}"
            body = (
                f"<!--QBlastInfoBegin\n    RID = {rid}\n    RTOE = {state.rtoe}\nQBlastInfoEnd-->\n"
            )
            return 200, body.encode(), {}
        rid = query.get("RID", "")
        if cmd == "Get" and query.get("FORMAT_OBJECT") == "SearchInfo":
            if rid in state.failed_rids:
                status = "FAILED"
            elif not rid.startswith("RID") and rid not in state.known_rids:
                status = "UNKNOWN"
            else:
                polls = state._polls.get(rid, 0) + 1
                state._polls[rid] = polls
                status = "READY" if polls > state.waiting_polls else "WAITING"
            return 200, f"QBlastInfoBegin\n\tStatus={status}\nQBlastInfoEnd\n".encode(), {}
        if cmd == "Get":
            public = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?" + _query(query)
            body = state.replies.get(canonical_url(public))
            if body is None:
                body = f"BLASTN results for {rid}\nchr15:91950805-91950932\n".encode()
            return 200, body, {}
        return 400, b"bad CMD", {}


def _query(query: dict) -> str:
    from urllib.parse import urlencode

    return urlencode(query)
