"""Function calling and no tools on question-answering benchmarks: a scripted
OpenAI-compatible server calls NCBI's functions, answered by the loopback NCBI
stand-in through the tool executor; SmolLM2 runs it end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helixbench.loopback.ncbi import NCBIServer
from helixbench.loopback.openai import OpenAIServer
from helixbench.methods.function_calling import FunctionCalling, demonstration_turns, final_answer
from helixbench.models import ModelError, create_model
from helixbench.sources.recordings import load_recording, recorded_header, snapshot_run
from helixbench.tools.cache import ReplyCache
from helixbench.tools.executor import ToolExecutor, ToolSettings
from helixbench.tools.functions import NCBIFunctions, call_of_url, function_urls, reply_text
from helixbench.tools.seed import seed_from_recordings
from helixbench.tools.urls import canonical_url

ESEARCH = {"db": "gene", "term": "LMP10", "retmax": 5, "retmode": "json", "sort": "relevance"}
EFETCH = {"db": "gene", "id": "19171,5699,8138", "retmax": 5, "retmode": "json"}
ESEARCH_URL = (
    "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&retmax=5&retmode=json"
    "&sort=relevance&term=LMP10"
)


@pytest.fixture
def servers():
    with OpenAIServer() as model_server, NCBIServer() as ncbi:
        ncbi.state.replies[canonical_url(ESEARCH_URL)] = b'{"esearchresult": {"idlist": ["5699"]}}'
        yield model_server, ncbi


def _functions(tmp_path, ncbi, mode="live", **settings) -> NCBIFunctions:
    config = {
        "mode": mode,
        "cache": str(tmp_path / "tools.sqlite"),
        "budgets": str(tmp_path / "budgets"),
        "routes": ncbi.routes() if ncbi else {},
        "http": {"timeout_s": 5.0, "retries": 0},
        **settings,
    }
    return NCBIFunctions(ToolExecutor(ToolSettings.from_config(config)))


def _model(server, tmp_path=None, **extra):
    spec = {
        "backend": "openai",
        "api": "chat",
        "model": "m",
        "base_url": server.base_url,
        "api_key_env": None,
        "retries": 0,
        **extra,
    }
    return create_model(spec, cache=tmp_path / "models.sqlite" if tmp_path else None)


def _tool_events(result):
    return [e.data for e in result.events if e.type == "tool"]


def test_a_model_calls_functions_over_rounds_and_answers(servers, tmp_path):
    model_server, ncbi = servers
    model_server.state.script.extend(
        [
            {"tool_calls": [("esearch", ESEARCH)]},
            {"tool_calls": [("efetch", EFETCH)]},
            "The gene is PSMB10.\nAnswer: PSMB10",
        ]
    )
    method = FunctionCalling(max_tool_rounds=4)
    functions = _functions(tmp_path, ncbi)
    model = _model(model_server, tmp_path)
    result = method.run("q1", "What is the official gene symbol of LMP10?", model, functions)
    assert (result.answer, result.error) == ("Answer: PSMB10", None)
    calls = _tool_events(result)
    assert [c["tool"] for c in calls] == ["esearch", "efetch"]
    assert calls[0]["url"] == ESEARCH_URL and calls[0]["rendered"].startswith('{"esearchresult"')
    assert [r.path for r in ncbi.state.received] == [
        "/entrez/eutils/esearch.fcgi",
        "/entrez/eutils/efetch.fcgi",
    ]
    first, second = model_server.state.received[:2]
    assert [t["function"]["name"] for t in first[1]["tools"]] == [
        "esearch",
        "efetch",
        "esummary",
        "elink",
        "blast",
    ]
    assert second[1]["messages"][-1]["role"] == "tool"  # the result went back
    assert second[1]["messages"][-1]["content"].startswith('{"esearchresult"')
    # Again, from the caches: no request to the model server or to NCBI.
    before = (len(model_server.state.received), len(ncbi.state.received))
    again = method.run("q1", "What is the official gene symbol of LMP10?", model, functions)
    assert again.answer == result.answer
    assert (len(model_server.state.received), len(ncbi.state.received)) == before
    assert {e.data["cache"] for e in again.events if e.type == "model"} == {"hit"}


@pytest.mark.parametrize(
    "name, arguments, error",
    [
        ("esearch", "{db: gene", "not JSON"),
        ("esearch", '["gene"]', "not a JSON object"),
        ("entrez_search", {"db": "gene"}, "unknown function 'entrez_search'"),
        ("esearch", {"db": "gene"}, "esearch needs term"),
        ("esummary", {"db": "gene", "id": "1", "host": "evil.example"}, "takes no host"),
        ("esearch", {"db": "https://evil.example/", "term": "x"}, "db: a database name"),
        ("efetch", {"db": "gene", "id": "1/../../x"}, "id: record ids"),
        ("esearch", {"db": "gene", "term": "x", "retmax": "all"}, "retmax: a whole number"),
        ("blast", {"sequence": "ACGT<script>"}, "sequence: only the letters"),
    ],
)
def test_bad_arguments_are_a_tool_error_and_never_a_request(
    servers, tmp_path, name, arguments, error
):
    model_server, ncbi = servers
    model_server.state.script.extend([{"tool_calls": [(name, arguments)]}, "Answer: none"])
    result = FunctionCalling().run("q1", "Q?", _model(model_server), _functions(tmp_path, ncbi))
    (call,) = _tool_events(result)
    assert error in call["error"] and call["requests"] == []
    assert ncbi.state.received == []
    sent_back = model_server.state.received[1][1]["messages"][-1]["content"]
    assert sent_back.startswith("Error:") and error in sent_back  # the model sees why
    assert result.answer == "Answer: none"


def test_arguments_crafted_to_reach_another_host_send_nothing_anywhere(servers, tmp_path):
    """Values that would name a host (a loopback canary's, say) stay parameter values
    of an NCBI URL, or are refused: the canary hears nothing."""
    model_server, ncbi = servers
    with NCBIServer() as canary:
        here = f"127.0.0.1:{canary.port}"
        crafted = [
            ("esearch", {"db": "gene", "term": f"x&retmode=json#@{here}/"}),
            ("esummary", {"db": f"gene@{here}", "id": "1"}),
            ("efetch", {"db": "gene", "id": f"http://{here}/x"}),
            ("elink", {"dbfrom": "gene", "db": "../..", "id": "1"}),
        ]
        model_server.state.script.extend([{"tool_calls": crafted}, "Answer: none"])
        result = FunctionCalling().run("q", "Q?", _model(model_server), _functions(tmp_path, ncbi))
        assert canary.state.received == []
    calls = _tool_events(result)
    assert [bool(c["error"]) for c in calls] == [False, True, True, True]
    # The one accepted went to the (routed) NCBI host with the value encoded.
    assert calls[0]["url"].startswith("https://eutils.ncbi.nlm.nih.gov/")
    assert f"term=x%26retmode%3Djson%23%40127.0.0.1%3A{canary.port}%2F" in calls[0]["url"]
    assert len(ncbi.state.received) == 1


def test_parallel_calls_run_in_order_or_one_a_turn(servers, tmp_path):
    model_server, ncbi = servers
    two = {"tool_calls": [("esearch", ESEARCH), ("efetch", EFETCH)]}
    model_server.state.script.extend([two, "Answer: PSMB10"])
    result = FunctionCalling().run("q", "Q?", _model(model_server), _functions(tmp_path, ncbi))
    assert [c["tool"] for c in _tool_events(result)] == ["esearch", "efetch"]
    assert [c["error"] for c in _tool_events(result)] == [None, None]
    assert "parallel_tool_calls" not in model_server.state.received[0][1]
    model_server.state.script.extend([two, "Answer: PSMB10"])
    one = FunctionCalling(parallel_tool_calls=False)
    result = one.run("q2", "Q2?", _model(model_server), _functions(tmp_path, ncbi))
    calls = _tool_events(result)
    assert calls[1]["error"] == "one call a turn" and calls[1]["requests"] == []
    assert model_server.state.received[2][1]["parallel_tool_calls"] is False


def test_a_model_that_never_stops_calling_is_stopped_at_the_cap(servers, tmp_path):
    model_server, ncbi = servers
    model_server.state.script.extend([{"tool_calls": [("esearch", ESEARCH)]}] * 10)
    method = FunctionCalling(max_tool_rounds=3)
    result = method.run("q", "Q?", _model(model_server), _functions(tmp_path, ncbi))
    assert (result.answer, result.error) == (None, "numError")
    assert sum(e.type == "model" for e in result.events) == 4  # 3 rounds, then one more ask
    assert len(_tool_events(result)) == 3


def test_no_tools_asks_once_with_the_same_contract(servers, tmp_path):
    model_server, _ = servers
    model_server.state.script.append("I think it is PSMB10.\nAnswer: PSMB10")
    method = FunctionCalling(tools=False)
    result = method.run(
        "q", "What is the official gene symbol of LMP10?", _model(model_server), None
    )
    assert result.answer == "Answer: PSMB10"
    (request,) = model_server.state.received
    assert "tools" not in request[1] and "Answer: <answer>" in request[1]["messages"][0]["content"]


def test_a_server_that_takes_no_tools_is_named(servers, tmp_path):
    model_server, ncbi = servers
    model_server.state.no_tools = True
    with pytest.raises(ModelError, match=r"m at http://127.0.0.1:\d+/v1 takes no tools"):
        _model(model_server).complete(_request_with_tools(_functions(tmp_path, ncbi)))


def _request_with_tools(functions):
    from helixbench.models import CompletionRequest

    return CompletionRequest(
        "q",
        (),
        16,
        0.0,
        "q",
        "q",
        0,
        messages=({"role": "user", "content": "q"},),
        tools=tuple(functions.schemas()),
    )


def test_tool_documentation_can_be_left_out():
    functions = NCBIFunctions(None)
    documented, bare = functions.schemas(True), functions.schemas(False)
    assert [s["function"]["name"] for s in bare] == [s["function"]["name"] for s in documented]
    assert "description" in documented[0]["function"]
    assert "description" not in json.dumps(bare)


def test_the_demonstrations_become_chat_turns_with_the_snapshots_replies(upstream):
    from helixbench.methods.genegpt import recorded_snapshot

    run = snapshot_run("genegpt-2023")
    header = recorded_header(load_recording(upstream(run.file.path)))
    snapshot = recorded_snapshot(header, "111111", {})
    turns = demonstration_turns(snapshot)
    questions = [t["content"] for t in turns if t["role"] == "user"]
    assert len(questions) == 4 and questions[0] == "What is the official gene symbol of LMP10?"
    calls = [t["tool_calls"][0]["function"] for t in turns if t.get("tool_calls")]
    assert [c["name"] for c in calls] == [
        "esearch",
        "efetch",
        "esummary",
        "esearch",
        "esummary",
        "blast",
    ]
    assert json.loads(calls[0]["arguments"]) == ESEARCH
    replies = [t["content"] for t in turns if t["role"] == "tool"]
    assert '"idlist"' in replies[0] and "chr15" not in replies[0]
    assert "BLASTN" in replies[-1] or "Query" in replies[-1]  # the search's results, not its RID
    assert [t["content"] for t in turns if t["role"] == "assistant" and t["content"]][-1] == (
        "Answer: chr15:91950805-91950932"
    )


def test_a_call_that_asks_what_codex_asked_gets_the_2023_reply_offline(
    mirror, tmp_path, monkeypatch
):
    """The seeded cache answers a function call whose URL is one Codex wrote."""
    from helixbench.sources.recordings import local_recorded_files

    monkeypatch.chdir(tmp_path)
    files = [f for _, f in local_recorded_files("genegpt-2023", "geneturing", "001001", mirror)]
    cache = ReplyCache(tmp_path / "tools.sqlite")
    seeded = seed_from_recordings("genegpt-2023", cache, files)
    assert sum(f["replies"] for f in seeded) > 800
    functions = _functions(tmp_path, None, mode="offline")
    # Codex's first call for the first Gene alias question, as a function call.
    alias = next(f for f in files if f.endswith("Gene alias.json"))
    url = load_recording(alias)[0].steps[0][1].strip("[]").replace(" ", "+")
    name, arguments = call_of_url(url)
    assert canonical_url(function_urls(name, arguments)[0]) == canonical_url(url)
    done = functions.call(name, json.dumps(arguments), "q", 0)
    assert done.error is None and done.requests[0].cache == "hit"


def test_a_recorded_blast_call_gets_the_recorded_hits_offline(upstream, tmp_path, monkeypatch):
    """A seeded BLAST Put holds the RID as GeneGPT rendered it, not NCBI's page: the
    blast function reads either, so a scripted chat model that asks a recorded
    question's BLAST call gets the recorded hits offline, as the text protocol does.
    First the Dm.4 question; then every BLAST call the seeded files show, derived from
    them."""
    from helixbench.paths import upstream_path
    from helixbench.sources.recordings import RecordingReader, recorded_runs
    from helixbench.tools.recorded_calls import recorded_function_calls

    monkeypatch.chdir(tmp_path)
    files = []
    for run in recorded_runs("genegpt-2023", "geneturing", "001001"):
        if "DNA" in run.task:  # the two tasks that align sequences
            local = Path(upstream_path(run.file))
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(upstream(run.file.path).read_bytes())
            files.append(str(local))
    seed_from_recordings("genegpt-2023", ReplyCache(tmp_path / "tools.sqlite"), files)
    functions = _functions(tmp_path, None, mode="offline")
    reader = RecordingReader()
    derived = [
        (item, call)
        for path in files
        for item in reader.items(path)
        for call in recorded_function_calls(item, reader.loop(path, files).url_rule)
        if call.name == "blast" and call.reply is not None
    ]
    genome = next(f for f in files if "Human genome" in f)
    dm4 = reader.items(genome)[0]  # the demonstration's own sequence
    assert dm4.final_text.endswith("chr15:91950805-91950932")
    with OpenAIServer() as model_server:
        model = _model(model_server)
        for item, call in [(dm4, recorded_function_calls(dm4)[0]), *derived]:
            model_server.state.script.extend(
                [{"tool_calls": [("blast", call.arguments)]}, item.final_text]
            )
            result = FunctionCalling().run("q", item.question, model, functions)
            (event,) = _tool_events(result)
            assert event["error"] is None, (item.question, event["error"])
            assert [r["cache"] for r in event["requests"]] == ["hit", "hit"]  # Put, Get
            assert event["rendered"] == reply_text(call.reply, 10_000)
            assert "Status=READY" in event["rendered"] and "BLASTN" in event["rendered"]
            assert result.answer == item.final_text
    assert len(derived) == 100  # 50 questions a task, one search each


def test_the_answer_is_the_last_answer_line():
    assert final_answer("Let me see.\nAnswer: chr8\n") == "Answer: chr8"
    assert final_answer("Answer: KRT3\nThen, on reflection:\nanswer: KRT12") == "answer: KRT12"
    assert final_answer("PSMB10") == "PSMB10"


def test_blast_is_one_call_that_waits_as_ncbi_asks_then_a_second_run_asks_nobody(servers, tmp_path):
    """live: the blast function submits, polls by RID under NCBI's rules and fetches
    the hits; the same question again is answered from the caches alone."""
    model_server, ncbi = servers
    sequence = "ATTCTGCCTTTAGTAATTTGATGACAGAGACTTCTTGGGAACCACAGACCAGGGAGCCCCAA"
    model_server.state.script.extend(
        [{"tool_calls": [("blast", {"sequence": sequence.lower()})]}, "Answer: chr15"]
    )
    functions = _functions(
        tmp_path,
        ncbi,
        blast={"poll_interval_s": 0.05},
        rates={"blast.ncbi.nlm.nih.gov": 50},
    )
    model = _model(model_server, tmp_path)
    question = f"Align the DNA sequence to the human genome:{sequence}"
    result = FunctionCalling().run("q", question, model, functions)
    (call,) = _tool_events(result)
    assert call["error"] is None and "chr15:91950805-91950932" in call["rendered"]
    commands = [(r.query.get("CMD"), r.query.get("FORMAT_OBJECT")) for r in ncbi.state.received]
    assert commands[0] == ("Put", None) and commands[-1] == ("Get", None)
    assert ("Get", "SearchInfo") in commands  # polled by RID before fetching
    assert f"QUERY={sequence}" in call["url"]  # upper-cased: the sequence as NCBI takes it
    before = len(ncbi.state.received), len(model_server.state.received)
    again = FunctionCalling().run("q", question, model, functions)
    assert again.answer == "Answer: chr15"
    assert (len(ncbi.state.received), len(model_server.state.received)) == before


@pytest.mark.slow
def test_smollm2_end_to_end_in_its_chat_template(smollm2_dir, tmp_path):
    """SmolLM2's chat template renders no tools: it gets the <tool_call> text convention.
    It may answer badly; every turn and call must be run and recorded, the same on a
    rerun from the response cache."""
    from helixbench.models.tool_calls import TOOL_CALL_START

    from .conftest import SMOLLM2

    spec = {**SMOLLM2, "chat_template": True}
    model = create_model(spec, model_dir=smollm2_dir, threads=1, cache=tmp_path / "m.sqlite")
    functions = _functions(tmp_path, None, mode="offline")
    questions = {"q1": "What is the official gene symbol of LMP10?"}
    for method in (
        FunctionCalling(max_tool_rounds=1, max_tokens=32),
        FunctionCalling(tools=False, max_tokens=32),
    ):
        for qid, text in questions.items():
            result = method.run(qid, text, model, functions)
            model_calls = [e for e in result.events if e.type == "model"]
            assert model_calls and result.error in (None, "numError")
            first = model_calls[0].data
            assert first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
            assert (TOOL_CALL_START in first["prompt_increment"]) is False  # the question only
            for event in result.events:
                if event.type == "tool":  # a call it made ran (or was refused) and was logged
                    assert event.data["tool"] is not None and event.data["rendered"]
            again = method.run(qid, text, model, functions)
            assert again.answer == result.answer
            assert {e.data["cache"] for e in again.events if e.type == "model"} == {"hit"}


def test_tool_calls_are_read_in_the_tag_convention_and_as_llama_json():
    from helixbench.models.tool_calls import parse_tool_calls

    text = (
        'Let me look.\n<tool_call>{"name": "esearch", "arguments": {"db": "gene"}}</tool_call>'
        '<tool_call>{"name": "efetch", "parameters": {"id": "5699"}}</tool_call>'
        "<tool_call>not json</tool_call>"
    )
    before, calls = parse_tool_calls(text)
    assert before == "Let me look."
    assert [
        (c["name"], json.loads(c["arguments"]) if c["name"] else c["arguments"]) for c in calls
    ] == [
        ("esearch", {"db": "gene"}),
        ("efetch", {"id": "5699"}),
        ("", "not json"),  # the executor answers it with a tool error
    ]
    llama = '{"name": "esearch", "parameters": {"db": "gene", "term": "LMP10"}}'
    assert parse_tool_calls(llama) == (llama, None)  # the tag convention only
    assert parse_tool_calls(llama, bare_json=True)[1][0]["name"] == "esearch"
    assert parse_tool_calls('{"answer": "chr8"}', bare_json=True)[1] is None
    assert parse_tool_calls("Answer: PSMB10", bare_json=True) == ("Answer: PSMB10", None)


HERMES_STYLE_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n{{ messages[0]['content'] }}\n<tools>"
    "{%- for tool in tools %}{{ tool | tojson }}{% endfor %}</tools><|im_end|>\n{% endif %}"
    "{%- for message in messages %}{% if not (tools and loop.first) %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + (message['content'] or '') + '<|im_end|>\n' }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_template_that_renders_tools_gets_them_and_others_get_the_convention(
    smollm2_dir, tmp_path
):
    """Which local models get which: a chat template that renders tools is given the
    schemas; SmolLM2's own template is given the <tool_call> convention."""
    from helixbench.models import CompletionRequest
    from helixbench.models.tool_calls import TOOL_CALL_CONVENTION

    from .conftest import SMOLLM2

    hermes = tmp_path / "hermes"
    hermes.mkdir()
    for item in smollm2_dir.iterdir():
        (hermes / item.name).symlink_to(item)
    (hermes / "chat_template.jinja").unlink()
    (hermes / "chat_template.jinja").write_text(HERMES_STYLE_TEMPLATE)
    functions = _functions(tmp_path, None, mode="offline")
    method = FunctionCalling()
    request = CompletionRequest(
        prompt="q",
        stop=(),
        max_tokens=8,
        temperature=0.0,
        question_id="q",
        question="q",
        call_index=0,
        messages=({"role": "system", "content": method.system}, {"role": "user", "content": "q"}),
        tools=method.schemas(functions),
    )
    rendered = {}
    for name, directory in (("smollm2", smollm2_dir), ("hermes", hermes)):
        spec = {**SMOLLM2, "chat_template": True}
        model = create_model(spec, model_dir=directory, threads=1)
        rendered[name] = model._loaded[0].decode(model._tokens(request))
    assert TOOL_CALL_CONVENTION in rendered["smollm2"] and "<tools>" not in rendered["smollm2"]
    assert "<tools>" in rendered["hermes"] and TOOL_CALL_CONVENTION not in rendered["hermes"]
    for text in rendered.values():
        assert method.system in text and '"esearch"' in text and '"blast"' in text
