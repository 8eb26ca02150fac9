"""The GeneGPT header builder and tool-calling loop, against scripted models and tools."""

from __future__ import annotations

import itertools

import pytest

from helixbench.datasets.snapshots import Snapshot, SnapshotReply
from helixbench.methods.genegpt import (
    BLAST_GET_TEMPLATE,
    DEMONSTRATIONS,
    DOCUMENTATION,
    INSTRUCTION,
    GeneGPT,
    build_header,
    check_mask,
    extract_url,
    render_reply,
)
from helixbench.models import Completion, ContextLengthError, ModelMiss
from helixbench.tools import ToolResult

PUT = DEMONSTRATIONS[3].urls[0]


def synthetic_snapshot() -> Snapshot:
    replies = [SnapshotReply(PUT, rid="RID123")]
    for demo in DEMONSTRATIONS:
        for url in demo.urls:
            if url == BLAST_GET_TEMPLATE:
                replies.append(SnapshotReply(url.format(rid="RID123"), body=b"alignment\n"))
            elif url != PUT:
                replies.append(SnapshotReply(url, body=f"reply of {url[-12:]}\n".encode()))
    return Snapshot({r.url: r for r in replies})


@pytest.mark.parametrize("mask", ["".join(bits) for bits in itertools.product("01", repeat=6)])
def test_header_for_every_mask(mask):
    header = build_header(mask, synthetic_snapshot())
    assert header.startswith(INSTRUCTION)
    for bit, doc in zip(mask[:2], DOCUMENTATION, strict=True):
        assert (doc in header) == (bit == "1")
    demos = [d for bit, d in zip(mask[2:], DEMONSTRATIONS, strict=True) if bit == "1"]
    assert ("Here are some examples:\n\n" in header) == bool(demos)
    positions = [header.index(f"Question: {d.question}\n") for d in demos]
    assert positions == sorted(positions)
    for demo in demos:
        assert f"Answer: {demo.answer}\n\n" in header
    if mask[5] == "1":  # BLAST demo: the Put shows its RID, the Get uses it
        assert f"[{PUT}]->[RID123]\n" in header
        assert (
            "[https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?CMD=Get&FORMAT_TYPE=Text&RID=RID123]->[b'alignment\\n']\n"
            in header
        )
    if mask == "000000":
        assert header == INSTRUCTION


@pytest.mark.parametrize("mask", ["00100", "0010011", "00200a", 1001, None])
def test_bad_masks_are_refused(mask):
    with pytest.raises(ValueError, match="six digits"):
        check_mask(mask)


def test_url_extraction():
    assert extract_url("no url here") is None
    assert extract_url("[https://a/x?term=a b]") == "https://a/x?term=a+b"
    assert extract_url("[http://a/1] then [https://b/2]") == "http://a/1"  # the first, as upstream
    assert extract_url("[ftp://a/1]") is None
    assert extract_url("[https://a/[x]]") is None


def test_reply_rendering():
    assert render_reply("https://e/x", b"a\nb", 10_000) == "b'a\\nb'"
    assert render_reply("https://e/x", b"x" * 20_000, 10_000) == repr(b"x" * 10_000)
    put = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?CMD=Put&QUERY=ACGT"
    assert render_reply(put, b"<!--\n    RID = ABC123\n    RTOE = 20\n", 10_000) == "ABC123"
    assert render_reply(put, b"nothing", 10_000) == "Error: no RID in the BLAST Put reply"
    assert render_reply("https://e/x", "text as is", 4) == "text"


class ScriptedModel:
    """Answers call i with script[i]; a script entry that is an exception is raised."""

    def __init__(self, script):
        self.script, self.prompts = list(script), []

    def identity(self):
        return {"backend": "scripted"}

    def complete(self, request):
        self.prompts.append(request.prompt)
        step = self.script[request.call_index]
        if isinstance(step, Exception):
            raise step
        return Completion(step, cache="hit")


class ScriptedTools:
    def __init__(self, replies=None):
        self.replies, self.urls = replies or {}, []

    def call(self, request):
        self.urls.append(request.url)
        value = self.replies.get(request.url, b"reply")
        if isinstance(value, str):
            return ToolResult(request.url, request.index, error=value)
        return ToolResult(request.url, request.index, body=value, status=200)


def run(method, script, replies=None):
    model, tools = ScriptedModel(script), ScriptedTools(replies)
    result = method.run("q0", "What?", model, tools)
    return result, model, tools


def test_answer_without_url_ends_the_question():
    result, model, tools = run(GeneGPT("H\n"), ["Answer: PSMB10"])
    assert (result.answer, result.error) == ("Answer: PSMB10", None)
    assert model.prompts == ["H\nQuestion: What?\n"] and tools.urls == []
    assert result.events[0].data["prompt_increment"] == "Question: What?\n"


def test_tool_replies_are_appended_as_upstream():
    script = ["[https://e/esearch?term=LMP 10]", "[https://e/efetch?id=1]", "Answer: X"]
    result, model, tools = run(GeneGPT("H\n"), script, {"https://e/efetch?id=1": b"r'2"})
    assert tools.urls == ["https://e/esearch?term=LMP+10", "https://e/efetch?id=1"]
    assert model.prompts[2] == (
        "H\nQuestion: What?\n[https://e/esearch?term=LMP 10]->[b'reply']\n"
        '[https://e/efetch?id=1]->[b"r\'2"]\n'
    )
    assert [e.type for e in result.events] == ["model", "tool", "model", "tool", "model"]
    assert result.answer == "Answer: X"


def test_front_truncation():
    method = GeneGPT("H" * 100, cut_length=120)
    result, model, _ = run(method, ["[https://e/a]", "Answer: X"], {"https://e/a": b"z" * 50})
    assert len(model.prompts[0]) == 100 + len("Question: What?\n") - 0  # 116, not cut
    assert len(model.prompts[1]) == 120
    full = "H" * 100 + "Question: What?\n" + "[https://e/a]->[" + repr(b"z" * 50) + "]\n"
    assert model.prompts[1] == full[-120:]
    assert result.events[2].data["continues_previous"] is False  # logged whole after a cut


def test_num_error_fetches_the_tenth_url_then_stops():
    script = [f"[https://e/call{i}]" for i in range(10)]
    result, model, tools = run(GeneGPT("H\n"), script)
    assert (result.answer, result.error) == ("numError", "numError")
    assert len(model.prompts) == 10 and len(tools.urls) == 10


def test_length_error_is_not_a_step():
    result, model, _ = run(GeneGPT("H\n"), ["[https://e/a]", ContextLengthError("too long")])
    assert (result.answer, result.error) == ("lengthError", "lengthError")
    assert result.events[-1].data["completion"] is None
    assert result.events[-1].data["error"] == "too long"


def test_blast_put_then_get():
    put = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?CMD=Put&QUERY=ACGT"
    get = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?CMD=Get&RID=R1"
    replies = {put: b"<!--QBlastInfoBegin\n    RID = R1\n    RTOE = 9\n", get: b"hit chr15\n"}
    result, model, _ = run(GeneGPT("H\n"), [f"[{put}]", f"[{get}]", "Answer: chr15"], replies)
    assert model.prompts[1].endswith(f"[{put}]->[R1]\n")
    assert model.prompts[2].endswith(f"[{get}]->[b'hit chr15\\n']\n")
    assert result.events[1].data["bytes"] == len(replies[put])


def test_tool_error_is_recorded_and_shown():
    result, model, _ = run(
        GeneGPT("H\n"), ["[https://e/a]", "Answer: ?"], {"https://e/a": "offline"}
    )
    assert model.prompts[1].endswith("[https://e/a]->[Error: offline]\n")
    assert result.events[1].data["error"] == "offline"


def test_model_miss_stops_with_an_error():
    result, _, _ = run(GeneGPT("H\n"), [ModelMiss("not recorded")])
    assert (result.answer, result.error) == (None, "model_miss")
    assert result.events[0].data["cache"] == "miss"
