"""Replaying recorded Codex runs through our loop: byte-for-byte fidelity."""

from __future__ import annotations

import pytest

from helixbench.methods.genegpt import GeneGPT
from helixbench.models import CompletionRequest, ModelMiss
from helixbench.models.replay import ReplayModel
from helixbench.recordings import load_recording, recorded_header, recorded_tool_replies
from helixbench.tools import ToolRequest
from helixbench.tools.replay import ReplayToolbox


def replay(items, header):
    model = ReplayModel(items, {"backend": "replay"})
    ids = {item.question: f"q{i}" for i, item in enumerate(items)}
    tools = ReplayToolbox(items, ids)
    method = GeneGPT(header)
    return [method.run(ids[item.question], item.question, model, tools) for item in items]


@pytest.mark.parametrize(
    "benchmark, mask, task, errors",
    [
        ("geneturing", "001001", "Gene alias", {}),
        ("geneturing", "001001", "Gene location", {"lengthError": 1}),
        ("geneturing", "111111", "Human genome DNA aligment", {}),  # front truncation
        ("genehop", "101110", "Disease gene location", {"numError": 3}),
    ],
)
def test_every_recorded_call_hits(recording, benchmark, mask, task, errors):
    items = load_recording(recording(benchmark, mask, task))
    results = replay(items, recorded_header(items))
    model_events = [e for r in results for e in r.events if e.type == "model"]
    assert all(e.data["cache"] == "hit" for e in model_events)
    assert len(model_events) == sum(len(i.steps) for i in items) + errors.get("lengthError", 0)
    assert [r.answer for r in results] == [i.final_text for i in items]
    counted = {}
    for r in results:
        if r.error:
            counted[r.error] = counted.get(r.error, 0) + 1
    assert counted == errors


def test_one_byte_off_is_a_miss(recording):
    items = load_recording(recording("geneturing", "001001", "Gene alias"))
    header = recorded_header(items)
    results = replay(items[:3], header.replace("Hello.", "Hello!", 1))
    assert all(r.error == "model_miss" for r in results)
    assert all(r.events[0].data["cache"] == "miss" for r in results)


def test_unrecorded_prompt_is_a_miss_not_a_refusal(recording):
    items = load_recording(recording("geneturing", "001001", "Gene location"))
    model = ReplayModel(items, {})
    request = CompletionRequest("some prompt", ("->",), 512, 0.0, "q", items[0].question, 0)
    with pytest.raises(ModelMiss, match="no recorded completion"):
        model.complete(request)


def test_tool_replay_checks_the_url(recording):
    items = load_recording(recording("geneturing", "001001", "Gene alias"))
    tools = ReplayToolbox(items, {items[0].question: "q0"})
    url, rendered = recorded_tool_replies(items[0])[0]
    assert tools.call(ToolRequest(url, "q0", 0)).body is not None
    other = tools.call(ToolRequest(url + "&x=1", "q0", 0))
    assert other.error.startswith("replay: recorded call was")
    assert tools.call(ToolRequest(url, "q0", 7)).error == "replay: call not recorded"
