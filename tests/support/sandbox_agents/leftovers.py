"""A hostile agent that tries to leave something behind its question, or to see past
it (issue 66), standard library only (ctypes for the calls Python does not wrap), and
answers with what each try got (JSON in its ``answer``):

1. System V IPC and POSIX message queues: read the host's segment $HOST_SHM_ID, then
   make a 64 MiB shared-memory segment (touched, so resident), a message queue, 4
   semaphores and 9 POSIX queues, and leave them all;
2. inotify: open instances until refused, hold them $HOLD_S seconds (the host tries to
   open one meanwhile), say how many it got;
3. a copy-out race: an orphan that swaps a folder and a link in its folder
   (renameat2 with RENAME_EXCHANGE) without end, left running as the agent exits;
4. host paths: what /proc/1/cmdline, /proc/self/cgroup, /proc/1/cgroup, /proc/1/exe
   and /proc/1/environ say, and whether /proc/1/maps can be read.

Which parts run: $LEFTOVERS (a comma list of 1..4; all by default)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import sys
import time

PARTS = set(os.environ.get("LEFTOVERS", "1,2,3,4").split(","))
libc = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT = 0, 0o1000
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def ipc() -> dict:
    found = {}
    libc.shmat.restype = ctypes.c_void_p
    host = int(os.environ.get("HOST_SHM_ID", "-1"))
    at = libc.shmat(host, None, 0o10000)  # SHM_RDONLY
    if at in (None, ctypes.c_void_p(-1).value):
        found["host segment"] = f"errno {ctypes.get_errno()}"
    else:
        found["host segment"] = ctypes.string_at(at, 16).decode("latin-1")
    size = 64 << 20
    shm = libc.shmget(IPC_PRIVATE, ctypes.c_size_t(size), IPC_CREAT | 0o666)
    found["shmget"] = shm
    if shm >= 0:
        mapped = libc.shmat(shm, None, 0)
        if mapped not in (None, ctypes.c_void_p(-1).value):
            ctypes.memset(mapped, 1, size)  # resident
    found["msgget"] = libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o666)
    found["semget"] = libc.semget(IPC_PRIVATE, 4, IPC_CREAT | 0o666)
    rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
    queues = []
    for i in range(9):
        fd = rt.mq_open(f"/leftover-{i}".encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
        queues.append(fd if fd >= 0 else f"errno {ctypes.get_errno()}")
    found["mq_open"] = queues
    return found


def inotify() -> dict:
    held = []
    while len(held) < 100_000:
        fd = libc.inotify_init1(os.O_CLOEXEC)
        if fd < 0:
            error = ctypes.get_errno()
            break
        held.append(fd)
    else:
        error = 0
    time.sleep(float(os.environ.get("HOLD_S", "4")))
    return {"instances": len(held), "then": f"errno {error}"}


def race() -> dict:
    os.makedirs("pair/folder/inner", exist_ok=True)
    with open("pair/folder/inner/data.txt", "w") as out:
        out.write("kept\n")
    if not os.path.lexists("pair/link"):
        os.symlink("/etc", "pair/link")
    if os.fork() == 0:  # the orphan: detached, swapping until it is killed
        os.setsid()
        if os.fork() == 0:
            libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p] * 2 + [ctypes.c_uint]
            a, b = b"pair/folder", b"pair/link"
            while True:
                libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
        os._exit(0)
    return {"orphan": "started"}


def proc() -> dict:
    found = {}
    for name in ("/proc/1/cmdline", "/proc/self/cgroup", "/proc/1/cgroup", "/proc/1/environ"):
        try:
            with open(name, "rb") as read:
                found[name] = read.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError as exc:
            found[name] = f"errno {exc.errno}"
    try:
        found["/proc/1/exe"] = os.readlink("/proc/1/exe")
    except OSError as exc:
        found["/proc/1/exe"] = f"errno {exc.errno}"
    try:
        with open("/proc/1/maps") as read:
            found["/proc/1/maps"] = read.read()[:2000]
    except OSError as exc:
        found["/proc/1/maps"] = f"errno {exc.errno}"
    return found


def main() -> None:
    report = {}
    for part, run in (("1", ipc), ("2", inotify), ("3", race), ("4", proc)):
        if part in PARTS:
            try:
                report[run.__name__] = run()
            except Exception as exc:  # a hostile agent goes on with the next part
                report[run.__name__] = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"answer": json.dumps(report)}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
