"""The first process of an agent's sandbox: PID 1 of its own user, network, PID and
mount namespaces (started by :mod:`helixbench.gateway.sandbox` under ``unshare``).

It builds the agent's world, starts the agent with no capabilities and stays beside
it as the only way out:

- **network**: loopback only, every address local (so that a connection to any
  address is refused here, never routed), nftables sets that count each refused TCP
  connection (the RST a closed port answers a SYN with) and each UDP datagram no one
  listened for (the ICMP port-unreachable), by destination;
- **doors**: on 127.0.0.1 inside, the gateways' ports, each piped to the gateway's
  Unix socket outside; port 443 (TLS, a certificate of the run's own authority for
  the allowlisted hosts) and 80, piped to the tool gateway's front socket with the
  question's token; a DNS server on port 53 that answers the allowlisted hosts with
  127.0.0.1 and every other name NXDOMAIN;
- **files**: every mount read-only, a fresh ``/tmp``, ``/var/tmp``, ``/dev/shm`` and
  ``/run`` (no host socket or other job's file is there), the run's agents folder
  hidden but for this question's own folder (writable), and the files the method
  names bound back read-only; ``/etc/hosts``, ``/etc/resolv.conf``,
  ``/etc/nsswitch.conf`` and the system CA bundles replaced;
- **records**: each foreign lookup and each refused connection is reported to the
  tool gateway under the question's token, as it happens (lookups) or within a
  second (connections, and all of them before this process exits).

Standard library only: it runs with the run job's interpreter in isolated mode.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import time
from urllib.parse import quote

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME = 1 << 21
# statvfs flags -> mount flags: a remount inside a user namespace must keep them.
KEPT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
PR_SET_DUMPABLE = 4
FRESH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run")
JAVA_STORES = ("/etc/ssl/certs/java/cacerts", "/etc/pki/java/cacerts")
# The device nodes a program expects; no disk, no other device (a run as root would
# otherwise keep root's access to them: ownership, not capabilities, decides).
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
)
NFT_RULES = """
table inet helixbench {
  set tcp4 { type ipv4_addr . inet_service; flags dynamic; counter; }
  set tcp6 { type ipv6_addr . inet_service; flags dynamic; counter; }
  set udp4 { typeof @th,192,32 . @th,240,16; flags dynamic; counter; }
  set udp6 { typeof @th,256,128 . @th,400,16; flags dynamic; counter; }
  chain refused {
    type filter hook output priority 0;
    meta nfproto ipv4 tcp flags & (syn|rst|ack) == rst|ack tcp sequence 0 \
      add @tcp4 { ip saddr . tcp sport }
    meta nfproto ipv6 tcp flags & (syn|rst|ack) == rst|ack tcp sequence 0 \
      add @tcp6 { ip6 saddr . tcp sport }
    icmp type destination-unreachable icmp code port-unreachable \
      add @udp4 { @th,192,32 . @th,240,16 }
    icmpv6 type destination-unreachable icmpv6 code port-unreachable \
      add @udp6 { @th,256,128 . @th,400,16 }
  }
}
"""
POLL_S = 1.0
_libc = ctypes.CDLL(None, use_errno=True)


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as given:
        spec = json.load(given)
    os.unlink(sys.argv[1])  # it holds the question's token
    os.chdir(spec["sockets"])  # the doors' Unix sockets, reached by relative name
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(spec["certificate"], spec["key"])
    tls.set_alpn_protocols(["http/1.1"])
    authority = open(spec["authority"], "rb").read()
    truststore = open(spec["java_truststore"], "rb").read()
    set_up_network()
    set_up_files(spec, authority, truststore)
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the agent cannot read this process
    return asyncio.run(Doors(spec, tls).run())


# -- the network ----------------------------------------------------------------------


def set_up_network() -> None:
    _run(["ip", "link", "set", "lo", "up"])
    _run(["ip", "route", "add", "local", "default", "dev", "lo"])
    _run(["ip", "-6", "route", "add", "local", "::/0", "dev", "lo"], check=False)
    _run(["nft", "-f", "-"], stdin=NFT_RULES)


def refused_now() -> dict[tuple[str, str, int], int]:
    """{(protocol, address, port): count} of the refused connections so far (one
    ``nft`` call lists every set)."""
    out = _run(["nft", "-j", "list", "table", "inet", "helixbench"], check=False)
    try:
        sets = [o["set"] for o in json.loads(out)["nftables"] if "set" in o]
    except (ValueError, KeyError):
        return {}
    found = {}
    for each in sets:
        name = each["name"]
        for element in each.get("elem", []):
            address, port = element["elem"]["val"]["concat"]
            if isinstance(address, int):  # the raw payload of an ICMP reply's inner header
                family = socket.AF_INET if name.endswith("4") else socket.AF_INET6
                size = 4 if family == socket.AF_INET else 16
                address = socket.inet_ntop(family, address.to_bytes(size, "big"))
            found[(name[:3], address, int(port))] = element["elem"]["counter"]["packets"]
    return found


# -- the files ------------------------------------------------------------------------


def set_up_files(spec: dict, authority: bytes, truststore: bytes) -> None:
    original = _mount_points()
    etc = {
        "/etc/hosts": hosts_file(spec["hosts"]),
        "/etc/resolv.conf": "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n",
        "/etc/nsswitch.conf": "hosts: files dns\n",
    }
    replaced = {os.path.realpath(p): text.encode() for p, text in etc.items()}
    replaced |= {os.path.realpath(p): authority for p in SYSTEM_BUNDLES if os.path.exists(p)}
    replaced |= {os.path.realpath(p): truststore for p in JAVA_STORES if os.path.exists(p)}
    # What stays visible under a hidden folder, opened before it is hidden: the
    # question's own folder, and the paths the method names (the top-most of each).
    question_fd = os.open(spec["question_dir"], os.O_PATH)
    shown = [(p, os.open(p, os.O_PATH)) for p in _top_most(spec["visible"])]
    devices = {n: os.open(f"/dev/{n}", os.O_PATH) for n in DEVICES if os.path.exists(f"/dev/{n}")}
    fresh_dev(devices)
    hidden = [d for d in FRESH_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    for folder in hidden:
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    own = own_dir()
    os.makedirs(own, exist_ok=True)
    for name, data in (("ca.pem", authority), ("ca.jks", truststore)):
        with open(os.path.join(own, name), "wb") as out:
            out.write(data)
    for number, (target, data) in enumerate(sorted(replaced.items())):
        if any(_under(target, d) for d in hidden):  # its real place is hidden: write it there
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as out:
                out.write(data)
            continue
        source = os.path.join(own, str(number))
        with open(source, "wb") as out:
            out.write(data)
        _mount(source, target, None, MS_BIND)
        _read_only(target)
    for path, fd in shown:
        if any(_under(path, d) and path != d for d in hidden):
            _bind(fd, path)
            _read_only(path)
    # The run's agents folder: empty but for this question's own (other questions'
    # folders and the gateways' sockets are there), wherever it is.
    os.makedirs(spec["agents_dir"], exist_ok=True)
    _mount("tmpfs", spec["agents_dir"], "tmpfs", MS_NOSUID | MS_NODEV, "mode=700")
    _bind(question_fd, spec["question_dir"])
    for point in original:  # the host's file systems: read-only, every one
        if any(_under(point, d) for d in ("/proc", "/dev", *hidden)):
            continue
        try:
            _read_only(point)
        except OSError:
            if point == "/":
                raise
    for point in ("/run", "/dev", "/proc"):  # their fresh ones, now that they are made
        if point in hidden or point != "/run":
            _read_only(point)


def fresh_dev(devices: dict[str, int]) -> None:
    """A ``/dev`` of its own: ``devices`` (opened before) bound back, the usual links."""
    _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755")
    for name, fd in devices.items():
        open(f"/dev/{name}", "a").close()
        _mount(f"/proc/self/fd/{fd}", f"/dev/{name}", None, MS_BIND)
    os.mkdir("/dev/shm")
    for number, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{number}", f"/dev/{name}")
    os.symlink("/proc/self/fd", "/dev/fd")


def _top_most(paths) -> list[str]:
    """The existing ``paths`` that are not inside another of them."""
    kept: list[str] = []
    for path in sorted(p for p in paths if os.path.exists(p)):
        if not any(_under(path, k) for k in kept):
            kept.append(path)
    return kept


def _bind(fd: int, path: str) -> None:
    """Bind what ``fd`` opened (before its place was hidden) at ``path``."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(path, exist_ok=True)
    elif not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)


def own_dir() -> str:
    """Where the sandbox's own files (its CA, hosts, resolver) are, inside."""
    return "/run/helixbench" if os.path.isdir("/run") else "/tmp/.helixbench"


def hosts_file(hosts: list[str]) -> str:
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost"]
    return "\n".join(lines + [f"127.0.0.1 {host}" for host in hosts]) + "\n"


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            point = line.split()[4]
            points.append(point.encode().decode("unicode_escape"))  # \040 is a space
    return points


def _read_only(point: str) -> None:
    kept = 0
    flags = os.statvfs(point).f_flag
    for statvfs_flag, mount_flag in KEPT_FLAGS.items():
        if flags & statvfs_flag:
            kept |= mount_flag
    _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


def _mount(source, target, kind, flags, data=None) -> None:
    encoded = [s.encode() if s is not None else None for s in (source, target, kind, data)]
    if _libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _run(argv: list[str], stdin: str | None = None, check: bool = True) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"helixbench sandbox: {' '.join(argv[:3])}: {done.stderr.strip()}")
    return done.stdout


# -- the doors ------------------------------------------------------------------------


class Doors:
    """The listeners inside, the agent's process, and the reports of what it tried."""

    def __init__(self, spec: dict, tls: ssl.SSLContext):
        self.spec, self.tls = spec, tls
        self.token = spec["token"]
        self.hosts = {h.lower() for h in spec["hosts"]} | {"localhost"}
        self.reported: dict = {}
        self.looked_up: dict[str, float] = {}

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        servers = []
        for port, sock in self.spec["gateways"].items():
            servers.append(await asyncio.start_server(self._piped(sock), "127.0.0.1", int(port)))
        front = self._piped("tool-front.sock", f"HELIXBENCH {self.token}\n".encode())
        servers.append(await asyncio.start_server(front, "127.0.0.1", 443, ssl=self.tls))
        servers.append(await asyncio.start_server(front, "127.0.0.1", 80))
        for address in ("127.0.0.1", "::1"):
            try:
                await loop.create_datagram_endpoint(
                    lambda: _Resolver(self), local_addr=(address, 53)
                )
            except OSError:  # IPv6 off in this kernel
                pass
        agent = await asyncio.create_subprocess_exec(
            *self.spec["drop_privileges"],
            *self.spec["argv"],
            env=self.spec["env"],
            cwd=self.spec["cwd"],
        )
        waiting = asyncio.ensure_future(agent.wait())
        while not waiting.done():
            await asyncio.wait([waiting], timeout=POLL_S)
            await self.report_refused()
        code = waiting.result()
        await asyncio.sleep(0)  # a lookup answered just now is reported first
        await self.report_refused()
        return code if code >= 0 else 128 - code

    async def report_refused(self) -> None:
        found = await asyncio.to_thread(refused_now)
        for (protocol, address, port), count in sorted(found.items()):
            new = count - self.reported.get((protocol, address, port), 0)
            if new > 0:
                self.reported[(protocol, address, port)] = count
                await self.report(f"proto={protocol}&host={quote(address)}&port={port}&count={new}")

    def looked_up_name(self, name: str) -> None:
        now = time.monotonic()
        if now - self.looked_up.get(name, -10) > 2:  # A and AAAA of one lookup: one event
            self.looked_up[name] = now
            asyncio.ensure_future(self.report(f"name={quote(name)}"))

    async def report(self, query: str) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection("tool.sock")
            writer.write(
                f"GET /_refused?{query} HTTP/1.1\r\nHost: sandbox\r\n"
                f"X-Helixbench-Session: {self.token}\r\nConnection: close\r\n\r\n".encode()
            )
            await writer.drain()
            await reader.read()
            writer.close()
        except OSError:
            pass

    def _piped(self, sock: str, preamble: bytes = b""):
        async def serve(reader, writer) -> None:
            try:
                upstream_reader, upstream_writer = await asyncio.open_unix_connection(sock)
            except OSError:
                writer.close()
                return
            upstream_writer.write(preamble)
            await asyncio.gather(_copy(reader, upstream_writer), _copy(upstream_reader, writer))
            for each in (upstream_writer, writer):
                each.close()

        return serve


async def _copy(reader, writer) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
        pass


class _Resolver(asyncio.DatagramProtocol):
    """DNS on port 53: the allowlisted hosts are 127.0.0.1, every other name is not."""

    def __init__(self, doors: Doors):
        self.doors = doors

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, address) -> None:
        try:
            name, qtype, end = _question(data)
        except (IndexError, ValueError, struct.error):
            return
        known = name.lower().rstrip(".") in self.doors.hosts
        answer = b""
        if known and qtype == 1:  # A: 127.0.0.1, the front
            answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + bytes([127, 0, 0, 1])
        flags = 0x8180 | (0 if known else 3)  # a response, recursion; NXDOMAIN if foreign
        ident = struct.unpack(">H", data[:2])[0]
        header = struct.pack(">HHHHHH", ident, flags, 1, 1 if answer else 0, 0, 0)
        self.transport.sendto(header + data[12:end] + answer, address)
        if not known:
            self.doors.looked_up_name(name.rstrip("."))


def _question(data: bytes) -> tuple[str, int, int]:
    labels, at = [], 12
    while data[at]:
        length = data[at]
        labels.append(data[at + 1 : at + 1 + length].decode("ascii", "replace"))
        at += 1 + length
    qtype = struct.unpack(">H", data[at + 1 : at + 3])[0]
    return ".".join(labels), qtype, at + 5


if __name__ == "__main__":
    sys.exit(main())
