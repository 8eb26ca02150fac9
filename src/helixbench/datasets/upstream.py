"""Pinned upstream files: which exist at the pinned commits, their URLs and checksums.

The manifest (``data/upstream-manifest.tsv``) lists every file of the upstream
repositories at the commits we pin, with its size and sha256 (``unknown`` for the
few files whose checksum is taken on first download and kept in a lock file).
Local copies live under ``resources/upstream/`` laid out like a mirror:
``<host>/<url path>``, so the same tree can serve as a mirror elsewhere. Every
reader takes a local copy through :func:`verified_bytes`, which checks its sha256
again: a file changed after it was downloaded is an error that names it, never
silently part of a result.
"""

from __future__ import annotations

import ast
import csv
import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote, urlsplit

from ..digests import sha256_bytes
from ..errors import DataError

RAW_HOST = "raw.githubusercontent.com"
UNKNOWN = "unknown"

GENEGPT_REPO = "ncbi/GeneGPT"
GENEGPT_COMMIT = "0a2a327a507be49e660597769cc53431abd6613a"
GENEAGENT_REPO = "ncbi-nlp/GeneAgent"
GENEAGENT_COMMIT = "88fd1adb40dce9545bde5b904ef3a628c09d747c"
# GeneTuring's own full benchmark (2025) and BioRAGent's evaluation tasks: neither
# repository states a licence, so they are fetched at these commits, never copied.
GENETURING2025_REPO = "Winnie09/GeneTuring"
GENETURING2025_COMMIT = "4bc94391321991125bddfe0a726f35b87495fd6f"
BIORAGENT_REPO = "23AIBox/BioRAGent"
BIORAGENT_COMMIT = "3a4c66f91b50c6d1451c37e322e596be76b6ad85"
# Hu et al. (Nature Methods 2025), the GeneAgent paper's baseline: GO files and
# their published runs (MIT).
HU_REPO = "idekerlab/llm_evaluation_for_gene_set_interpretation"
HU_COMMIT = "fa7c98705c68a14e5bb236c511f682fed1e58f99"


@dataclass(frozen=True)
class UpstreamFile:
    """One file of an upstream repository at a pinned commit."""

    repo: str
    commit: str
    path: str
    size: int | None
    sha256: str  # hex digest, or UNKNOWN

    @property
    def url(self) -> str:
        return f"https://{RAW_HOST}/{self.repo}/{self.commit}/{quote(self.path)}"

    @property
    def relpath(self) -> str:
        """Path below a mirror (or ``resources/upstream``): ``<host>/<unquoted url path>``."""
        return url_relpath(self.url)


def url_relpath(url: str) -> str:
    """Map a URL onto the mirror layout ``<host>/<path>``, percent-decoded."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = unquote(parts.path).lstrip("/")
    rel = PurePosixPath(parts.netloc, path)
    if ".." in rel.parts or not path:
        raise ValueError(f"URL path cannot be mapped onto a mirror: {url!r}")
    return str(rel)


def relpath_url(relpath: str) -> str:
    """Inverse of :func:`url_relpath` (https only)."""
    host, _, path = relpath.partition("/")
    return f"https://{host}/{quote(path)}"


@cache
def manifest() -> dict[str, UpstreamFile]:
    """All pinned upstream files, keyed by mirror relpath."""
    files = {}
    text = resources.files("helixbench").joinpath("data/upstream-manifest.tsv").read_text()
    for row in csv.DictReader(text.splitlines(), delimiter="\t"):
        size = None if row["bytes"] == UNKNOWN else int(row["bytes"])
        entry = UpstreamFile(row["repo"], row["commit"], row["path"], size, row["sha256"])
        files[entry.relpath] = entry
    return files


def lookup(repo: str, path: str, commit: str) -> UpstreamFile:
    """The pinned file ``path`` of ``repo`` at ``commit``; KeyError names it if unpinned."""
    rel = UpstreamFile(repo, commit, path, None, UNKNOWN).relpath
    try:
        return manifest()[rel]
    except KeyError:
        raise KeyError(f"{repo}@{commit}:{path} is not in the pinned upstream manifest") from None


def listdir(repo: str, commit: str, prefix: str) -> list[UpstreamFile]:
    """Pinned files of ``repo`` whose path starts with ``prefix``, in path order."""
    return sorted(
        (
            f
            for f in manifest().values()
            if f.repo == repo and f.commit == commit and f.path.startswith(prefix)
        ),
        key=lambda f: f.path,
    )


# Where local copies live: ``<workdir>/resources/upstream/<host>/<url path>``, and the
# checksums first downloads recorded for files pinned ``unknown``.
LOCAL_DIR = ("resources", "upstream")
LOCK_NAME = "upstream.lock.tsv"


def pinned_sha256(path: str | Path) -> str | None:
    """The sha256 a local copy of an upstream file must have: the manifest's, else the
    one its first download recorded in the lock file; None where the path is not a
    local copy or nothing is pinned."""
    parts = Path(os.path.abspath(path)).parts
    for i in range(len(parts) - len(LOCAL_DIR), -1, -1):
        if parts[i : i + len(LOCAL_DIR)] == LOCAL_DIR:
            relpath = "/".join(parts[i + len(LOCAL_DIR) :])
            lock = Path(*parts[: i + 1], LOCK_NAME)
            break
    else:
        return None
    entry = manifest().get(relpath)
    if entry is not None and entry.sha256 != UNKNOWN:
        return entry.sha256
    if lock.is_file():
        url = relpath_url(relpath)
        for line in lock.read_text().splitlines():
            locked_url, _, digest = line.partition("\t")
            if locked_url == url:
                return digest
    return None


def verified_bytes(path: str | Path, expected: str | None = None) -> bytes:
    """The bytes of ``path``; where it is a local copy of an upstream file (or
    ``expected`` is given), checked against its pinned sha256 once more."""
    data = Path(path).read_bytes()
    expected = expected if expected not in (None, UNKNOWN) else pinned_sha256(path)
    if expected is not None and expected != UNKNOWN:
        digest = sha256_bytes(data)
        if digest != expected:
            raise DataError(
                f"{path} was changed after it was downloaded (sha256 {digest}, pinned "
                f"{expected}); delete it and run the workflow again to fetch it anew"
            )
    return data


def python_constants(source: str) -> dict:
    """The string constants a Python module assigns at its top level, read from its
    syntax tree (an upstream file's prompts: read as data, never run)."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    found[target.id] = node.value.value
    return found
