"""Model backends: the real ``openai`` client against a loopback OpenAI-compatible
server, the response cache, and the local ``transformers`` backend with the real
SmolLM2 (key/value-cache reuse is token-identical to encoding afresh)."""

from __future__ import annotations

import time

import pytest

from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.genegpt import STOP, GeneGPT
from helixbench.models import (
    CompletionRequest,
    ContextLengthError,
    ModelError,
    create_model,
)
from helixbench.models.cache import CachedModel, ModelCache

from .conftest import SMOLLM2


def request(prompt: str, index: int = 0, max_tokens: int = 32, **kw) -> CompletionRequest:
    return CompletionRequest(prompt, STOP, max_tokens, 0.0, "q1", "question?", index, **kw)


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def openai_spec(server, **extra) -> dict:
    return {
        "backend": "openai",
        "model": "test-model",
        "base_url": server.base_url,
        "api_key_env": "HELIXBENCH_TEST_KEY",
        "timeout_s": 2.0,
        "retries": 2,
        **extra,
    }


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_openai_backend_sends_stop_strings_and_reads_usage(server, api, monkeypatch):
    monkeypatch.setenv("HELIXBENCH_TEST_KEY", "sk-test-secret")
    model = create_model(openai_spec(server, api=api))
    server.state.script.append("[https://eutils.ncbi.nlm.nih.gov/x?db=gene]->[ignored]")
    completion = model.complete(request("Question: q\n"))
    assert completion.text == "[https://eutils.ncbi.nlm.nih.gov/x?db=gene]"
    assert completion.finish_reason == "stop"
    assert completion.prompt_tokens == 2 and completion.completion_tokens == 1
    path, body, headers = server.state.received[-1]
    assert path == f"/v1/{'chat/' if api == 'chat' else ''}completions"
    assert body["stop"] == list(STOP) and body["temperature"] == 0.0 and body["max_tokens"] == 32
    if api == "chat":
        assert body["messages"] == [{"role": "user", "content": "Question: q\n"}]
    else:
        assert body["prompt"] == "Question: q\n"
    assert headers["authorization"] == "Bearer sk-test-secret"
    assert model.identity() == {
        "backend": "openai",
        "api": api,
        "model": "test-model",
        "base_url": server.base_url,
        "served": {
            "id": "test-model",
            "owned_by": "test",
        },  # GET /v1/models, volatile fields left out
    }


def test_openai_backend_retries_429_honouring_retry_after(server):
    model = create_model(openai_spec(server))
    server.state.faults.append(("429", 0.5))
    started = time.monotonic()
    completion = model.complete(request("Question: q\n"))
    assert completion.text == "Answer: Question: q"
    assert time.monotonic() - started >= 0.5
    assert len(server.state.received) == 2


def test_openai_backend_maps_context_length_refusals(server):
    server.state.context_chars = 10
    model = create_model(openai_spec(server))
    with pytest.raises(ContextLengthError, match="context_length_exceeded"):
        model.complete(request("x" * 11))
    assert len(server.state.received) == 1  # a 400 is not retried


def test_openai_backend_timeout_becomes_a_model_error(server):
    model = create_model(openai_spec(server, timeout_s=0.5, retries=1))
    server.state.faults.extend([("stall", 2.0), ("stall", 2.0)])
    with pytest.raises(ModelError, match="timeout"):
        model.complete(request("Question: q\n"))
    server.state.faults.extend([("500",)] * 2)
    with pytest.raises(ModelError, match="HTTP 500"):
        model.complete(request("Question: q\n"))


@pytest.mark.parametrize(
    "body",
    [
        b"<html>Bad gateway</html>",  # not JSON
        b'{"choices": []}',  # no choice
        b'{"error": {"message": "model overloaded", "type": "server_error"}}',  # status 200
        b'{"choices": [{"index": 0}]}',  # a choice without text
    ],
)
def test_a_malformed_200_reply_is_retried_then_a_model_error(server, body):
    model = create_model(openai_spec(server, retries=2, backoff_s=0.01))
    server.state.faults.append(("raw", 200, body))
    completion = model.complete(request("Question: q\n"))  # retried like a 5xx
    assert completion.text == "Answer: Question: q"
    server.state.faults.extend([("raw", 200, body)] * 3)
    with pytest.raises(ModelError, match="malformed reply after 3 attempts") as info:
        model.complete(request("Question: q\n"))
    assert not info.value.transient  # the server answers, wrongly: recorded as model_error
    # In the loop: recorded for that call, and the question ends.
    server.state.faults.extend([("raw", 200, body)] * 3)
    result = GeneGPT("Header\n").run("q1", "What?", model, tools=None)
    assert result.error == "model_error" and "malformed" in result.events[0].data["error"]


# How each server we name refuses a prompt past its context window (status, body).
REFUSALS = {
    "openai": (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your "
                "messages resulted in 9000 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    "vllm": (
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 2048 tokens. However, you "
            "requested 2100 tokens (2000 in the messages, 100 in the completion). Please "
            "reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    "vllm-decoder": (
        400,
        {
            "object": "error",
            "message": "The decoder prompt (length 9000) is longer than the maximum model "
            "length of 8192. Make sure that `max_model_len` is no smaller than the number of "
            "text tokens.",
            "type": "BadRequestError",
            "code": 400,
        },
    ),
    "llama.cpp": (
        400,
        {
            "error": {
                "code": 400,
                "message": "request (3001 tokens) exceeds the available context size (1024 "
                "tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 3001,
                "n_ctx": 1024,
            }
        },
    ),
    "ollama": (500, {"error": {"message": "input exceeds context length", "type": "api_error"}}),
}


@pytest.mark.parametrize("server_name", sorted(REFUSALS))
def test_each_servers_context_refusal_is_a_length_error(server, server_name):
    import json

    status, body = REFUSALS[server_name]
    model = create_model(openai_spec(server, retries=0))
    server.state.faults.append(("raw", status, json.dumps(body).encode()))
    with pytest.raises(ContextLengthError) as info:
        model.complete(request("Question: q\n"))
    message = str(info.value)
    assert message.startswith(f"HTTP {status}") and f"{status}: {status}" not in message
    result_model = create_model(openai_spec(server, retries=0))
    server.state.faults.append(("raw", status, json.dumps(body).encode()))
    result = GeneGPT("Header\n").run("q1", "What?", result_model, tools=None)
    assert result.error == "lengthError"


def test_llamacpp_refusal_is_described_once(server):
    import json

    status, body = REFUSALS["llama.cpp"]
    server.state.faults.append(("raw", status, json.dumps(body).encode()))
    with pytest.raises(ContextLengthError) as info:
        create_model(openai_spec(server, retries=0)).complete(request("q"))
    assert str(info.value) == (
        "HTTP 400 (exceed_context_size_error): request (3001 tokens) exceeds the available "
        "context size (1024 tokens), try increasing it"
    )


def test_server_failures_are_transient_and_bad_requests_are_not(server):
    model = create_model(openai_spec(server, retries=0, timeout_s=0.5))
    server.state.faults.append(("500",))
    with pytest.raises(ModelError) as info:
        model.complete(request("q"))
    assert info.value.transient
    server.state.faults.append(("raw", 400, b'{"error": {"message": "bad", "type": "x"}}'))
    with pytest.raises(ModelError) as info:
        model.complete(request("q"))
    assert not info.value.transient


def test_a_full_context_pool_is_retried_one_at_a_time(server, tmp_path):
    """Two jobs' prompts overflow the server's shared pool (llama.cpp's 500 "Context size
    has been exceeded"): each backs off and retries, taking turns, and both complete."""
    import threading

    server.state.pool_chars, server.state.hold_s = 150, 0.3
    spec = openai_spec(server, retries=0, backoff_s=0.05, capacity_retries=8)
    models = [create_model(spec, lock_dir=tmp_path / "locks") for _ in range(3)]
    results, errors = [], []

    def ask(model, i):
        try:
            results.append(model.complete(request(f"{i} " + "x" * 100)).text)
        except Exception as exc:  # noqa: BLE001 (collected for the assertion)
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(m, i)) for i, m in enumerate(models)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3
    assert server.state.overflows >= 1  # the pool did overflow, and was waited out


def test_served_model_is_part_of_the_identity(server, tmp_path):
    """A model swapped behind the same URL (llama.cpp ignores the request's model) gets
    none of the old model's cached answers."""
    cache = tmp_path / "m.sqlite"
    server.state.served = [
        {"id": "/models/smol-q4.gguf", "owned_by": "llamacpp", "meta": {"size": 1}}
    ]
    first = create_model(openai_spec(server), cache=cache)
    assert first.identity()["served"]["id"] == "/models/smol-q4.gguf"
    assert first.complete(request("q")).cache == "miss"
    assert create_model(openai_spec(server), cache=cache).complete(request("q")).cache == "hit"
    server.state.served = [
        {"id": "/models/smol-q8.gguf", "owned_by": "llamacpp", "meta": {"size": 2}}
    ]
    swapped = create_model(openai_spec(server), cache=cache).complete(request("q"))
    assert swapped.cache == "miss"


def test_fingerprint_model_and_cached_tokens_are_read(server):
    server.state.fingerprint, server.state.cached_tokens = "b4567-abcdef", 3
    completion = create_model(openai_spec(server)).complete(request("Question: q\n"))
    assert completion.served == {"model": "test-model", "system_fingerprint": "b4567-abcdef"}
    assert completion.reused_tokens == 3


def test_a_cached_answer_keeps_its_original_latency_and_tokens(server, tmp_path):
    cache = tmp_path / "m.sqlite"
    server.state.faults.append(("stall", 0.3))
    first = create_model(openai_spec(server), cache=cache).complete(request("Question: q\n"))
    hit = create_model(openai_spec(server), cache=cache).complete(request("Question: q\n"))
    assert hit.cache == "hit" and hit.latency_s >= 0.3
    assert (hit.prompt_tokens, hit.completion_tokens) == (
        first.prompt_tokens,
        first.completion_tokens,
    )


def test_openai_api_needs_a_key():
    with pytest.raises(ModelError, match="NO_SUCH_KEY"):
        create_model({"backend": "openai", "model": "gpt-4o-mini", "api_key_env": "NO_SUCH_KEY"})


def test_the_loop_records_model_failures_and_finishes(server):
    model = create_model(openai_spec(server, timeout_s=0.5, retries=0))
    server.state.faults.append(("stall", 2.0))
    result = GeneGPT("Header\n").run("q1", "What?", model, tools=None)
    assert result.error == "model_error" and result.answer is None
    assert "timeout" in result.events[0].data["error"]


# -- the response cache ------------------------------------------------------------------


def test_cache_hits_the_same_call_and_misses_any_change(server, tmp_path, capsys):
    cache = tmp_path / "models.sqlite"
    model = create_model(openai_spec(server), cache=cache, name="plain")
    first = model.complete(request("Question: a\n"))
    again = model.complete(request("Question: a\n"))
    assert (first.cache, again.cache) == ("miss", "hit")
    assert again.text == first.text and again.prompt_tokens == first.prompt_tokens
    assert len(server.state.received) == 1
    assert model.complete(request("Question: a\n", max_tokens=33)).cache == "miss"
    assert model.complete(request("Question: b\n")).cache == "miss"
    other = create_model(openai_spec(server, model="other-model"), cache=cache)
    assert other.complete(request("Question: a\n")).cache == "miss"  # never shared
    chat = create_model(openai_spec(server, api="chat"), cache=cache, name="chatty")
    assert chat.complete(request("Question: a\n")).cache == "miss"
    assert len(server.state.received) == 5
    # `helixbench cache` tells the models apart by the config's names and identities.
    from helixbench.cli import main

    main(["cache", "--models", str(cache), "--tools", str(tmp_path / "t"), "--code", "-"])
    listing = capsys.readouterr().out
    assert "plain (openai, " in listing and "completions API)" in listing
    assert "chatty (openai, " in listing and "chat API)" in listing
    assert "? (openai, other-model, " in listing  # stored without a name


def test_cache_keeps_refusals_but_not_failures(server, tmp_path):
    server.state.context_chars = 10
    model = create_model(openai_spec(server, retries=0), cache=tmp_path / "m.sqlite")
    for expected in ("miss", "hit"):
        with pytest.raises(ContextLengthError) as info:
            model.complete(request("x" * 11))
        assert info.value.cache == expected
    server.state.faults.append(("500",))
    with pytest.raises(ModelError):
        model.complete(request("short"))
    assert model.complete(request("short")).cache == "miss"  # the failure was not cached


class FileModel:
    """A stand-in backend whose identity is a file's digest, like a local model's."""

    def __init__(self, path):
        self.path = path

    def identity(self):
        from helixbench.digests import sha256_file

        return {"backend": "file", "sha256": sha256_file(self.path)}

    def complete(self, request):
        from helixbench.models import Completion

        return Completion(self.path.read_text())


def test_a_changed_model_file_is_a_miss(tmp_path):
    weights = tmp_path / "weights.bin"
    weights.write_text("v1")
    cache = ModelCache(tmp_path / "m.sqlite")
    assert CachedModel(FileModel(weights), cache).complete(request("p")).cache == "miss"
    assert CachedModel(FileModel(weights), cache).complete(request("p")).cache == "hit"
    weights.write_text("v2")
    completion = CachedModel(FileModel(weights), cache).complete(request("p"))
    assert (completion.cache, completion.text) == ("miss", "v2")


# -- the local transformers backend, with the real SmolLM2 ----------------------------


def test_the_conversions_gguf_reader_reads_what_gguf_reads(tmp_path):
    """The conversion reads a GGUF file through a plain view of its map: every field
    and tensor as gguf's own reader gives them, from a file gguf's writer wrote."""
    import gguf
    import numpy as np

    from helixbench.models.gguf import array_reader

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_uint32("tiny.count", 7)
    writer.add_string("tiny.name", "SmolLM2 ünïcode")
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "Ġthe", "12", ""])
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    def read(reader):
        fields = {k: [bytes(p).hex() for p in f.parts] for k, f in reader.fields.items()}
        tensors = [(t.name, bytes(np.ascontiguousarray(t.data))) for t in reader.tensors]
        return fields, tensors

    ours = array_reader(gguf.GGUFReader)(path)
    assert type(ours.data) is np.ndarray and read(ours) == read(gguf.GGUFReader(path))


def test_converted_model_keeps_the_gguf_identity(smollm2_dir):
    from helixbench.models.local import TransformersModel

    converted = TransformersModel(SMOLLM2, converted=smollm2_dir)
    identity = converted.identity()
    assert identity["weights_sha256"]["SmolLM2-135M-Instruct.Q4_1.gguf"] == (
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    )
    assert converted._loaded[2] == 8192  # the model's window, from its config


def test_cache_reuse_and_prompt_lookup_are_token_identical(smollm2_dir):
    """Greedy decoding three ways gives the same tokens: one token a pass on a fresh
    cache, the same reusing the key/value cache across calls, and reusing it with
    prompt lookup (drafts checked several a pass), on prompts whose completions copy
    URLs from the header (what prompt lookup drafts)."""
    from helixbench.methods.genegpt import DOCUMENTATION, INSTRUCTION
    from helixbench.models.local import TransformersModel

    url = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&retmax=5&term="
    demonstration = (
        f"Question: What is the official gene symbol of SEP2?\n[{url}SEP2]->"
        '[b\'{"esearchresult": {"idlist": ["1731"]}}\']\nAnswer: SEPTIN2\n\n'
    )
    header = INSTRUCTION + DOCUMENTATION[0] + "Here are some examples:\n\n" + demonstration
    questions = ["What is the official gene symbol of LMP10?"]
    runs = {}
    for name, reuse, lookup in (("fresh", False, 0), ("reuse", True, 0), ("lookup", True, 8)):
        spec = {**SMOLLM2, "reuse_cache": reuse, "prompt_lookup": lookup}
        model = TransformersModel(spec, converted=smollm2_dir)
        texts, reused = [], []
        for question in questions:
            prompt = header + f"Question: {question}\n"
            for call in range(2):  # a tool round: the prompt grows by what was appended
                completion = model.complete(request(prompt, call, max_tokens=24))
                texts.append((completion.text, completion.completion_tokens))
                reused.append(completion.reused_tokens)
                prompt += completion.text + '->[b\'{"esearchresult": {"idlist": ["5699"]}}\']\n'
        runs[name] = (texts, reused)
    assert runs["reuse"][0] == runs["fresh"][0] == runs["lookup"][0]
    assert any("https://" in text for text, _ in runs["lookup"][0])  # drafts had URLs to copy
    assert runs["fresh"][1] == [0, 0]
    with_reuse = runs["reuse"][1]
    assert with_reuse[0] == 0 and all(n > 200 for n in with_reuse[1:])  # header and more


def test_the_growing_cache_gives_dynamic_caches_logits(smollm2_dir):
    """Our in-place key/value cache against transformers' DynamicCache: the same logits
    token by token, after a crop back (reuse across calls) too."""
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    from helixbench.models.local import _new_cache

    model = AutoModelForCausalLM.from_pretrained(str(smollm2_dir), dtype=torch.float32).eval()
    prompt = torch.arange(100, 400).unsqueeze(0)
    runs = []
    for cache in (DynamicCache(), _new_cache()):
        logits = []
        with torch.inference_mode():
            out = model(input_ids=prompt, cache=cache, use_cache=True, logits_to_keep=1)
            for _ in range(6):
                token = out.logits[:, -1:].argmax(-1)
                out = model(input_ids=token, cache=cache, use_cache=True, logits_to_keep=1)
                logits.append(out.logits)
            cache.crop(-4)
            assert cache.get_seq_length() == 300 + 6 - 4
            out = model(input_ids=torch.tensor([[7, 8, 9]]), cache=cache, use_cache=True)
            logits.append(out.logits)
        runs.append(torch.cat([x[:, -1] for x in logits]))
    assert torch.equal(runs[0], runs[1])


def test_prompt_past_the_window_is_a_length_error(smollm2_dir):
    from helixbench.models.local import TransformersModel

    model = TransformersModel({**SMOLLM2, "context_window": 64}, converted=smollm2_dir)
    with pytest.raises(ContextLengthError, match="64-token window"):
        model.complete(request("gene " * 100))


@pytest.mark.slow
def test_a_loop_question_runs_offline_with_smollm2(smollm2_dir, tmp_path, recording):
    from helixbench.datasets.snapshots import extract_from_header
    from helixbench.methods.genegpt import GeneGPT, build_header
    from helixbench.sources.recordings import load_recording, recorded_header
    from helixbench.tools.executor import ToolExecutor, ToolSettings

    items = load_recording(recording("geneturing", "001001", "Gene alias"))
    snapshot = extract_from_header(recorded_header(items))
    # The first documentation alone (217 tokens): the 4,100-token header of 001001
    # cost this test 45 s of prefill, and the main.py cross-check prefills it anyway.
    method = GeneGPT(build_header("100000", snapshot), max_calls=1, max_tokens=16)
    tools = ToolExecutor(ToolSettings.from_config({"mode": "offline", **_cache_paths(tmp_path)}))
    model = create_model(
        SMOLLM2, model_dir=smollm2_dir, cache=tmp_path / "models.sqlite", threads=1
    )
    result = method.run("q", items[0].question, model, tools)
    assert result.error in (None, "numError")
    calls = [e for e in result.events if e.type == "model"]
    assert calls and calls[0].data["prompt_tokens"] > 200 and calls[0].data["cache"] == "miss"
    again = method.run("q", items[0].question, model, tools)
    assert again.answer == result.answer
    assert {e.data["cache"] for e in again.events if e.type == "model"} == {"hit"}


def _cache_paths(tmp_path):
    return {"cache": str(tmp_path / "tools.sqlite"), "budgets": str(tmp_path / "budgets")}
