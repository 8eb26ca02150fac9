"""A Python agent that calls NCBI's public URL with the client named on its command
line (httpx, aiohttp, urllib or the MCP SDK against $HELIXBENCH_MCP_URL), asks its
model once, then tries every way out it knows: a loopback canary by connect_ex, UDP
and a curl subprocess, itself re-executed with ``python -I`` and no environment, a
foreign name, and every process's environment it can read. Its answer says what it
got and what it saw."""

import asyncio
import glob
import json
import os
import socket
import subprocess
import sys

URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term={}"
ESCAPE = """
import socket, sys
s = socket.socket()
print("reexec", s.connect_ex(("127.0.0.1", int(sys.argv[1]))))
"""


def fetch(client: str, term: str) -> str:
    url = URL.format(term)
    if client == "httpx":
        import httpx

        return httpx.get(url, timeout=10).text
    if client == "aiohttp":
        import aiohttp

        async def get() -> str:
            async with aiohttp.ClientSession() as session, session.get(url) as reply:
                return await reply.text()

        return asyncio.run(get())
    if client == "mcp":
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async def call() -> str:
            async with streamable_http_client(os.environ["HELIXBENCH_MCP_URL"]) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    done = await session.call_tool("esearch", {"db": "gene", "term": term})
                    return done.content[0].text

        return asyncio.run(call())
    import urllib.request

    return urllib.request.urlopen(url, timeout=10).read().decode()


def escape(canary: int) -> dict:
    tried = {}
    probe = socket.socket()
    tried["connect_ex"] = probe.connect_ex(("127.0.0.1", canary))
    datagram = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    datagram.sendto(b"canary", ("127.0.0.1", canary))
    curl = ["curl", "-sS", "-m", "3", f"http://127.0.0.1:{canary}/"]
    tried["curl"] = subprocess.run(curl, capture_output=True, text=True).returncode
    again = [sys.executable, "-I", "-c", ESCAPE, str(canary)]
    tried["reexec"] = subprocess.run(again, capture_output=True, text=True, env={}).stdout
    try:
        socket.getaddrinfo("canary.example.com", 443)
        tried["resolved"] = True
    except OSError:
        tried["resolved"] = False
    seen = []
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            seen.append(open(path, "rb").read().decode("latin-1"))
        except OSError:
            pass
    tried["environ"] = "\n".join(seen)
    tried["pids"] = len(glob.glob("/proc/[0-9]*"))
    tried["folders"] = sorted(os.listdir(os.path.dirname(os.getcwd())))
    return tried


def main() -> None:
    question = json.load(sys.stdin)
    client = sys.argv[1]
    reply = fetch(client, question["id"])
    said = ""
    if client == "httpx":  # the openai client (httpx) through the model door
        import openai

        chat = openai.OpenAI(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": question["question"]}]
        )
        said = chat.choices[0].message.content
    tried = escape(int(os.environ["CANARY_PORT"]))
    print(json.dumps({"answer": json.dumps({"reply": reply, "said": said, **tried})}))


if __name__ == "__main__":
    main()
