"""A smaller kernel surface for the agent: a seccomp filter, built once per run job by
libseccomp (through pyseccomp) and loaded by the sandbox's first process into the
agent's process before it starts.

It refuses, with the error the kernel would give where the feature is missing:

- sockets of a family other than IPv4, IPv6, Unix and netlink (``EAFNOSUPPORT``:
  no ``AF_VSOCK``, ``AF_PACKET``, Bluetooth ...), and netlink sockets other than
  ``NETLINK_ROUTE`` (``EPROTONOSUPPORT``: no audit, netfilter or uevents);
- new user namespaces (``unshare`` or ``clone`` with ``CLONE_NEWUSER``: ``EPERM``);
- ``ptrace``, ``bpf``, ``perf_event_open``, the key ring (``keyctl``, ``add_key``,
  ``request_key``), mounts (``mount``, ``umount2``, ``pivot_root`` and the new
  mount API), io_uring (``io_uring_setup``, ``io_uring_enter``,
  ``io_uring_register``: its operations, a socket's among them, never pass through
  seccomp, so a ring would be a side door past the socket rule) and ``userfaultfd``
  (user mode too): ``EPERM``, as a kernel whose policy turned them off answers.

Each of these is a seccomp *user notification*: the kernel holds the call and asks
the first process, which answers with the refusal and counts it, so the refusals
an agent meets are recorded under its question. ``clone3`` is refused with
``ENOSYS`` (its flags are in memory a filter cannot read; C libraries fall back to
``clone``) and is not recorded, for every thread a program starts tries it first.
Calls of another architecture's ABI (i386 through ``int 0x80``, x32) kill the
process: a filter that checks one ABI cannot judge them.

The building needs pyseccomp (run job only); the loading and answering are the
standard library's (the first process).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import os
import select
import socket
import struct

CLONE_NEWUSER = 0x10000000
NETLINK_ROUTE = 0
ALLOWED_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK)
REFUSED = (
    "ptrace",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "mount_setattr",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
)
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
SECCOMP_SYSCALL = {"x86_64": 317, "aarch64": 277, "riscv64": 277, "ppc64le": 358, "s390x": 348}
PR_SET_NO_NEW_PRIVS = 38
# struct seccomp_notif (80 bytes) and seccomp_notif_resp (24), and their ioctls.
NOTIF = struct.Struct("=QII iIQ 6Q")
RESPONSE = struct.Struct("=QqiI")
NOTIF_RECV = 0xC0502100
NOTIF_SEND = 0xC0182101
NETLINK_NAMES = {4: "NETLINK_SOCK_DIAG", 9: "NETLINK_AUDIT", 12: "NETLINK_NETFILTER"}
NETLINK_NAMES |= {15: "NETLINK_KOBJECT_UEVENT", 16: "NETLINK_GENERIC"}


# -- outside: the filter, built once --------------------------------------------------


@functools.cache
def program() -> tuple[bytes, dict[int, str]]:
    """(the filter as BPF, {syscall number: name} of those it refers to the first
    process)."""
    import pyseccomp as seccomp

    refused = seccomp.SyscallFilter(seccomp.ALLOW)
    notified = ["socket", "unshare", "clone", *REFUSED]
    for family in [f for f in range(17) if f not in ALLOWED_FAMILIES]:
        refused.add_rule(seccomp.NOTIFY, "socket", seccomp.Arg(0, seccomp.EQ, family))
    # (and any number past netlink's, so that high bits cannot hide a family)
    refused.add_rule(seccomp.NOTIFY, "socket", seccomp.Arg(0, seccomp.GE, socket.AF_NETLINK + 1))
    refused.add_rule(
        seccomp.NOTIFY,
        "socket",
        seccomp.Arg(0, seccomp.EQ, socket.AF_NETLINK),
        seccomp.Arg(2, seccomp.NE, NETLINK_ROUTE),
    )
    new_user = seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
    refused.add_rule(seccomp.NOTIFY, "unshare", new_user)
    refused.add_rule(seccomp.NOTIFY, "clone", new_user)
    refused.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for name in REFUSED:
        try:
            refused.add_rule(seccomp.NOTIFY, name)
        except OSError:  # a call this libseccomp does not know of (an older one)
            notified.remove(name)
    memory = os.memfd_create("helixbench-seccomp")
    try:
        with open(memory, "wb+", closefd=False) as out:
            refused.export_bpf(out)
            out.seek(0)
            bpf = out.read()
    finally:
        os.close(memory)
    native = seccomp.Arch.NATIVE
    names = {seccomp.resolve_syscall(native, name): name for name in notified}
    return bpf, names


def rules() -> list[str]:
    """The filter's rules, as docs/agents.md lists them."""
    families = ", ".join(socket.AddressFamily(f).name for f in ALLOWED_FAMILIES)
    return [
        f"socket: families other than {families} (EAFNOSUPPORT)",
        "socket: netlink protocols other than NETLINK_ROUTE (EPROTONOSUPPORT)",
        "unshare, clone: CLONE_NEWUSER (EPERM)",
        *(f"{name} (EPERM)" for name in REFUSED),
        "clone3 (ENOSYS, not recorded)",
    ]


# -- inside: loading it and answering ---------------------------------------------------


_libc = ctypes.CDLL(None, use_errno=True)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def load(bpf: bytes) -> int:
    """Load the filter into this process (the agent's, before it runs the agent);
    returns the notification descriptor, which the first process answers."""
    number = SECCOMP_SYSCALL.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, "seccomp: an unknown machine")
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    prog = _Program(len(bpf) // 8, bpf)
    flags = SECCOMP_FILTER_FLAG_NEW_LISTENER
    fd = _libc.syscall(number, SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(prog))
    if fd < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"seccomp: {os.strerror(error)}")
    return fd


class Refusals:
    """Answers the filter's notifications with their refusals and counts them by
    (call, what it asked for)."""

    def __init__(self, fd: int, names: dict):
        self.fd = fd
        self.names = {int(k): v for k, v in names.items()}
        self.counts: dict[tuple[str, str], int] = {}
        self.reported: dict[tuple[str, str], int] = {}

    def answer(self) -> bool:
        """Answer one pending notification; False once no process can send more."""
        request = bytearray(NOTIF.size)
        try:
            fcntl.ioctl(self.fd, NOTIF_RECV, request)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EINTR):  # it died before it was read
                return not self._hung_up()
            return False
        ident, _, _, nr, _, _, *args = NOTIF.unpack(request)
        name = self.names.get(nr, str(nr))
        detail, refusal = self._judge(name, args)
        key = (name, detail)
        self.counts[key] = self.counts.get(key, 0) + 1
        try:
            fcntl.ioctl(self.fd, NOTIF_SEND, RESPONSE.pack(ident, 0, -refusal, 0))
        except OSError:  # it died waiting
            pass
        return True

    def _judge(self, name: str, args: list[int]) -> tuple[str, int]:
        if name == "socket":
            family, protocol = args[0] & 0xFFFFFFFF, args[2] & 0xFFFFFFFF
            if family == socket.AF_NETLINK and args[0] == family:
                return NETLINK_NAMES.get(protocol, f"netlink {protocol}"), errno.EPROTONOSUPPORT
            try:
                return socket.AddressFamily(family).name, errno.EAFNOSUPPORT
            except ValueError:
                return f"family {args[0]}", errno.EAFNOSUPPORT
        if name in ("unshare", "clone"):
            return "CLONE_NEWUSER", errno.EPERM
        return "", errno.EPERM

    def _hung_up(self) -> bool:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        return any(e & select.POLLHUP and not e & select.POLLIN for _, e in poller.poll(0))

    def new(self) -> list[tuple[str, str, int]]:
        """(call, detail, count) of the refusals since the last call."""
        found = []
        for key, count in sorted(self.counts.items()):
            if count > self.reported.get(key, 0):
                found.append((*key, count - self.reported.get(key, 0)))
                self.reported[key] = count
        return found
