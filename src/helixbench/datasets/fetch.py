"""Download pinned upstream files by URL (or from a local mirror), verified by sha256.

A mirror is a directory laid out as ``<host>/<url path>``; with one configured,
every URL is read from there and nothing goes over the network. Files are written
atomically (temporary file, checksum, rename), so an interrupted fetch never
leaves a half-written file where a verified one is expected.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from ..digests import CHUNK, sha256_file
from ..locks import exclusive
from .upstream import UNKNOWN, url_relpath

MIRROR_ENV = "HELIXBENCH_MIRROR"


class FetchError(RuntimeError):
    """A file could not be fetched or failed its checksum; the message names the URL."""


def resolve_mirror(configured: str | None) -> Path | None:
    """The mirror directory: ``$HELIXBENCH_MIRROR`` if set, else the config value, else None.

    A relative ``$HELIXBENCH_MIRROR`` is taken from where it was given (see
    :func:`pin_mirror_env`), a relative config value from the working directory. A
    mirror that is not a directory is an error: silently treating every file as
    missing would hide it.
    """
    from_env = os.environ.get(MIRROR_ENV)
    value = from_env or configured
    if not value:
        return None
    path = Path(value).expanduser()
    if from_env and not path.is_absolute():
        path = _shell_dir() / path
    path = path.resolve()
    if not path.is_dir():
        origin = f"${MIRROR_ENV}" if from_env else "config key 'mirror'"
        raise FetchError(f"mirror {value!r} ({origin}) is not a directory (resolved to {path})")
    return path


def _shell_dir() -> Path:
    """The directory the command was typed in: the shell's ``$PWD`` (which Snakemake's
    ``--directory`` and pytest's temporary directories leave as it was), else ours."""
    shell = os.environ.get("PWD")
    return Path(shell) if shell and Path(shell).is_absolute() and Path(shell).is_dir() else Path()


def pin_mirror_env() -> None:
    """Make a relative ``$HELIXBENCH_MIRROR`` absolute in this process's environment,
    once, where it was given: every job and test process started from here then finds
    the same directory, whatever its own working directory."""
    value = os.environ.get(MIRROR_ENV)
    if value and not Path(value).expanduser().is_absolute():
        os.environ[MIRROR_ENV] = str((_shell_dir() / Path(value).expanduser()).resolve())


def mirror_path(url: str, mirror: Path) -> Path:
    """Where ``url`` lies inside ``mirror``."""
    return Path(mirror, url_relpath(url))


def available(url: str, mirror: Path | None) -> bool:
    """Whether ``url`` can be fetched: with a mirror, whether the mirror holds it."""
    return mirror is None or mirror_path(url, mirror).is_file()


def fetch(
    url: str,
    dest: Path,
    sha256: str,
    mirror: Path | None = None,
    lock_file: Path | None = None,
    timeout: float = 60.0,
    attempts: int = 3,
) -> str:
    """Fetch ``url`` to ``dest`` and return its sha256.

    ``sha256`` is the pinned digest, or ``unknown``: then the digest is recorded in
    ``lock_file`` on first download and verified against it on every later one.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            if mirror is not None:
                _copy_from_mirror(url, mirror, out)
            else:
                _download(url, out, timeout, attempts)
        digest = sha256_file(tmp)
        expected = sha256 if sha256 != UNKNOWN else _locked_sha256(url, digest, lock_file)
        if digest != expected:
            raise FetchError(
                f"checksum mismatch for {url}: expected sha256 {expected}, got {digest}"
                + (f" (read from mirror {mirror})" if mirror is not None else "")
            )
        os.replace(tmp, dest)
        return digest
    finally:
        tmp.unlink(missing_ok=True)


def _copy_from_mirror(url: str, mirror: Path, out) -> None:
    source = mirror_path(url, mirror)
    if not source.is_file():
        raise FetchError(f"{url} is not in the mirror {mirror} (looked for {source})")
    with open(source, "rb") as fh:
        shutil.copyfileobj(fh, out, CHUNK)


def _download(url: str, out, timeout: float, attempts: int) -> None:
    import requests  # imported here: mirror-only runs never need it

    last: Exception | None = None
    for attempt in range(attempts):
        if attempt:
            time.sleep(min(2**attempt, 30))
        out.seek(0)
        out.truncate()
        try:
            with requests.get(url, stream=True, timeout=timeout) as response:
                if response.status_code == 404:
                    raise FetchError(f"{url} does not exist (HTTP 404)")
                if response.status_code in (429, 500, 502, 503, 504):
                    last = FetchError(f"{url}: HTTP {response.status_code}")
                    continue
                if response.status_code != 200:
                    raise FetchError(f"{url}: HTTP {response.status_code}")
                for block in response.iter_content(CHUNK):
                    out.write(block)
                out.flush()
                return
        except requests.RequestException as exc:
            last = exc
    raise FetchError(
        f"could not download {url} after {attempts} attempts: {last} "
        f"(offline? set {MIRROR_ENV} to a local mirror)"
    )


def _locked_sha256(url: str, digest: str, lock_file: Path | None) -> str:
    """The digest recorded for ``url`` in the lock file, recording ``digest`` if none is."""
    if lock_file is None:
        raise FetchError(f"{url} has no pinned sha256 and no lock file was given to record it")
    with exclusive(Path(lock_file)) as fh:
        fh.seek(0)
        for line in fh:
            locked_url, _, locked_digest = line.rstrip("\n").partition("\t")
            if locked_url == url:
                return locked_digest
        fh.write(f"{url}\t{digest}\n")
        fh.flush()
        os.fsync(fh.fileno())
    return digest


def fetch_local(output: Path, mirror: Path | None, lock_file: Path, url=None, sha256=None) -> str:
    """Fetch the upstream file whose local copy is ``output`` (under
    ``resources/upstream/``): pinned by the manifest, or by the config (``url`` and
    ``sha256`` of an imported source's file). Returns its sha256."""
    from .. import paths
    from .upstream import manifest

    rel = Path(output).relative_to(paths.UPSTREAM_DIR).as_posix()
    entry = manifest().get(rel)
    if entry is not None:
        url, sha256 = entry.url, entry.sha256
    elif url and sha256:
        if url_relpath(url) != rel:
            raise FetchError(f"{url} does not map onto {output}")
    else:
        raise FetchError(f"{output} is not a pinned upstream file")
    store = Path(paths.UPSTREAM_STORE)
    if sha256 != UNKNOWN and restore(store / sha256, Path(output), sha256):
        return sha256
    digest = fetch(url, Path(output), sha256, mirror, lock_file)
    keep(Path(output), store / digest)
    return digest


def verified(path: Path, sha256: str) -> bool:
    """Whether ``path`` is a file with the pinned ``sha256``."""
    return path.is_file() and sha256_file(path) == sha256


def restore(kept: Path, output: Path, sha256: str) -> bool:
    """``output`` from the store's ``kept`` copy where it holds ``sha256``; False where
    the store has no such file (a damaged copy is dropped)."""
    if not kept.is_file():
        return False
    if not verified(kept, sha256):
        kept.unlink(missing_ok=True)
        return False
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.restore")
    tmp.unlink(missing_ok=True)
    try:
        os.link(kept, tmp)
    except OSError:  # another file system
        shutil.copyfile(kept, tmp)
    os.replace(tmp, output)
    return True


def keep(output: Path, kept: Path) -> None:
    """A verified file into the store (a hard link where it can be one)."""
    if kept.is_file():
        return
    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(f".{kept.name}.{os.getpid()}")
    try:
        os.link(output, tmp)
    except OSError:
        shutil.copyfile(output, tmp)
    os.replace(tmp, kept)
