"""The first process of an agent's sandbox: PID 1 of its own user, network, PID,
mount, UTS and IPC namespaces (started by :mod:`helixbench.gateway.sandbox` under
``unshare``), which makes its own cgroup namespace once it has joined its cgroup (so
``/proc/self/cgroup`` inside names no host path), under a neutral command line.

It builds the agent's world, starts the agent with no capabilities and stays beside
it as the only way out:

- **network**: loopback only, every address local (so that a connection to any
  address is refused here, never routed), nftables sets that count each refused TCP
  connection (the RST a closed port answers a SYN with) and each UDP datagram no one
  listened for (the ICMP port-unreachable), by destination;
- **doors**: on 127.0.0.1 inside, the gateways' ports, each leading to the gateway's
  Unix socket outside; port 443 (TLS, a certificate of the run's own authority for
  the allowlisted hosts) and 80, to the tool gateway's front socket; each request
  read whole, named as the question's and capped (:mod:`doors`); a DNS server on
  port 53 that answers the allowlisted hosts with 127.0.0.1 and every other name
  NXDOMAIN;
- **files**: a new root that holds only what the agent needs (:mod:`root`);
- **caps**: the sandbox's cgroup joined first, the agent's rlimits, and a watch of
  what its processes use (:mod:`limits`), published for the run job every
  :data:`limits.WATCH_S`;
- **system calls**: the seccomp filter loaded into the agent (:mod:`syscalls`), whose
  refusals this process answers;
- **records**: each foreign lookup, refused connection, refused system call and
  door's refusal is reported to the tool gateway under the question's token, as it
  happens (lookups) or within a second (and all of them before this process exits),
  over the records socket with the run's recorder key: neither is in the agent's
  reach, so no record of its question is the agent's own writing;
- **per-user counts**: the kernel counts the user namespace shares with the host user
  (inotify instances and watches, fanotify groups and marks) capped inside at a
  quarter of the host user's limit, and the agent's own rlimits of them (message
  queue bytes, pending signals): an agent cannot deny the host user an inotify
  watch or a message queue while it runs, and its System V and POSIX IPC objects are
  its namespace's, gone with it;
- **copy-out**: once every process of the sandbox is gone (the PID namespace emptied),
  the question's folder back to the host within its cap as the host stores it
  (:meth:`root.Root.copy_out`), by a walk that never follows a link; an entry that
  changed kind, vanished or appeared is refused, recorded under the question; past
  the cap, ``workdir`` is reached. The sandbox's own failure goes to the run's log
  (a file beside its status), never into the agent's error output.

Standard library only: it runs with the run job's interpreter in isolated mode, its
sibling modules found beside it. Everything it imports is imported before the new
root hides the interpreter's own files.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401 (asyncio.to_thread's, imported lazily)
import ctypes
import json
import os
import resource
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
import traceback
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling modules
import doors  # noqa: E402
import limits  # noqa: E402
import root  # noqa: E402
import syscalls  # noqa: E402

PR_SET_DUMPABLE = 4
CLONE_NEWCGROUP = 0x02000000
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


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as given:  # (a file of no name, by descriptor)
        spec = json.load(given)
    outside = os.open(spec["sockets"], os.O_PATH | os.O_DIRECTORY)  # (where its status goes)
    try:
        return run(spec)
    except BaseException as failed:  # the sandbox's own failure: to the run's log only
        if isinstance(failed, SystemExit) and not isinstance(failed.code, str):
            raise
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        error = os.open(f"{spec['status']}.error", flags, 0o600, dir_fd=outside)
        with os.fdopen(error, "w", encoding="utf-8") as out:
            out.write("".join(traceback.format_exception(failed)))
        print("helixbench sandbox: failed (the run's log has why)", file=sys.stderr)
        return 125


def run(spec: dict) -> int:
    # Connections the agent opens are this process's files too (its own are capped).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1 << 16), hard))
    for procs in spec.get("cgroup_procs", []):  # its cgroup, before it starts anything
        with open(procs, "w") as joined:
            joined.write("0")
    if _libc.unshare(CLONE_NEWCGROUP) != 0:  # rooted here: its cgroup is "/" inside
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWCGROUP)")
    limits.cap_user_counts()
    doors = os.open(spec["sockets"], os.O_PATH | os.O_DIRECTORY)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(spec["certificate"], spec["key"])
    tls.set_alpn_protocols(["http/1.1"])
    authority = open(spec["authority"], "rb").read()
    truststore = open(spec["java_truststore"], "rb").read()
    set_up_network()
    _libc.sethostname(root.HOSTNAME.encode(), len(root.HOSTNAME))
    sizes = {k: spec["limits"][k] for k in ("tmp_mb", "home_mb", "workdir_mb")}
    new_root = root.Root(spec, sizes)
    new_root.build(etc_files(spec["hosts"], authority, truststore))
    os.fchdir(doors)  # the doors' Unix sockets, reached by relative name, outside the root
    os.makedirs(root.OWN_DIR, exist_ok=True)
    for name, data in (("ca.pem", authority), ("ca.jks", truststore)):
        with open(os.path.join(root.OWN_DIR, name), "wb") as out:
            out.write(data)
    new_root.seal_run()
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the agent cannot read this process
    kept = Doors(spec, tls, new_root)
    code = asyncio.run(kept.run())
    end_every_process()  # nothing of the agent's left to change what is copied
    refused: list[tuple[str, str]] = []
    if not new_root.copy_out(refused):  # the folder past its cap as the host would store it
        kept.watch.reached.add("workdir")
        kept.watch.publish(spec["status"])
    if refused:
        asyncio.run(kept.report_copy(refused))
    return code


def end_every_process() -> None:
    """Every other process of the PID namespace killed and reaped (this is its PID 1:
    orphans are its children), so that the copy-out reads a folder nothing changes."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def etc_files(hosts: list[str], authority: bytes, truststore: bytes) -> dict[str, bytes]:
    """What the new root's /etc holds that the host's does not: the resolver's files
    and the certificate bundles (the run's own authority, where the host has a
    bundle)."""
    files = {
        "/etc/hosts": hosts_file(hosts).encode(),
        "/etc/resolv.conf": b"nameserver 127.0.0.1\noptions attempts:1 timeout:1\n",
    }
    files |= {p: authority for p in root.SYSTEM_BUNDLES if os.path.exists(p)}
    files |= {p: truststore for p in root.JAVA_STORES if os.path.exists(p)}
    return files


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


def hosts_file(hosts: list[str]) -> str:
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost"]
    return "\n".join(lines + [f"127.0.0.1 {host}" for host in hosts]) + "\n"


def _run(argv: list[str], stdin: str | None = None, check: bool = True) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"helixbench sandbox: {' '.join(argv[:3])}: {done.stderr.strip()}")
    return done.stdout


# -- the doors ------------------------------------------------------------------------


class Doors:
    """The listeners inside, the agent's process, and the reports of what it tried."""

    def __init__(self, spec: dict, tls: ssl.SSLContext, new_root: root.Root):
        self.spec, self.tls = spec, tls
        self.token = spec["token"]
        caps = spec["limits"]
        body = int(caps["body_mb"] * limits.MB)
        self.keeper = doors.Keeper(self.token, int(caps["connections"]), body)
        self.hosts = {h.lower() for h in spec["hosts"]} | {"localhost"}
        self.reported: dict = {}
        self.looked_up: dict[str, float] = {}
        by_cgroup = bool(spec.get("cgroup_procs"))
        self.watch = limits.Watch(spec["limits"], by_cgroup, new_root.writable)
        self.refusals: syscalls.Refusals | None = None

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        servers = []
        listen = {"limit": doors.MAX_HEAD_BYTES, "backlog": 4096}
        for port, sock in self.spec["gateways"].items():
            door = self.keeper.door(sock, int(port))
            servers.append(await asyncio.start_server(door, "127.0.0.1", int(port), **listen))
        front = self.spec["front"]
        servers.append(
            await asyncio.start_server(
                self.keeper.door(front, 443),
                "127.0.0.1",
                443,
                ssl=self.tls,
                ssl_handshake_timeout=doors.HEAD_TIMEOUT_S,
                **listen,
            )
        )
        servers.append(
            await asyncio.start_server(self.keeper.door(front, 80), "127.0.0.1", 80, **listen)
        )
        for address in ("127.0.0.1", "::1"):
            try:
                await loop.create_datagram_endpoint(
                    lambda: _Resolver(self), local_addr=(address, 53)
                )
            except OSError:  # IPv6 off in this kernel
                pass
        ours, theirs = socket.socketpair()
        agent = await asyncio.create_subprocess_exec(
            *self.spec["drop_privileges"],
            *self.spec["argv"],
            env=self.spec["env"],
            cwd=self.spec["cwd"],
            preexec_fn=self._confine(theirs),
        )
        theirs.close()
        _, (listener,), _, _ = socket.recv_fds(ours, 1, 1)
        ours.close()
        self.refusals = syscalls.Refusals(listener, self.spec["syscall_names"])
        loop.add_reader(listener, self._answer)
        waiting = asyncio.ensure_future(agent.wait())
        last_report = time.monotonic()
        while not waiting.done():
            await asyncio.wait([waiting], timeout=limits.WATCH_S)
            self._sample(agent.pid)
            if time.monotonic() - last_report >= POLL_S:
                last_report = time.monotonic()
                await self.report_refused()
        code = waiting.result()
        self._sample(agent.pid)
        loop.remove_reader(listener)
        await asyncio.sleep(0)  # a lookup answered just now is reported first
        await self.report_refused()
        return code if code >= 0 else 128 - code

    def _confine(self, channel: socket.socket):
        """What the agent's process does before it runs the agent: its rlimits, the
        seccomp filter, whose notification descriptor goes to this process."""
        caps, by_cgroup = self.spec["limits"], bool(self.spec.get("cgroup_procs"))
        per_question = self.spec["per_question"]
        bpf = bytes.fromhex(self.spec["seccomp"])

        def confine() -> None:
            limits.apply_rlimits(caps, by_cgroup, per_question)
            listener = syscalls.load(bpf)
            socket.send_fds(channel, [b"f"], [listener])
            os.close(listener)

        return confine

    def _answer(self) -> None:
        if self.refusals is not None and not self.refusals.answer():
            asyncio.get_running_loop().remove_reader(self.refusals.fd)

    def _sample(self, agent_pid: int) -> None:
        limits.reap_orphans(keep=agent_pid)
        if self.watch.sample():  # past its processes' cap: every process here ends
            os.kill(-1, signal.SIGKILL)
        self.watch.publish(self.spec["status"])

    async def report_refused(self) -> None:
        found = await asyncio.to_thread(refused_now)
        for (protocol, address, port), count in sorted(found.items()):
            new = count - self.reported.get((protocol, address, port), 0)
            if new > 0:
                self.reported[(protocol, address, port)] = count
                await self.report(f"proto={protocol}&host={quote(address)}&port={port}&count={new}")
        for call, detail, count in self.refusals.new() if self.refusals else []:
            await self.report(f"syscall={quote(call)}&detail={quote(detail)}&count={count}")
        for kind, port, count in self.keeper.new():
            cap = self.keeper.caps(kind)
            await self.report(f"door={kind}&port={port}&cap={cap}&count={count}")

    async def report_copy(self, refused: list[tuple[str, str]]) -> None:
        """Each entry the copy-out refused (its path in the question's folder and why,
        both cut to size), the first :data:`root.MAX_COPY_REFUSALS`, then their count."""
        for where, why in refused[: root.MAX_COPY_REFUSALS]:
            await self.report(f"copy={quote(where[:200])}&reason={quote(why[:120])}")
        left = len(refused) - root.MAX_COPY_REFUSALS
        if left > 0:
            await self.report(f"copy=...&reason={quote('more refused entries')}&count={left}")

    def looked_up_name(self, name: str) -> None:
        now = time.monotonic()
        if now - self.looked_up.get(name, -10) > 2:  # A and AAAA of one lookup: one event
            self.looked_up[name] = now
            asyncio.ensure_future(self.report(f"name={quote(name)}"))

    async def report(self, query: str) -> None:
        """One refusal, under the question's token, over the records socket (outside the
        agent's root) with the recorder's key (which the agent never sees)."""
        try:
            reader, writer = await asyncio.open_unix_connection(self.spec["records"])
            writer.write(
                f"GET /_refused?{query} HTTP/1.1\r\nHost: sandbox\r\n"
                f"X-Helixbench-Session: {self.token}\r\n"
                f"X-Helixbench-Recorder: {self.spec['recorder_key']}\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            await writer.drain()
            await reader.read()
            writer.close()
        except OSError:
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
    sys.exit(main(sys.argv[1]))
