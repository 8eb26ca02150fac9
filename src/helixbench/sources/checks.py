"""Imported files checked before they count: each format's shape, read with bounds.

A user's own LABBench2 reports and BixBench CSVs (and every pinned file as it is
read) pass through here: a file of the wrong shape, a truncated one, one with a
missing column, a cell or a nesting past the bounds, is refused with one line that
names the file, where in it, and what is wrong (:class:`DataError`), at plan time
(``helixbench plan --check``, and the workflow's start) and again where a job reads
it. The shapes are JSON Schemas (``jsonschema``, which Snakemake's config checks
use too), so that what a file must hold is written once, as data.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ..errors import DataError

MAX_FILE_BYTES = 512 << 20  # an imported file larger than this is refused unread
MAX_FIELD_CHARS = 16 << 20  # one CSV cell (csv's own default is 131,072)
MAX_DEPTH = 64  # JSON nesting (LABBench2's reports nest 5 deep)

# A LABBench2 report (its harness's ``report.json``): cases with an id each, and the
# ids that failed; a case's score as its HybridEvaluator gave it.
_CASE = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "type": {"type": ["string", "null"]},
        "scores": {"type": ["object", "null"]},
    },
}
LABBENCH2_REPORT = {
    "type": "object",
    "anyOf": [{"required": ["cases"]}, {"required": ["failures"]}],
    "properties": {
        "model": {"type": ["string", "null"]},
        "cases": {"type": "array", "items": _CASE},
        "failures": {"type": "array", "items": _CASE},
        "usage": {"type": ["object", "null"]},
    },
}
# A BixBench graded CSV (grade_outputs.py's): the columns every reader takes, and the
# question's id under one of its two names (v1's short_qid, v1.5's uuid).
BIXBENCH_COLUMNS = ("question", "target", "grade")
BIXBENCH_IDS = ("short_qid", "uuid")


def _bounded_text(path: Path, data: bytes | None = None) -> str:
    if data is None:
        size = path.stat().st_size if path.is_file() else None
        if size is None:
            raise DataError(f"{path}: no such file")
        if size > MAX_FILE_BYTES:
            raise DataError(f"{path}: {size:,} bytes, over the {MAX_FILE_BYTES:,} an import may be")
        data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _depth_over(value, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def bounded_json(path: Path, data: bytes | None = None):
    """The JSON value of ``path`` (or of its bytes ``data``), within the bounds."""
    text = _bounded_text(path, data)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise DataError(
            f"{path}: not valid JSON, truncated or malformed ({exc.msg} at {where})"
        ) from None
    except RecursionError:
        raise DataError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels") from None
    if _depth_over(value, MAX_DEPTH):
        raise DataError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _where(error) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "the top level"


def labbench2_report(path: Path, data: bytes | None = None) -> dict:
    """A LABBench2 report, read and checked against its shape (:data:`LABBENCH2_REPORT`)."""
    import jsonschema  # (here: a job that reads no LABBench2 report never loads it)

    value = bounded_json(path, data)
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(LABBENCH2_REPORT).iter_errors(value)
    )
    if error is not None:
        if error.validator == "anyOf" and isinstance(value, dict):  # (its keys, not itself)
            keys = ", ".join(list(map(str, value))[:8]) or "none"
            what = f"no 'cases' or 'failures' list; its keys: {keys}"
        else:
            what = error.message if len(error.message) <= 160 else error.message[:159] + "…"
        raise DataError(f"{path}: not a LABBench2 report (at {_where(error)}: {what})")
    return value


def bixbench_rows(path: Path, data: bytes | None = None) -> list[dict]:
    """A BixBench graded CSV's rows, checked: its columns, each cell within
    :data:`MAX_FIELD_CHARS`, a grade that is a number."""
    text = _bounded_text(path, data)
    previous = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD_CHARS)
    try:
        reader = csv.DictReader(io.StringIO(text))
        columns = reader.fieldnames or []
        missing = [c for c in BIXBENCH_COLUMNS if c not in columns]
        if not any(c in columns for c in BIXBENCH_IDS):
            missing.append(" or ".join(BIXBENCH_IDS))
        if missing:
            shown = ", ".join(columns[:8]) + (", …" if len(columns) > 8 else "")
            raise DataError(
                f"{path}: not a BixBench graded CSV (no column {', '.join(missing)}; "
                f"it has: {shown or 'none'})"
            )
        rows = []
        for row in reader:
            if None in row:  # more cells than columns
                raise DataError(f"{path}, line {reader.line_num}: more cells than columns")
            try:
                float(row["grade"])
            except (TypeError, ValueError):
                raise DataError(
                    f"{path}, line {reader.line_num}: grade {str(row['grade'])[:40]!r} "
                    "is not a number"
                ) from None
            rows.append(row)
        return rows
    except csv.Error as exc:
        raise DataError(
            f"{path}, line {reader.line_num}: {exc} (a cell may hold {MAX_FIELD_CHARS:,} "
            "characters)"
        ) from None
    finally:
        csv.field_size_limit(previous)


# The check of each format a user's own files come in, by the source's format name.
CHECKS = {"labbench2": labbench2_report, "bixbench": bixbench_rows}


def check_file(format_name: str, path: Path) -> None:
    """Refuse a user's own file of ``format_name`` that is not of its shape."""
    check = CHECKS.get(format_name)
    if check is not None:
        check(Path(path))
