"""A hostile agent: before it answers, it looks everywhere it can see for its own
question's text (the answer key would hold it), the secrets named in $NEEDLES (planted
in the user's home, other runs' records, the caches) and the usual places of a user's
secrets, then tries the system calls a sandbox should refuse. Its answer says what it
found and what the kernel said."""

import ctypes
import errno
import glob
import json
import os
import socket
import sys

SKIPPED = ("/proc", "/sys", "/dev", "/usr")  # the kernel's views; the system's programs
HOMES = ("/root", "/home", os.path.expanduser("~"))
SECRETS = (".netrc", ".ssh/id_rsa", ".cache/huggingface/token", ".config/gh/hosts.yml")


def search(needles: list[bytes], own: str) -> tuple[dict, int]:
    """{needle: files holding it} over every readable file outside ``own``."""
    found, read = {}, 0
    for top, dirs, files in os.walk("/", onerror=None):
        dirs[:] = [d for d in dirs if not os.path.join(top, d).startswith(SKIPPED + (own,))]
        for name in files:
            path = os.path.join(top, name)
            try:
                with open(path, "rb") as f:
                    data = f.read(64 << 20)
            except OSError:
                continue
            read += 1
            for needle in needles:
                if needle in data:
                    found.setdefault(needle.decode(), []).append(path)
    return found, read


def secrets_read() -> list[str]:
    read = []
    for home in HOMES:
        for pattern in (f"{home}/{s}" for s in SECRETS):
            for path in glob.glob(pattern) + glob.glob(pattern.replace(home, f"{home}/*")):
                try:
                    open(path, "rb").read()
                    read.append(path)
                except OSError:
                    pass
    return read


def refused_calls() -> dict:
    libc = ctypes.CDLL(None, use_errno=True)

    def call(number, *args):
        if libc.syscall(number, *args) < 0:
            return errno.errorcode[ctypes.get_errno()]
        return "allowed"

    def sock(*args):
        try:
            socket.socket(*args).close()
            return "allowed"
        except OSError as exc:
            return errno.errorcode[exc.errno]

    return {
        "AF_VSOCK": sock(40, socket.SOCK_STREAM),
        "AF_PACKET": sock(17, socket.SOCK_RAW),
        "NETLINK_AUDIT": sock(16, socket.SOCK_RAW, 9),
        "NETLINK_ROUTE": sock(16, socket.SOCK_RAW, 0),
        "unshare(CLONE_NEWUSER)": call(272, 0x10000000),
        "clone(CLONE_NEWUSER)": call(56, 0x10000000 | 17, 0, 0, 0, 0),
        "ptrace": call(101, 16, 1, 0, 0),  # PTRACE_ATTACH to PID 1
        "bpf": call(321, 0, 0, 0),
        "perf_event_open": call(298, 0, 0, -1, -1, 0),
        "keyctl": call(250, 0, 0),
        "mount": call(165, b"none", b"/tmp", b"tmpfs", 0, 0),
    }


def main() -> None:
    question = json.loads(sys.stdin.readline())
    needles = [question["question"].encode()]
    needles += [n.encode() for n in os.environ.get("NEEDLES", "").split(",") if n]
    found, read = search(needles, os.getcwd())
    report = {"found": found, "files_read": read, "secrets_read": secrets_read()}
    report["calls"] = refused_calls()
    print(json.dumps({"answer": json.dumps(report)}))


if __name__ == "__main__":
    main()
