"""The gateways' HTTP server: an ASGI app served by uvicorn (asyncio, one event loop
in a thread of its own) on 127.0.0.1 and on Unix sockets, the doors of the agents'
sandboxes.

One server holds thousands of connections at once without a thread each (its
listen backlog is :data:`BACKLOG`, idle kept-alive connections close after
:data:`KEEP_ALIVE_S`); the blocking work of a request (a model call, a tool call)
runs in a thread pool of :data:`WORKERS`. A body past the server's limit is answered
413 before it is read (:func:`limit_body`), and the refusal recorded under the
session the request names.

Inside a sandbox its first process stands in front of every door (it reads each
request whole, caps the connections in flight and times out the slow and the
half-open: :mod:`.sandbox.doors`); this server is the same for every sandbox of
a run job, so a flood from one question never reaches it.
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BACKLOG = 4096
KEEP_ALIVE_S = 5
WORKERS = 256
# What a request line and its headers may take (h11's event size), and a body.
MAX_HEAD_BYTES = 64 * 1024
DISCARD_S = 30  # a refused body, read and dropped
_POOL = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="helixbench-gateway")


def raise_open_files() -> None:
    """This process's soft limit of open files raised to its hard one (the gateways
    hold a connection per request in flight, the run job's other files besides)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 1 << 16
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, 1 << 20), hard))


async def blocking(function, *args):
    """``function(*args)`` in the gateways' thread pool (the event loop goes on)."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, function, *args)


class AsgiServer:
    """``app`` served on 127.0.0.1 (a free port) and on each of ``unix_paths``; a
    context (started on entry, stopped on exit)."""

    def __init__(self, app, unix_paths=(), lifespan: str = "off"):
        self.app, self.lifespan = app, lifespan
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", 0))
        self._sockets = [tcp]
        self._server = None
        self._thread = None
        for path in unix_paths:
            self.serve_unix(path)
        self.port = tcp.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def serve_unix(self, path) -> None:
        """The same app on the Unix socket ``path`` too (before the server starts)."""
        if self._server is not None:
            raise RuntimeError("add Unix sockets before the server starts")
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A socket's path may take 107 bytes: a longer one (a deep TMPDIR) is bound
        # through its folder's descriptor, whose /proc path is short.
        folder = os.open(Path(path).parent, os.O_PATH | os.O_DIRECTORY)
        try:
            unix.bind(f"/proc/self/fd/{folder}/{Path(path).name}")
        finally:
            os.close(folder)
        self._sockets.append(unix)

    def __enter__(self):
        import uvicorn

        raise_open_files()
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            lifespan=self.lifespan,
            backlog=BACKLOG,
            timeout_keep_alive=KEEP_ALIVE_S,
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            access_log=False,
            http="h11",  # the pure-Python parser: the same limits wherever it runs
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": self._sockets}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started and time.monotonic() < deadline:
            if not self._thread.is_alive():
                raise RuntimeError("the gateway's server stopped as it started")
            time.sleep(0.005)
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        for each in self._sockets:
            each.close()


def socket_name(scope) -> str:
    """The name of the Unix socket a request came in on ("" for TCP): a gateway serves
    its sandbox doors and its private channel on sockets of their own."""
    server = scope.get("server") or ("", None)
    return Path(server[0]).name if server[1] is None and server[0] else ""


def header(scope, name: str) -> str | None:
    """A request header's value (the first, as text), or None."""
    wanted = name.lower().encode()
    for key, value in scope.get("headers") or ():
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


class BodyTooLarge(Exception):
    """A request body past the gateway's limit."""


def limit_body(app, limit: int, refused):
    """ASGI: ``app`` with request bodies of at most ``limit`` bytes. A larger one (by
    its Content-Length, or counted as it arrives) is answered 413 and
    ``refused(scope, size)`` records it; ``app`` never sees it (what is left of it is
    read and dropped first, for up to :data:`DISCARD_S`)."""

    async def limited(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        declared = header(scope, "content-length") or ""
        if declared.isdigit() and int(declared) > limit:
            # A client that waits to be asked for its body is answered at once; any
            # other has its body read and dropped first, or it would be reset mid-send.
            if (header(scope, "expect") or "").lower() != "100-continue":
                await _discard(receive)
            return await _too_large(scope, send, int(declared), limit, refused)
        started, seen = False, 0

        async def counted():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge()
            return message

        async def sent(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, counted, sent)
        except BodyTooLarge:
            if not started:
                await _discard(receive)
                await _too_large(scope, send, seen, limit, refused)

    return limited


async def _discard(receive) -> None:
    """The rest of a refused body, read and dropped for up to :data:`DISCARD_S`, before
    the 413: a client that sends it all before it reads a reply then reads it."""
    try:
        async with asyncio.timeout(DISCARD_S):
            while (await receive()).get("more_body"):
                pass
    except TimeoutError:
        pass


async def _too_large(scope, send, size: int, limit: int, refused) -> None:
    await blocking(refused, scope, size)
    message = f"helixbench: a request body of at most {limit} bytes ({size}+ sent)".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(message)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": message})
