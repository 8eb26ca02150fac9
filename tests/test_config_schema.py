"""The config checked against the schema: one short line naming the file, the key's
path, what is wrong and the closest known name."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from helixbench.config_schema import check_config
from helixbench.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())


def _with(edit):
    config = copy.deepcopy(DEFAULT)
    edit(config)
    return config


def _rename(mapping: dict, old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: _rename(c, "models", "modles"), "modles: unknown key; did you mean 'models'?"),
        (
            lambda c: _rename(c["models"]["smollm2"], "gguf_file", "guff_file"),
            "models.smollm2.guff_file: unknown key; did you mean 'gguf_file'?",
        ),
        (
            lambda c: _rename(c["methods"]["genegpt-slim-short"], "max_calls", "max_call"),
            "methods.genegpt-slim-short.max_call: unknown key; did you mean 'max_calls'?",
        ),
        (
            lambda c: _rename(c["runs"][0], "method", "methdo"),
            "runs[0].methdo: unknown key; did you mean 'method'?",
        ),
        (
            lambda c: c["tools"].update(htp={"retries": 1}),
            "tools.htp: unknown key; did you mean 'http'?",
        ),
        (lambda c: c.update(shards="two"), "shards: expected a whole number, got 'two' (str)"),
        (lambda c: c.update(shards=0), "shards: 0 is out of range; it must be at least 1"),
        (
            lambda c: c["tools"].update(mode="online"),
            "tools.mode: 'online' is not one of offline, live, refresh",
        ),
        (
            lambda c: c["models"]["codex"].update(backend="openia"),
            "models.codex.backend: 'openia' is not one of replay, imported, enrichment, openai, "
            "transformers; did you mean 'openai'?",
        ),
        (
            lambda c: c["methods"]["genegpt-slim"].update(kind="genegtp"),
            "did you mean 'genegpt'?",
        ),
        (
            lambda c: c.update(benchmarks=["geneturin"]),
            "benchmarks[0]: 'geneturin' is not one of geneturing, genehop",
        ),
        (
            lambda c: c.update(scoring={"tasks": {"Gene alais": ["genegpt"]}}),
            "scoring.tasks: unknown name 'Gene alais'; did you mean 'Gene alias'?",
        ),
        (
            lambda c: c["models"]["smollm2"].update(threads=0.5),
            "models.smollm2.threads: expected a whole number, got 0.5 (float)",
        ),
        (lambda c: c["runs"][1].pop("model"), "runs[1]: missing key 'model'"),
        (lambda c: c.update(runs={"model": "codex"}), "runs: expected a list, got a mapping"),
        (
            lambda c: c["models"]["codex"].pop("recording"),
            "models.codex: missing key 'recording'",
        ),
    ],
)
def test_a_common_mistake_gets_one_line_naming_it(tmp_path, edit, message):
    config = _with(edit)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as raised:
        check_config(config, [path])
    text = str(raised.value)
    assert text.startswith(f"{path}: ") and message in text, text
    assert "\n" not in text and len(text) < 300


def test_the_file_that_holds_the_key_is_named_and_a_valid_config_passes(tmp_path):
    check_config(DEFAULT, ["config/config.yaml"])
    base, extra = tmp_path / "base.yaml", tmp_path / "extra.yaml"
    base.write_text(yaml.safe_dump(DEFAULT))
    extra.write_text(yaml.safe_dump({"tools": {"mode": "onlin"}}))
    config = _with(lambda c: c["tools"].update(mode="onlin"))
    with pytest.raises(ConfigError, match=rf"^{extra}: tools.mode: 'onlin' is not one of"):
        check_config(config, [base, extra])
    with pytest.raises(ConfigError, match="shards: 5000 is out of range; it must be at most"):
        check_config(_with(lambda c: c.update(shards=5000)), [base])
