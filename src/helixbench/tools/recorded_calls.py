"""A recorded GeneGPT question seen as function calls: each URL Codex called, as the
function of :mod:`helixbench.tools.functions` that sends it, with the reply the
recording shows. It drives the function-calling protocol with Codex's own choices
(``perf/recorded_function_calls.py``) and checks that a call builds the URL
Codex wrote."""

from __future__ import annotations

from dataclasses import dataclass

from ..genegpt_format import parse_rendered_reply
from ..sources.recordings import RecordedItem, recorded_tool_replies
from .functions import call_of_url


@dataclass(frozen=True)
class RecordedFunctionCall:
    """A call of the function-calling protocol that asks what a recorded completion
    asked, with the reply the recording shows for it (a BLAST Put's is its Get's)."""

    step: int
    name: str
    arguments: dict
    reply: bytes | str | None  # None where the recording cannot show it


def recorded_function_calls(item: RecordedItem, url_rule: str = "first") -> list:
    """The :class:`RecordedFunctionCall` list of one recorded question, in order: each
    URL the recording called as the function that sends it (a BLAST Put and its Get as
    one ``blast`` call, whose reply is the Get's hits)."""
    replies = recorded_tool_replies(item, url_rule)
    steps = sorted(replies)
    calls = []
    for n, step in enumerate(steps):
        url, rendered = replies[step]
        call = call_of_url(url)
        if call is None:  # a BLAST Get: the blast call's own second request
            continue
        if call[0] == "blast":
            after = replies[steps[n + 1]] if n + 1 < len(steps) else None
            rendered = after[1] if after and call_of_url(after[0]) is None else None
        reply = None if rendered is None else parse_rendered_reply(rendered)
        calls.append(RecordedFunctionCall(step, call[0], call[1], reply))
    return calls
