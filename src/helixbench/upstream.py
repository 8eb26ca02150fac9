"""Pinned upstream files: which exist at the pinned commits, their URLs and checksums.

The manifest (``data/upstream-manifest.tsv``) lists every file of the upstream
repositories at the commits we pin, with its size and sha256 (``unknown`` for the
few files whose checksum is taken on first download and kept in a lock file).
Local copies live under ``resources/upstream/`` laid out like a mirror:
``<host>/<url path>``, so the same tree can serve as a mirror elsewhere.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urlsplit

RAW_HOST = "raw.githubusercontent.com"
UNKNOWN = "unknown"

GENEGPT_REPO = "ncbi/GeneGPT"
GENEGPT_COMMIT = "0a2a327a507be49e660597769cc53431abd6613a"
GENEAGENT_REPO = "ncbi-nlp/GeneAgent"
GENEAGENT_COMMIT = "88fd1adb40dce9545bde5b904ef3a628c09d747c"


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
