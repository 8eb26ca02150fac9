"""A hostile probe: sockets made through io_uring (IORING_OP_SOCKET), where seccomp's
socket rule never looks, and a user-mode userfaultfd. Standard library only (ctypes
and mmap); run alone it prints what it got as JSON, and hostile agents import it.

Each family is tried through a ring of its own; "EPERM" at setup means the kernel
(or a filter) refused io_uring itself."""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import struct

SYSCALLS = {"x86_64": (425, 426, 323), "aarch64": (425, 426, 282)}
IORING_OP_SOCKET = 45
IORING_ENTER_GETEVENTS = 1
OFF_SQ_RING, OFF_CQ_RING, OFF_SQES = 0, 0x8000000, 0x10000000
PARAMS = struct.Struct("=10I 8I Q 8I Q")  # io_uring_params with both ring offsets
SQE = struct.Struct("=BBHiQQIIQHHiQQ")  # 64 bytes
CQE = struct.Struct("=QiI")
UFFD_USER_MODE_ONLY = 1
# (family, type, protocol) a sandbox refuses to socket(); named as the filter names them
FAMILIES = {
    "AF_VSOCK": (40, 1, 0),
    "NETLINK_AUDIT": (16, 3, 9),
    "NETLINK_KOBJECT_UEVENT": (16, 3, 15),
    "NETLINK_GENERIC": (16, 3, 16),
    "NETLINK_SOCK_DIAG": (16, 3, 4),
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _error() -> str:
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def uring_socket(family: int, kind: int, protocol: int) -> str:
    """ "created" where io_uring made the socket, else the error of its setup or of
    the operation."""
    setup, enter, _ = SYSCALLS[os.uname().machine]
    params = ctypes.create_string_buffer(PARAMS.size)
    ring = _libc.syscall(setup, 4, params)
    if ring < 0:
        return f"setup {_error()}"
    try:
        fields = PARAMS.unpack(params.raw)
        sq_entries, cq_entries = fields[0], fields[1]
        sq_names = ("head", "tail", "mask", "entries", "flags", "dropped", "array")
        sq = dict(zip(sq_names, fields[10:17], strict=True))
        cq_names = ("head", "tail", "mask", "entries", "overflow", "cqes")
        cq = dict(zip(cq_names, fields[19:25], strict=True))
        sq_map = mmap.mmap(ring, sq["array"] + sq_entries * 4, offset=OFF_SQ_RING)
        cq_map = mmap.mmap(ring, cq["cqes"] + cq_entries * CQE.size, offset=OFF_CQ_RING)
        sqes = mmap.mmap(ring, sq_entries * SQE.size, offset=OFF_SQES)
        sqe = SQE.pack(IORING_OP_SOCKET, 0, 0, family, kind, 0, protocol, 0, 7, 0, 0, 0, 0, 0)
        sqes[0 : SQE.size] = sqe
        tail = struct.unpack_from("=I", sq_map, sq["tail"])[0]
        mask = struct.unpack_from("=I", sq_map, sq["mask"])[0]
        struct.pack_into("=I", sq_map, sq["array"] + (tail & mask) * 4, 0)
        struct.pack_into("=I", sq_map, sq["tail"], tail + 1)
        if _libc.syscall(enter, ring, 1, 1, IORING_ENTER_GETEVENTS, None, 0) < 0:
            return f"enter {_error()}"
        head = struct.unpack_from("=I", cq_map, cq["head"])[0]
        cmask = struct.unpack_from("=I", cq_map, cq["mask"])[0]
        _, result, _ = CQE.unpack_from(cq_map, cq["cqes"] + (head & cmask) * CQE.size)
        if result >= 0:
            os.close(result)
            return "created"
        return errno.errorcode.get(-result, str(-result))
    finally:
        os.close(ring)


def userfaultfd() -> str:
    fd = _libc.syscall(SYSCALLS[os.uname().machine][2], UFFD_USER_MODE_ONLY)
    if fd < 0:
        return _error()
    os.close(fd)
    return "created"


def probe() -> dict:
    found = {name: uring_socket(*args) for name, args in FAMILIES.items()}
    return found | {"userfaultfd": userfaultfd()}


if __name__ == "__main__":
    print(json.dumps(probe()))
