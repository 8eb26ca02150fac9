"""Function calls for local chat templates that render no tools: the widely used
``<tool_call>`` text convention, written into the conversation and read back out of
a completion (also Llama 3.1's bare JSON call)."""

from __future__ import annotations

import json
import re

TOOL_CALL_START, TOOL_CALL_END = "<tool_call>", "</tool_call>"
TOOL_CALL_CONVENTION = (
    "You may call the functions below. To call one, write\n"
    f'{TOOL_CALL_START}{{"name": "<function>", "arguments": {{<arguments as JSON>}}}}'
    f"{TOOL_CALL_END}\n"
    "and nothing after it: its result comes back to you in a tool message. Functions:\n"
)
_TOOL_CALL = re.compile(
    re.escape(TOOL_CALL_START) + r"\s*(.*?)\s*" + re.escape(TOOL_CALL_END), re.DOTALL
)


def tool_call_convention(messages: list[dict], tools: list[dict]) -> list[dict]:
    """A function-calling conversation for a chat template that renders no tools, in
    the widely used text convention: the functions listed in the system message, each
    call as ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` in the
    assistant's text, each result as a tool message in ``<tool_response>`` tags."""
    listing = TOOL_CALL_CONVENTION + "\n".join(json.dumps(t["function"]) for t in tools)
    out = []
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                function = call["function"]
                body = {"name": function["name"], "arguments": _json_or_text(function["arguments"])}
                content += f"{TOOL_CALL_START}{json.dumps(body)}{TOOL_CALL_END}"
        elif role == "tool":
            content = f"<tool_response>\n{content}\n</tool_response>"
        out.append({"role": role, "content": content})
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + listing}
    else:
        out.insert(0, {"role": "system", "content": listing})
    return out


def parse_tool_calls(text: str, bare_json: bool = False) -> tuple[str, tuple[dict, ...] | None]:
    """The calls a completion made in the text convention, and the text before the
    first one; a call whose body is not JSON keeps it raw (a tool error follows).

    ``bare_json`` also takes a reply that is one JSON object with a ``name`` and
    ``arguments`` or ``parameters`` as a call: the form Llama 3.1's template asks for.
    """
    found = list(_TOOL_CALL.finditer(text))
    if not found:
        body = _json_or_text(text.strip()) if bare_json else None
        if isinstance(body, dict) and "name" in body and ({"arguments", "parameters"} & set(body)):
            return "", (_call(0, body, text.strip()),)
        return text, None
    calls = [_call(i, _json_or_text(m.group(1)), m.group(1)) for i, m in enumerate(found)]
    return text[: found[0].start()].rstrip(), tuple(calls)


def _call(index: int, body, raw: str) -> dict:
    if isinstance(body, dict):
        name = str(body.get("name") or "")
        arguments = body.get("arguments", body.get("parameters", {}))
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
    else:
        name, arguments = "", raw
    return {"id": f"call-{index}", "name": name, "arguments": arguments}


def _json_or_text(value):
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value
