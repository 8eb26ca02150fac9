"""The config checked against the schema: one short line naming the file, the key's
path, what is wrong and the closest known name."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from helixbench.config.schema import check_config
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
    # A name that names nothing is found by the plan, after the schema: named there too.
    from helixbench.config import build_plan
    from helixbench.config.schema import naming_the_file

    extra.write_text(yaml.safe_dump({"runs": [{"model": "codex", "method": "no-tool"}]}))
    config = _with(lambda c: c.update(runs=[{"model": "codex", "method": "no-tool"}]))
    with pytest.raises(ConfigError) as found:
        build_plan(config, None)
    assert naming_the_file(str(found.value), [base, extra]).startswith(
        f"{extra}: runs[0].method: unknown method 'no-tool'; did you mean 'no-tools'?"
    )


def test_the_schema_takes_every_name_from_the_code():
    """Where the schema file says `x-enum`, the names are the code's: every benchmark
    and task the benchmark modules declare, every scorer, backend, method kind, seed
    system; none is written out in the file, so none can drift."""
    from helixbench.benchmarks import all_tasks, names
    from helixbench.config.schema import SCHEMA, generated_enums, load_schema
    from helixbench.methods import KINDS
    from helixbench.scoring import SCORER_NAMES

    raw = SCHEMA.read_text()
    for name, values in generated_enums().items():
        assert f"x-enum: {name}" in raw, name
        assert len(values) == len(set(values)) > 0, name
    schema = load_schema()
    assert schema["properties"]["benchmarks"]["items"]["enum"] == names()
    tasks = schema["properties"]["scoring"]["properties"]["tasks"]["propertyNames"]["enum"]
    assert tasks == all_tasks() and {"TF regulation", "ORF-seq-AAid", "GO toy"} <= set(tasks)
    assert schema["$defs"]["scorer_list"]["items"]["enum"] == list(SCORER_NAMES)
    kinds = schema["properties"]["methods"]["additionalProperties"]["properties"]["kind"]
    assert kinds["enum"] == list(KINDS)
    # what docs/scoring.md shows is a config the schema takes
    check_config({**DEFAULT, "scoring": {"tasks": {"TF regulation": ["tf_label"]}}})


def _yaml_blocks(markdown: str) -> list[str]:
    import re

    return re.findall(r"```yaml\n(.*?)```", markdown, re.S)


def _merged(base: dict, over: dict) -> dict:
    """``over`` on ``base`` as Snakemake merges --configfile files: mappings key by key,
    lists and values replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def test_every_yaml_example_of_the_docs_and_config_examples_is_a_valid_config(mirror):
    """Each config in config/examples/ (over the default, as --configfile merges it)
    passes the schema and plans; each YAML example in docs/ that is a config (its
    keys are config keys) passes the schema over the default."""
    from helixbench.config import build_plan
    from helixbench.config.schema import load_schema

    keys = set(load_schema()["properties"])
    examples = sorted((REPO_ROOT / "config" / "examples").glob("*.yaml"))
    assert len(examples) >= 13
    for path in examples:
        config = _merged(DEFAULT, yaml.safe_load(path.read_text()))
        check_config(config, [path])
        assert build_plan(config, mirror).runs, path
    checked = 0
    for page in sorted((REPO_ROOT / "docs").rglob("*.md")):
        for block in _yaml_blocks(page.read_text()):
            snippet = yaml.safe_load(block)
            if not isinstance(snippet, dict) or not set(snippet) <= keys:
                continue  # a profile, an environment file, a fragment of another file
            try:
                check_config(_merged(DEFAULT, snippet), [page])
            except ConfigError as exc:
                raise AssertionError(f"{page.name}: {block}\n{exc}") from None
            checked += 1
    assert checked >= 6  # (every YAML block of the docs today)
