"""Fetching pinned upstream files: mirror mapping, checksums, lock file, HTTP."""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from pathlib import Path

import pytest

from helixbench.datasets.fetch import (
    FetchError,
    available,
    fetch,
    mirror_path,
    pin_mirror_env,
    resolve_mirror,
)
from helixbench.datasets.upstream import (
    GENEGPT_COMMIT,
    GENEGPT_REPO,
    lookup,
    manifest,
    relpath_url,
    url_relpath,
)

DATA = "data/geneturing.json"


def test_url_maps_onto_mirror_layout():
    base = f"raw.githubusercontent.com/{GENEGPT_REPO}/{GENEGPT_COMMIT}/geneturing_results/001001"
    url = f"https://{base}/Gene%20alias.json"
    rel = f"{base}/Gene alias.json"
    assert url_relpath(url) == rel
    assert relpath_url(rel) == url
    assert mirror_path(url, Path("/m")) == Path("/m", rel)


@pytest.mark.parametrize(
    "url",
    ["ftp://host/file", "https://host/", "https://host/a/../../etc/passwd", "file:///etc/passwd"],
)
def test_unmappable_urls_are_refused(url):
    with pytest.raises(ValueError):
        url_relpath(url)


def test_manifest_pins_every_recorded_genegpt_run():
    masks = {
        f.path.split("/")[1]
        for f in manifest().values()
        if f.repo == GENEGPT_REPO and f.path.startswith("geneturing_results/")
    }
    assert len(masks) == 14 and {"001001", "111111"} <= masks
    entry = lookup(GENEGPT_REPO, DATA, GENEGPT_COMMIT)
    assert entry.size == 45418 and len(entry.sha256) == 64


def test_env_overrides_configured_mirror(monkeypatch, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.delenv("HELIXBENCH_MIRROR", raising=False)
    assert resolve_mirror(None) is None
    assert resolve_mirror(str(tmp_path / "a")) == tmp_path / "a"
    monkeypatch.setenv("HELIXBENCH_MIRROR", str(tmp_path / "b"))
    assert resolve_mirror(str(tmp_path / "a")) == tmp_path / "b"
    monkeypatch.setenv("HELIXBENCH_MIRROR", str(tmp_path / "nope"))
    with pytest.raises(FetchError, match=r"nope' \(\$HELIXBENCH_MIRROR\) is not a directory"):
        resolve_mirror(None)


def test_a_relative_mirror_is_taken_from_where_it_was_given(monkeypatch, tmp_path):
    """`HELIXBENCH_MIRROR=../shared/mirror snakemake --directory .test`: the path is
    the shell's, not the working directory Snakemake or a test moved to; pinned once,
    every process started afterwards sees the absolute path."""
    (tmp_path / "shared" / "mirror").mkdir(parents=True)
    (tmp_path / "clone" / ".test").mkdir(parents=True)
    monkeypatch.setenv("PWD", str(tmp_path / "clone"))
    monkeypatch.chdir(tmp_path / "clone" / ".test")
    monkeypatch.setenv("HELIXBENCH_MIRROR", "../shared/mirror")
    assert resolve_mirror(None) == tmp_path / "shared" / "mirror"
    pin_mirror_env()
    assert os.environ["HELIXBENCH_MIRROR"] == str(tmp_path / "shared" / "mirror")
    monkeypatch.chdir(tmp_path)
    assert resolve_mirror(None) == tmp_path / "shared" / "mirror"


def test_fetch_from_mirror_verifies_and_writes(mirror, tmp_path):
    entry = lookup(GENEGPT_REPO, DATA, GENEGPT_COMMIT)
    dest = tmp_path / "out" / "geneturing.json"
    assert fetch(entry.url, dest, entry.sha256, mirror=mirror) == entry.sha256
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == entry.sha256
    assert list(dest.parent.iterdir()) == [dest]  # no temporary file left behind


def test_missing_mirror_file_names_the_url(tmp_path):
    entry = lookup(GENEGPT_REPO, "geneturing_results/000001/Gene alias.json", GENEGPT_COMMIT)
    assert not available(entry.url, tmp_path)
    with pytest.raises(FetchError, match="Gene%20alias.json is not in the mirror"):
        fetch(entry.url, tmp_path / "x.json", entry.sha256, mirror=tmp_path)


def _fake_mirror(tmp_path: Path, url: str, content: bytes) -> Path:
    root = tmp_path / "mirror"
    path = mirror_path(url, root)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    return root


def test_checksum_mismatch_names_the_url_and_writes_nothing(tmp_path):
    entry = lookup(GENEGPT_REPO, DATA, GENEGPT_COMMIT)
    root = _fake_mirror(tmp_path, entry.url, b'{"tampered": true}')
    dest = tmp_path / "out" / "geneturing.json"
    with pytest.raises(FetchError) as err:
        fetch(entry.url, dest, entry.sha256, mirror=root)
    assert entry.url in str(err.value) and "checksum mismatch" in str(err.value)
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_unpinned_checksum_is_locked_on_first_fetch(tmp_path):
    url = "https://raw.githubusercontent.com/x/y/abc/big.json"
    lock = tmp_path / "upstream.lock.tsv"
    root = _fake_mirror(tmp_path, url, b"first")
    fetch(url, tmp_path / "a", "unknown", mirror=root, lock_file=lock)
    assert lock.read_text() == f"{url}\t{hashlib.sha256(b'first').hexdigest()}\n"
    fetch(url, tmp_path / "b", "unknown", mirror=root, lock_file=lock)  # same bytes: fine
    mirror_path(url, root).write_bytes(b"changed upstream")
    with pytest.raises(FetchError, match="checksum mismatch for https://raw"):
        fetch(url, tmp_path / "c", "unknown", mirror=root, lock_file=lock)


class _Server:
    """A loopback HTTP server serving ``files``; the first ``fail_first`` requests get 503."""

    def __init__(self, files: dict[str, bytes], fail_first: int = 0):
        state = {"failures": fail_first, "requests": 0}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                state["requests"] += 1
                if state["failures"] > 0:
                    state["failures"] -= 1
                    self.send_error(503)
                    return
                body = files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.state = state
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_http_download_retries_then_verifies(tmp_path):
    body = b"[1, 2, 3]\n"
    server = _Server({"/f.json": body}, fail_first=1)
    try:
        digest = hashlib.sha256(body).hexdigest()
        assert fetch(f"{server.base}/f.json", tmp_path / "f.json", digest) == digest
        assert (tmp_path / "f.json").read_bytes() == body
        assert server.state["requests"] == 2
        with pytest.raises(FetchError, match=r"/missing.json does not exist \(HTTP 404\)"):
            fetch(f"{server.base}/missing.json", tmp_path / "m.json", digest)
        with pytest.raises(FetchError, match="checksum mismatch"):
            fetch(f"{server.base}/f.json", tmp_path / "g.json", "0" * 64)
        assert not (tmp_path / "g.json").exists()
    finally:
        server.close()


def test_malformed_json_names_the_file_and_line(tmp_path):
    from helixbench.datasets.jsonfiles import read_json, read_jsonl
    from helixbench.errors import DataError
    from helixbench.sources.recordings import load_recording

    broken = tmp_path / "recording.json"
    broken.write_text('[["q", "g", "a", []],\n  ["q2", ')
    with pytest.raises(DataError, match=rf"{broken}: not valid JSON \(.* at line 2, column"):
        load_recording(broken)
    lines = tmp_path / "shard.jsonl"
    lines.write_text('{"a": 1}\n\n{"b": \n')
    with pytest.raises(DataError, match=rf"{lines}, line 3: not valid JSON"):
        read_jsonl(lines)
    with pytest.raises(DataError, match="not UTF-8"):
        (tmp_path / "bin.json").write_bytes(b"\xff\xfe")
        read_json(tmp_path / "bin.json")


def test_json_lines_read_and_write_as_the_standard_library_would(tmp_path):
    """orjson reads and writes JSON lines; what it declines (a NaN, a big integer, a
    lone surrogate, a key that is not a string) goes through ``json``, so a reader gets
    what ``json.loads`` gives, line by line; a line ends at a newline alone (U+2028 and
    U+0085 written unescaped inside a string do not end it)."""
    import json
    import math

    from helixbench.datasets.jsonfiles import compact_json, read_jsonl, write_jsonl

    values = [
        {"score": 1e-05, "answer": "\u00e9\u2028\u0085 \x1f\r", "n": 2**70},
        {"score": float("nan"), "big": -(2**65)},
        {"surrogate": "\ud800"},
        [1, 2.5, None, True],
    ]
    lines = tmp_path / "lines.jsonl"
    lines.write_text("".join(json.dumps(v) + "\r\n" for v in values) + "\n   \n")
    read = read_jsonl(lines)
    assert read[0] == values[0] and read[2:] == values[2:] and len(read) == 4
    assert math.isnan(read[1]["score"]) and read[1]["big"] == -(2**65)
    written = tmp_path / "out" / "written.jsonl"
    write_jsonl(written, [values[0], {1: "int key"}, {"score": 0.25}])
    assert read_jsonl(written) == [values[0], {"1": "int key"}, {"score": 0.25}]
    assert not list(written.parent.glob("*.tmp"))
    assert compact_json({"a": [1, "b"]}) == b'{"a":[1,"b"]}'


def test_an_upstream_file_changed_after_download_is_detected(mirror, tmp_path):
    """A local copy under resources/upstream is checked against its pin when read:
    an edit is an error naming the file, not a silently different result."""
    from helixbench.errors import DataError
    from helixbench.paths import upstream_path
    from helixbench.sources.recordings import load_recording, recorded_runs

    run = next(r for r in recorded_runs("genegpt-2023", "geneturing", "001001"))
    local = tmp_path / upstream_path(run.file)
    fetch(run.file.url, local, run.file.sha256, mirror=mirror)
    assert load_recording(local)  # as downloaded: read
    data = local.read_bytes()
    local.write_bytes(data.replace(b"PSMB10", b"PSMB11", 1))
    with pytest.raises(DataError, match=rf"{local} was changed after it was downloaded"):
        load_recording(local)
    local.write_bytes(data)
    assert load_recording(local)


def test_a_verified_file_is_restored_offline_wherever_it_came_from(mirror, tmp_path, monkeypatch):
    """A file fetched once (here from the mirror) is kept by its sha256: removed (as
    Snakemake removes a job's outputs before it reruns it), it comes back without the
    mirror and without the network, the same bytes; a damaged store copy is not used."""
    from helixbench import paths
    from helixbench.datasets.fetch import fetch_local

    monkeypatch.chdir(tmp_path)
    entry = lookup(GENEGPT_REPO, DATA, GENEGPT_COMMIT)
    output = Path(paths.UPSTREAM_DIR) / entry.relpath
    lock = Path(paths.UPSTREAM_LOCK)
    assert fetch_local(output, mirror, lock) == entry.sha256
    output.unlink()
    monkeypatch.setattr("helixbench.datasets.fetch._download", _no_network)
    assert fetch_local(output, None, lock) == entry.sha256  # offline: from the store
    assert hashlib.sha256(output.read_bytes()).hexdigest() == entry.sha256
    kept = Path(paths.UPSTREAM_STORE) / entry.sha256
    assert kept.stat().st_ino == output.stat().st_ino  # (a hard link: no second copy)
    output.unlink()
    kept.unlink()
    kept.write_bytes(b"damaged")
    with pytest.raises(FetchError, match="no network"):
        fetch_local(output, None, lock)
    assert not kept.exists()


def _no_network(url, out, timeout, attempts):
    raise FetchError(f"no network for {url}")
