"""Reading JSON and JSON-lines files with errors that name the file (and line).

Upstream files (local copies under ``resources/upstream/``) are checked against
their pinned sha256 as they are read (:func:`helixbench.datasets.upstream.verified_bytes`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataError
from .upstream import verified_bytes


def read_text(path: str | Path, expected_sha256: str | None = None) -> str:
    """The text of ``path`` (UTF-8); an upstream file is checked against its pin."""
    data = verified_bytes(path, expected_sha256)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_json(path: str | Path, expected_sha256: str | None = None):
    """The JSON value in ``path``; DataError naming the file, line and column if malformed."""
    text = read_text(path, expected_sha256)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None


def read_jsonl(path: str | Path) -> list:
    """One JSON value per non-empty line of ``path`` (an upstream file checked against
    its pin); DataError naming the file and line."""
    values = []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{path}, line {number}: not valid JSON ({exc.msg}, column {exc.colno})"
            ) from None
    return values
