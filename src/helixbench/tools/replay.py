"""Replay tools: each call gets the reply recorded for the same question and call.

A call the recording does not show (another URL than the recorded one, or the
call after a question's last logged step) gets a recorded tool error; no request
ever leaves the process.
"""

from __future__ import annotations

from ..genegpt_format import parse_rendered_reply
from ..sources.recordings import RecordedItem, recorded_tool_replies
from . import ToolRequest, ToolResult


class ReplayToolbox:
    def __init__(
        self, items: list[RecordedItem], question_ids: dict[str, str], url_rule: str = "first"
    ):
        # question id -> {model call index: (url, rendered reply or None)}
        self._calls = {
            question_ids[item.question]: recorded_tool_replies(item, url_rule)
            for item in items
            if item.question in question_ids
        }

    def call(self, request: ToolRequest) -> ToolResult:
        recorded = self._calls.get(request.question_id, {}).get(request.index)
        if recorded is None:
            return ToolResult(
                request.url, request.index, error="replay: call not recorded", cache="replay"
            )
        url, rendered = recorded
        if url != request.url:
            return ToolResult(
                request.url, request.index, error=f"replay: recorded call was {url}", cache="replay"
            )
        if rendered is None:
            return ToolResult(
                request.url, request.index, error="replay: reply not recorded", cache="replay"
            )
        value = parse_rendered_reply(rendered)
        if isinstance(value, bytes):
            return ToolResult(request.url, request.index, body=value, status=200, cache="replay")
        return ToolResult(request.url, request.index, text=value, status=200, cache="replay")
