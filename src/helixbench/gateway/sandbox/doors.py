"""The doors of an agent's sandbox, kept by its first process: each port inside that
leads to a gateway (the model, tool and MCP gateways' ports, the public hosts' front
on 443 and 80) reads each request whole before anything of it leaves the sandbox.

- **one request a connection**: a request goes to the gateway's Unix socket with
  ``Connection: close`` and the door's header naming the sandbox's question
  (:data:`DOOR_HEADER`; one the agent sent is dropped), and its reply comes back
  whole; HTTP clients open the next connection themselves;
- **the waiting**: a connection that has not sent its whole head within
  :data:`HEAD_TIMEOUT_S`, or stops sending its body for :data:`BODY_IDLE_S`, is
  answered 408; a head past :data:`MAX_HEAD_BYTES` 431; a body past the method's
  ``body_mb`` 413 (at once, from its Content-Length); more than :data:`MAX_WAITING`
  connections waiting for their heads close the oldest, so that a new connection is
  always read;
- **in flight**: at most the method's ``connections`` requests of the sandbox at the
  gateways at once; one more is answered 503 at once.

So whatever one agent does with its connections, the gateways see at most its
``connections`` whole requests, and the other questions' requests are served as
before. Every refusal is counted by kind and port, and reported under the
question (:meth:`Keeper.new`). Standard library only: the first process imports it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections import OrderedDict

DOOR_HEADER = b"X-Helixbench-Door"
HEAD_TIMEOUT_S = 10
BODY_IDLE_S = 10
SEND_TIMEOUT_S = 60  # a reply the agent does not read
DISCARD_S = 30  # a refused body, read and dropped
MAX_HEAD_BYTES = 64 * 1024
MAX_WAITING = 1024
# Headers the door sets itself (the connection's) or answers itself (Expect).
DROPPED = {b"connection", b"keep-alive", b"proxy-connection", b"x-helixbench-door"}
STATUS = {400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large"}
STATUS |= {431: "Request Header Fields Too Large", 503: "Service Unavailable"}


class Refusal(Exception):
    """A request the door answers itself: its status, kind (tool_api.DOOR_REFUSALS) and
    the message the agent reads."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind = status, kind


class Keeper:
    """The doors of one sandbox: what is waiting, what is in flight, what was refused."""

    def __init__(self, token: str, connections: int, body_bytes: int):
        self.token = token.encode()
        self.connections, self.body_bytes = connections, body_bytes
        self.in_flight = 0
        self.waiting: OrderedDict = OrderedDict()  # writer -> None, oldest first
        self.counts: dict[tuple[str, int], int] = {}
        self.reported: dict[tuple[str, int], int] = {}

    def door(self, socket_name: str, port: int):
        """The handler of the door on ``port`` to the gateway socket ``socket_name``."""

        async def serve(reader, writer) -> None:
            try:
                await self._serve(reader, writer, socket_name, port)
            except (OSError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.CancelledError):
                pass
            finally:
                self.waiting.pop(writer, None)
                writer.transport.abort()

        return serve

    def caps(self, kind: str) -> int | float:
        """The figure a refusal's message names."""
        return {
            "busy": self.connections,
            "slow": HEAD_TIMEOUT_S,
            "head": MAX_HEAD_BYTES,
            "body": self.body_bytes,
            "evicted": MAX_WAITING,
        }.get(kind, 0)

    def new(self) -> list[tuple[str, int, int]]:
        """(kind, port, count) of the refusals since the last call."""
        found = []
        for key, count in sorted(self.counts.items()):
            if count > self.reported.get(key, 0):
                found.append((*key, count - self.reported.get(key, 0)))
                self.reported[key] = count
        return found

    async def _serve(self, reader, writer, socket_name: str, port: int) -> None:
        self._wait(writer, port)
        try:
            head, body = await self._request(reader, writer)
        except Refusal as refusal:
            self.waiting.pop(writer, None)
            self.counts[(refusal.kind, port)] = self.counts.get((refusal.kind, port), 0) + 1
            await _answer(writer, refusal.status, refusal.kind, str(refusal))
            if refusal.status == 413:  # read on, so that a client still sending reads it
                await _discard(reader)
            return
        if head is None:  # closed before it asked anything
            return
        if self.in_flight >= self.connections:
            self.counts[("busy", port)] = self.counts.get(("busy", port), 0) + 1
            message = f"helixbench: {self.connections} requests of this sandbox in flight already"
            return await _answer(writer, 503, "busy", message)
        self.in_flight += 1
        try:
            await self._pass(reader, writer, socket_name, head + body)
        finally:
            self.in_flight -= 1

    def _wait(self, writer, port: int) -> None:
        """Count ``writer`` among those waiting for their heads; past the most that may
        wait, the oldest is closed (an idle connection never keeps a new one out)."""
        while len(self.waiting) >= MAX_WAITING:
            oldest, _ = self.waiting.popitem(last=False)
            oldest.transport.abort()
            self.counts[("evicted", port)] = self.counts.get(("evicted", port), 0) + 1
        self.waiting[writer] = None

    async def _request(self, reader, writer) -> tuple[bytes | None, bytes]:
        """(the head as passed on, the body) of the next request; (None, b"") where the
        connection closed before a byte; Refusal where the door answers it."""
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except TimeoutError:
            message = f"helixbench: no whole request head within {HEAD_TIMEOUT_S} s"
            raise Refusal(408, "slow", message) from None
        except asyncio.LimitOverrunError:
            message = f"helixbench: a request head of at most {MAX_HEAD_BYTES} bytes"
            raise Refusal(431, "head", message) from None
        except asyncio.IncompleteReadError:
            return None, b""
        self.waiting.pop(writer, None)
        line, headers = _parse(raw)
        length, chunked = _framing(headers)
        if length is not None and length > self.body_bytes:
            message = f"helixbench: a request body of at most {self.body_bytes} bytes"
            raise Refusal(413, "body", f"{message} ({length} declared)")
        expects = any(k.lower() == b"expect" for k, _ in headers)
        if expects and (length or chunked):  # curl waits for this before its body
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if chunked:
            body = await self._chunked(reader)
        else:
            body = await _read(reader, length or 0)
        kept = [(k, v) for k, v in headers if k.lower() not in DROPPED | {b"expect"}]
        kept += [(DOOR_HEADER, self.token), (b"Connection", b"close")]
        head = line + b"\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in kept) + b"\r\n"
        return head, body

    async def _chunked(self, reader) -> bytes:
        """A chunked body as it was sent (passed on so), up to the body's limit."""
        raw = bytearray()
        while True:
            line = await _idle(reader.readline())
            raw += line
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise Refusal(400, "bad", "helixbench: a malformed chunked body") from None
            if len(raw) + size > self.body_bytes:
                raise Refusal(413, "body", f"helixbench: a body of at most {self.body_bytes}")
            if size == 0:
                while (trailer := await _idle(reader.readline())) not in (b"\r\n", b"\n", b""):
                    raw += trailer
                return bytes(raw + b"\r\n")
            raw += await _idle(reader.readexactly(size + 2))

    async def _pass(self, reader, writer, socket_name: str, request: bytes) -> None:
        """The request to the gateway's socket, its reply back, until either side ends."""
        up_reader, up_writer = await asyncio.open_unix_connection(socket_name)
        try:
            up_writer.write(request)
            await up_writer.drain()
            back = asyncio.ensure_future(_copy(up_reader, writer))
            gone = asyncio.ensure_future(_until_closed(reader))  # the agent hung up
            await asyncio.wait([back, gone], return_when=asyncio.FIRST_COMPLETED)
            for task in (back, gone):
                task.cancel()
        finally:
            up_writer.transport.abort()


def _parse(raw: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """(request line, [(name, value)]) of a head; Refusal where it is no HTTP/1.x."""
    lines = raw[:-4].replace(b"\r\n", b"\n").split(b"\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1.") or not parts[0].isalpha():
        raise Refusal(400, "bad", "helixbench: not an HTTP/1.x request")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise Refusal(400, "bad", "helixbench: a malformed header line")
        headers.append((name, value.strip()))
    return lines[0], headers


def _framing(headers) -> tuple[int | None, bool]:
    """(Content-Length, chunked) of a request."""
    length, chunked = None, False
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"content-length":
            if not value.isdigit() or (length is not None and int(value) != length):
                raise Refusal(400, "bad", "helixbench: a malformed Content-Length")
            length = int(value)
        elif lowered == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    if chunked and length is not None:
        raise Refusal(400, "bad", "helixbench: both Content-Length and chunked")
    return length, chunked


async def _idle(read):
    """A read that must not wait more than :data:`BODY_IDLE_S`."""
    try:
        return await asyncio.wait_for(read, BODY_IDLE_S)
    except TimeoutError:
        raise Refusal(408, "slow", "helixbench: the request body stopped arriving") from None


async def _read(reader, size: int) -> bytes:
    body = bytearray()
    while len(body) < size:
        chunk = await _idle(reader.read(min(1 << 16, size - len(body))))
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(body), size)
        body += chunk
    return bytes(body)


async def _until_closed(reader) -> None:
    """Wait for the agent's end of the connection (what it sends meanwhile is not read:
    one request a connection)."""
    while await reader.read(1 << 16):
        pass


async def _copy(reader, writer) -> None:
    while data := await reader.read(1 << 16):
        writer.write(data)
        await asyncio.wait_for(writer.drain(), SEND_TIMEOUT_S)


async def _discard(reader) -> None:
    """What the agent still sends, read and dropped for up to :data:`DISCARD_S` (a
    client that sends its whole body before it reads the reply then reads the 413,
    where a connection closed at once would be reset under it)."""
    try:
        async with asyncio.timeout(DISCARD_S):
            while await _idle(reader.read(1 << 16)):
                pass
    except (TimeoutError, Refusal):
        pass


async def _answer(writer, status: int, kind: str, message: str) -> None:
    """The door's own reply (JSON, as the gateways' errors), then the connection's end."""
    body = json.dumps({"error": {"message": message, "type": "helixbench_door", "code": kind}})
    head = f"HTTP/1.1 {status} {STATUS[status]}\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    head += "Retry-After: 1\r\n" if status == 503 else ""
    writer.write((head + "\r\n" + body).encode())
    await asyncio.wait_for(writer.drain(), SEND_TIMEOUT_S)
