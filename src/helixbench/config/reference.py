"""The config reference, written from the schema's own descriptions.

``workflow/schemas/config.schema.yaml`` is the one place a config key is described:
the workflow validates against it and the docs' reference page
(``docs/reference/config.md``, made by the MkDocs hook in ``docs/hooks.py``) is this
module's rendering of it, so the two cannot drift.
"""

from __future__ import annotations

import json
from pathlib import Path

from .schema import SCHEMA, load_schema


def _resolve(node: dict, root: dict) -> dict:
    """``node`` with a ``$ref`` into ``$defs`` replaced by what it names (its own
    description kept)."""
    ref = node.get("$ref")
    if not ref:
        return node
    target = root
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return {**_resolve(target, root), **{k: v for k, v in node.items() if k != "$ref"}}


def _type(node: dict) -> str:
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if "oneOf" in node or "anyOf" in node:
        options = node.get("oneOf") or node.get("anyOf")
        return " or ".join(_type(o) for o in options if isinstance(o, dict) and _type(o))
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(node.get("items"), dict):
        inner = _type(node["items"])
        return f"list of {inner}" if inner else "list"
    return kind or ""


def _bounds(node: dict) -> str:
    said = []
    for key, text in (
        ("minimum", ">= {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "<= {}"),
        ("pattern", "matches `{}`"),
        ("minItems", "at least {} item(s)"),
    ):
        if key in node:
            said.append(text.format(node[key]))
    return "; ".join(said)


def _cell(text: str) -> str:
    """One line of a table cell: pipes escaped, and ``<`` and ``>`` outside code spans
    (where Markdown would read a tag)."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _rows(node: dict, root: dict, path: str) -> list[tuple[str, str, str, str]]:
    """(key path, type, default, description) for ``node`` and every key below it."""
    node = _resolve(node, root)
    rows = []
    # A map's value or a list's item says nothing its parent's row does not.
    said_by_parent = path.endswith(("<name>", "[]")) and not node.get("description")
    if path and not said_by_parent:
        default = f"`{json.dumps(node['default'])}`" if "default" in node else ""
        kind = _type(node)
        bounds = _bounds(node)
        rows.append(
            (
                f"`{path}`",
                _cell(f"{kind} ({bounds})" if bounds else kind),
                default,
                _cell(node.get("description", "")),
            )
        )
    for key, child in node.get("properties", {}).items():
        rows += _rows(child, root, f"{path}.{key}" if path else key)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        rows += _rows(extra, root, f"{path}.<name>")
    items = node.get("items")
    if isinstance(items, dict) and "properties" in _resolve(items, root):
        rows += _rows(items, root, f"{path}[]")
    return rows


def reference_markdown(schema_path: Path = SCHEMA) -> str:
    """The config reference as Markdown: one section per top-level key, a table row
    per key below it, in the schema's order."""
    root = load_schema(str(schema_path))
    lines = [
        "# Config reference",
        "",
        "Every key the workflow accepts, written from the descriptions in",
        "`workflow/schemas/config.schema.yaml` (the schema the workflow validates",
        "against). `<name>` stands for a name you choose; `[]` for each item of a list.",
        "",
        _cell(root.get("description", "")),
        "",
    ]
    for key, node in root["properties"].items():
        lines += [f"## `{key}`", "", "| key | type | default | description |"]
        lines.append("| --- | --- | --- | --- |")
        lines += ["| " + " | ".join(row) + " |" for row in _rows(node, root, key)]
        lines.append("")
    return "\n".join(lines)


def undescribed_keys(schema_path: Path = SCHEMA) -> list[str]:
    """Keys of the schema that have no description (the reference would say nothing)."""
    root = load_schema(str(schema_path))
    return [
        path.strip("`")
        for key, node in root["properties"].items()
        for path, _, _, text in _rows(node, root, key)
        if not text
    ]
