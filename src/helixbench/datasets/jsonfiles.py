"""Reading JSON and JSON-lines files with errors that name the file (and line).

Upstream files (local copies under ``resources/upstream/``) are checked against
their pinned sha256 as they are read (:func:`helixbench.datasets.upstream.verified_bytes`).
A file compressed with zstd or gzip (a finished shard's records, a run's score lines:
``.jsonl.zst``) is read as its text, by its first bytes, whatever its name; a file named
``.zst`` is written compressed (:func:`stored_bytes`).

JSON lines are parsed and written with orjson (a sweep's score job reads and writes
millions: a fifth of the standard library's time). A line orjson declines to read (a
NaN, an integer past 64 bits, a lone surrogate) is read by the standard library, so
what is read is what ``json`` would read; a value orjson cannot write (an integer past
64 bits, a key that is not a string) is written by the standard library. orjson
writes a NaN or an infinity as null (JSON has neither).
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from ..errors import DataError
from .upstream import verified_bytes

ZSTD_MAGIC, GZIP_MAGIC = b"\x28\xb5\x2f\xfd", b"\x1f\x8b"
# Files named so are written compressed with zstd. A shard's records at level 10: a
# tenth of their JSON lines' size, in a few hundredths of a second a thousand questions.
# Lines of one shape (a run's score lines: their keys repeated) at level 3: a seventy-
# fifth of their size (smaller than at 10), 2 ms for ten thousand lines, not 30.
COMPRESSED = ".zst"
ZSTD_LEVEL, ZSTD_FAST = 10, 3


def stored_bytes(path: str | Path, data: bytes, level: int = ZSTD_LEVEL) -> bytes:
    """``data`` as the file ``path`` holds it: compressed where it is named ``.zst``."""
    if not Path(path).name.endswith(COMPRESSED):
        return data
    import zstandard

    return zstandard.ZstdCompressor(level=level).compress(data)


def decompressed(data: bytes, path: str | Path = "") -> bytes:
    """``data`` as stored, or inflated where it is a zstd or gzip stream; DataError
    naming the file where the stream is cut short or corrupt."""
    if data.startswith(ZSTD_MAGIC):
        import zstandard

        inflating = zstandard.ZstdDecompressor().decompressobj()
        try:
            text = inflating.decompress(data)
        except zstandard.ZstdError as exc:
            raise DataError(f"{path}: a corrupt zstd stream ({exc})") from None
        if not inflating.eof:
            raise DataError(f"{path}: a zstd stream cut short")
        return text
    if data.startswith(GZIP_MAGIC):
        import gzip
        import zlib

        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(f"{path}: a gzip stream cut short or corrupt ({exc})") from None
    return data


def read_text(path: str | Path, expected_sha256: str | None = None) -> str:
    """The text of ``path`` (UTF-8, inflated where compressed); an upstream file is
    checked against its pin (its bytes as stored)."""
    data = decompressed(verified_bytes(path, expected_sha256), path)
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
    # (lines end at "\n" alone: a JSON string may hold U+2028 or U+0085 unescaped,
    # which str.splitlines would break the line at)
    for number, line in enumerate(read_text(path).split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            values.append(parse_json(line))
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{path}, line {number}: not valid JSON ({exc.msg}, column {exc.colno})"
            ) from None
    return values


def parse_json(text: str | bytes):
    """The JSON value of ``text`` (module docstring: orjson, else ``json``, whose
    JSONDecodeError says what is wrong)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def compact_json(value) -> bytes:
    """``value`` as compact JSON in UTF-8 (module docstring: orjson, else ``json``)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def write_jsonl(path: str | Path, values) -> None:
    """``values`` one a line to ``path`` (compressed where it is named ``.zst``: lines
    of one shape, fast), whole or not at all (a temporary file moved in place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    lines = b"".join(compact_json(v) + b"\n" for v in values)
    tmp.write_bytes(stored_bytes(path, lines, ZSTD_FAST))
    tmp.replace(path)
