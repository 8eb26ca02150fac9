"""A config checked against the workflow's schema, with an error a person can act on.

Snakemake's own ``validate`` prints the whole schema after its message (1,400 lines
for one misspelt key). :func:`check_config` runs first, with the same schema, and
raises a :class:`~helixbench.errors.ConfigError` of one or two lines: the file, the
key's path, what is wrong and, for an unknown key or value, the closest known one.
The schema stays the reference (``workflow/schemas/config.schema.yaml``);
Snakemake's ``validate`` still runs after it, to fill in the defaults.

The names the code defines (benchmarks, their tasks, scorers, backends, method
kinds, seed systems, multiple-choice variants, import formats) are not written in
the schema: where it says ``x-enum: <list>``, :func:`load_schema` puts the code's
list (:func:`generated_enums`), so that a benchmark added as a module is a name a
config may use at once, and the schema, the docs and the code cannot disagree.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import jsonschema
import yaml

from ..errors import ConfigError, closest

# Where the workflow keeps the schema, seen from this package's source.
SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"
_TYPES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}
SHOWN = 6  # the names an unknown value's error lists (the closest is suggested too)
# Why the schema caps what it caps, said where the cap is hit (by the key's name).
LIMITS = {
    ("shards", "maximum"): "one run of 1,000 shards takes Snakemake about 8 s to plan on 2 "
    "cores, 16,000 run jobs about 70 s (perf/sweep_dag.py); for more requests in "
    "flight a run job keeps many questions going at once: raise the model's `concurrency`"
}


def generated_enums() -> dict[str, list]:
    """The lists the schema takes from the code, by the name ``x-enum`` gives."""
    from ..benchmarks import all_tasks, names
    from ..methods import KINDS
    from ..methods.choices import VARIANTS
    from ..methods.originals import ORIGINALS
    from ..methods.toolsets import TOOLSETS
    from ..models import BACKENDS
    from ..scoring import SCORER_NAMES
    from ..sources.published import FORMATS
    from ..sources.recordings import RECORDINGS

    return {
        "benchmarks": names(),
        "tasks": all_tasks(),
        "scorers": list(SCORER_NAMES),
        "backends": list(BACKENDS),
        "method_kinds": list(KINDS),
        "originals": list(ORIGINALS),
        "choice_variants": list(VARIANTS),
        "import_formats": list(FORMATS),
        "recordings": list(RECORDINGS),
        "toolsets": list(TOOLSETS),
    }


@cache
def load_schema(path: str = str(SCHEMA)) -> dict:
    """The schema, each ``x-enum`` given the code's list."""
    lists = generated_enums()

    def resolved(node):
        if isinstance(node, dict):
            node = {k: resolved(v) for k, v in node.items()}
            if "x-enum" in node:
                node["enum"] = list(lists[node["x-enum"]])
            return node
        if isinstance(node, list):
            return [resolved(v) for v in node]
        return node

    # libyaml's loader where PyYAML has it: every Snakemake start reads this 48 KB file.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return resolved(yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader))


@cache
def _validator(path: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema(path))


def check_config(config: dict, files=(), schema: Path = SCHEMA) -> None:
    """ConfigError with a short message for the first thing wrong in ``config``, which
    was read from ``files`` (later ones override earlier ones, as Snakemake merges
    them): the message names the file that holds the wrong key; nothing when valid."""
    errors = sorted(_validator(str(schema)).iter_errors(config), key=_order)
    if not errors:
        return
    first = _deepest(errors[0])
    others = {_path(e.absolute_path) for e in errors} - {_path(errors[0].absolute_path)}
    more = f" (and {len(others)} more)" if others else ""
    source = _file_holding(list(first.absolute_path) + _unknown_keys(first)[:1], files)
    raise ConfigError(f"{source}: {describe(first)}{more}")


_KEY_PATH = re.compile(r"^([A-Za-z_][\w-]*(?:\[\d+\]|\.[\w-]+)*): ")


def naming_the_file(message: str, files) -> str:
    """A config error found after the schema's check (a name that names nothing),
    which starts with its key's path, prefixed with the file that sets that key."""
    found = _KEY_PATH.match(message)
    if not found or not files:
        return message
    path = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", found.group(1))]
    return f"{_file_holding(path, files)}: {message}"


def _file_holding(path: list, files) -> str:
    """The last of ``files`` that sets ``path`` (or the part of it that exists)."""
    files = [str(f) for f in files]
    for depth in range(len(path), -1, -1):
        for name in reversed(files):
            try:
                node = yaml.safe_load(Path(name).read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError):
                continue
            for part in path[:depth]:
                try:
                    node = node[part]
                except (KeyError, IndexError, TypeError):
                    break
            else:
                if depth or len(files) == 1:
                    return name
    return ", ".join(files) or "config"


def _unknown_keys(error) -> list[str]:
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return []
    known = error.schema.get("properties", {})
    return [k for k in error.instance if k not in known and not _by_pattern(k, error.schema)]


def _order(error) -> tuple:
    # By key path (stable), and at one key what a person fixes first: its type.
    first = ("type", "additionalProperties", "required", "enum")
    rank = first.index(error.validator) if error.validator in first else len(first)
    return (_path(error.absolute_path), rank)


def describe(error: jsonschema.ValidationError) -> str:
    """One line: where in the config, and what is wrong there."""
    error = _deepest(error)
    where = _path(error.absolute_path) or "(top level)"
    kind, value, schema = error.validator, error.instance, error.schema
    if kind == "additionalProperties" and isinstance(value, dict):
        key = (_unknown_keys(error) or ["?"])[0]
        known = list(schema.get("properties", {}))
        return f"{_join(error.absolute_path, key)}: unknown key{_suggest(key, known)}"
    if kind == "enum" and _is_key_name(error):
        return f"{where}: unknown name {value!r}{_suggest(value, schema['enum'])}"
    if kind == "enum":
        names = [str(o) for o in schema["enum"]]
        options = ", ".join(names[:SHOWN])  # (one line: past SHOWN, how many more)
        options += f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
        return f"{where}: {value!r} is not one of {options}{_suggest(value, schema['enum'])}"
    if kind == "type":
        wanted = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        expected = " or ".join(_TYPES.get(t, t) for t in wanted)
        return f"{where}: expected {expected}, got {_shown(value)}"
    if kind == "required":
        missing = [k for k in error.validator_value if k not in (value or {})]
        return f"{where}: missing key {missing[0]!r}" if missing else f"{where}: {error.message}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = {"minimum": "at least", "maximum": "at most"}.get(kind)
        bound = bound or ("above" if "Min" in kind else "below")
        key = error.absolute_path[-1] if error.absolute_path else ""
        why = LIMITS.get((key, kind))
        return f"{where}: {value!r} is out of range; it must be {bound} {error.validator_value}" + (
            f" ({why})" if why else ""
        )
    if kind in ("minItems", "minProperties"):
        return f"{where}: must not be empty"
    if kind == "pattern" and _is_key_name(error):
        return f"{where}: the name {value!r} must match {error.validator_value}"
    if kind == "pattern":
        return f"{where}: {value!r} must match {error.validator_value}"
    return f"{where}: {error.message}"


def _deepest(error):
    """Where a oneOf/anyOf failed, the branch error that went deepest (the likely one)."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
    return error


def _is_key_name(error) -> bool:
    """Whether ``error`` is about a mapping's key (a propertyNames check), not a value."""
    return "propertyNames" in error.absolute_schema_path


def _by_pattern(key: str, schema: dict) -> bool:
    return any(re.search(p, key) for p in schema.get("patternProperties", {}))


def _suggest(word, known) -> str:
    guess = closest(word, known)
    return f"; did you mean {guess!r}?" if guess else ""


def _path(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _join(parts, key: str) -> str:
    base = _path(parts)
    return f"{base}.{key}" if base else key


def _shown(value) -> str:
    kind = {dict: "a mapping", list: "a list", bool: "a boolean", type(None): "null"}
    if type(value) in kind:
        return kind[type(value)]
    return f"{value!r} ({type(value).__name__})"
