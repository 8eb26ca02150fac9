"""Loopback stand-ins for the services helixbench calls, for tests, benchmarks and
dry runs: a threaded HTTP server on 127.0.0.1 (never another address) whose handler
sees one state object, started and stopped as a context.

:mod:`.ncbi` stands in for E-utils and BLAST (the tests and the benchmarks use it;
so can a user who wants to try ``tools: live`` without the network); :mod:`.openai`
for an OpenAI-compatible model server (scripted replies, injected faults, a latency
and a capacity, for the tests and the throughput benchmark). The tests' own
GeneAgent services are in ``tests/support/``.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    state: object  # set per server

    def setup(self) -> None:
        super().setup()
        # A reply's headers and body leave as two writes: without this, Nagle's
        # algorithm holds the body for the client's delayed ACK (40 ms a reply on a
        # kept-alive connection).
        if self.connection.family != socket.AF_UNIX:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def address_string(self) -> str:  # a Unix socket's client has no address
        return str(self.client_address[0]) if self.client_address else "unix"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass


class LoopbackServer:
    def __init__(self, state, handler: type[QuietHandler]):
        self.state = state
        handler = type("Handler", (handler,), {"state": state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
