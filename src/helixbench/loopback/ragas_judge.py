"""A scripted judge for RAGAs' prompts, for the loopback OpenAI server
(``OpenAIServer(chat=ragas_judge)``): it answers each of the prompts behind
faithfulness, answer relevancy, context precision, context recall and answer
correctness in the JSON the prompt asks for, by word overlap, the same reply to the
same prompt every time. Deterministic, not wise: it makes RAGAs' arithmetic
checkable, never a figure to quote.

RAGAs renders a prompt as its instruction, the output's JSON schema, examples, then
``input: <JSON>`` and ``Output:``; the judge reads the last input and which
instruction it came with.
"""

from __future__ import annotations

import json
import re

WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset("a an the of in on to is are was were and or for by with as at it its be".split())


def _words(text: str) -> set[str]:
    return {w for w in WORD.findall(str(text).lower()) if w not in STOP}


def _supported(statement: str, evidence: str) -> int:
    """1 when at least half of the statement's words are in the evidence."""
    words = _words(statement)
    return int(bool(words) and len(words & _words(evidence)) * 2 >= len(words))


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+|\n+", str(text)) if p.strip()]
    return parts or ([str(text).strip()] if str(text).strip() else [])


def _verdicts(statements: list[str], context: str, key: str) -> list[dict]:
    """Each statement with its 0/1 verdict under ``key``."""
    return [
        {"statement": s, "reason": "word overlap", key: _supported(s, context)} for s in statements
    ]


def _last_input(prompt: str) -> dict:
    at = prompt.rfind("input: ")
    if at < 0:
        raise ValueError("not a RAGAs prompt: no 'input:'")
    return json.JSONDecoder().raw_decode(prompt[at + len("input: ") :].lstrip())[0]


def judge(prompt: str) -> dict:
    """The JSON reply to one RAGAs prompt."""
    given = _last_input(prompt)
    if "Break down each sentence" in prompt:  # statements of an answer
        return {"statements": _sentences(given["answer"])}
    if "judge the faithfulness" in prompt:
        return {"statements": _verdicts(given["statements"], given["context"], "verdict")}
    if "Generate a question for the given answer" in prompt:
        response = given["response"]
        noncommittal = int(bool(re.search(r"\b(don't|do not) know\b|not sure", response, re.I)))
        return {"question": f"What is {response.rstrip('.')}?", "noncommittal": noncommittal}
    if "verify if the context was useful" in prompt:
        verdict = _supported(given["answer"], given["context"])
        return {"reason": "word overlap", "verdict": verdict}
    if "attributed to the given context" in prompt:
        found = _verdicts(_sentences(given["answer"]), given["context"], "attributed")
        return {"classifications": found}
    if "TP (true positive)" in prompt:
        truth = " ".join(given["ground_truth"])
        said = " ".join(given["answer"])
        tp = [s for s in given["answer"] if _supported(s, truth)]
        fp = [s for s in given["answer"] if not _supported(s, truth)]
        fn = [s for s in given["ground_truth"] if not _supported(s, said)]
        return {
            kind: [{"statement": s, "reason": "word overlap"} for s in found]
            for kind, found in (("TP", tp), ("FP", fp), ("FN", fn))
        }
    raise ValueError("a prompt the scripted judge does not know")


def ragas_judge(messages: list[dict]) -> str:
    """``OpenAIServer``'s ``chat``: the reply to a chat's last user message."""
    prompt = next(m["content"] for m in reversed(messages) if m.get("role") == "user")
    return json.dumps(judge(str(prompt)))
