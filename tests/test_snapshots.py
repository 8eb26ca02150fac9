"""Demonstration snapshots: extraction from recorded headers, storage, header rebuild."""

from __future__ import annotations

import json

import pytest

from helixbench.datasets.snapshots import (
    Snapshot,
    SnapshotError,
    SnapshotReply,
    extract_from_header,
    parse_rendered_reply,
)
from helixbench.methods.genegpt import BLAST_GET_TEMPLATE, DEMONSTRATIONS, build_header
from helixbench.sources.recordings import load_recording, recorded_header


@pytest.mark.parametrize(
    "benchmark, mask, task, n_replies",
    [
        ("geneturing", "111111", "Gene alias", 7),
        ("geneturing", "001001", "Gene alias", 4),
        ("geneturing", "001001", "Gene name conversion", 4),
        ("genehop", "101110", "Disease gene location", 5),
    ],
)
def test_recorded_header_rebuilds_byte_for_byte(recording, benchmark, mask, task, n_replies):
    header = recorded_header(load_recording(recording(benchmark, mask, task)))
    snapshot = extract_from_header(header)
    assert len(snapshot.replies) == n_replies
    assert build_header(mask, snapshot) == header


def test_blast_put_keeps_its_rid(recording):
    header = recorded_header(load_recording(recording("geneturing", "111111", "Gene alias")))
    snapshot = extract_from_header(header)
    put = snapshot.reply(DEMONSTRATIONS[3].urls[0])
    assert put.body is None and put.rid == "52V2HPJ2013"
    get = snapshot.reply(BLAST_GET_TEMPLATE.format(rid=put.rid))
    assert get.body.startswith(b"<p><!--\nQBlastInfoBegin\n\tStatus=READY")


def test_snapshot_file_roundtrip_and_integrity(recording, tmp_path):
    header = recorded_header(load_recording(recording("geneturing", "001001", "Gene alias")))
    snapshot = extract_from_header(header, {"kind": "recorded"})
    path = tmp_path / "snap.json"
    snapshot.save(path)
    loaded = Snapshot.load(path)
    assert loaded == snapshot and loaded.id == snapshot.id and loaded.source == {"kind": "recorded"}
    data = json.loads(path.read_text())
    assert data["format"] == 1 and data["id"].startswith("snap-")
    data["replies"][0]["text"] += "x"  # tampered reply: the id no longer matches
    path.write_text(json.dumps(data))
    with pytest.raises(SnapshotError, match="does not match its replies"):
        Snapshot.load(path)


def test_header_needs_every_selected_reply(recording):
    header = recorded_header(load_recording(recording("geneturing", "001001", "Gene alias")))
    slim = extract_from_header(header)
    with pytest.raises(SnapshotError, match="no reply for .*esummary.fcgi\\?db=snp"):
        build_header("000100", slim)  # Dm.2 was not in the slim header


def test_non_utf8_bodies_survive_storage(tmp_path):
    reply = SnapshotReply("https://eutils.ncbi.nlm.nih.gov/x", body=b"\xff\x00'\"\n")
    snapshot = Snapshot({reply.url: reply})
    snapshot.save(tmp_path / "s.json")
    assert Snapshot.load(tmp_path / "s.json").reply(reply.url).body == b"\xff\x00'\"\n"


@pytest.mark.parametrize("value", [b"plain", b"it's", b"both ' and \"", b"\\n\x00\xff", b""])
def test_rendered_bytes_parse_back(value):
    assert parse_rendered_reply(repr(value)) == value


def test_rendered_text_stays_text():
    assert parse_rendered_reply("57K8VR2N016") == "57K8VR2N016"
    assert parse_rendered_reply("b'unterminated") == "b'unterminated"


def test_a_snapshot_taken_offline_from_a_seeded_cache_is_the_recorded_one(
    recording, tmp_path, monkeypatch
):
    """Seeding puts the replies a recorded header shows into the cache: a live snapshot
    taken offline then finds all seven, and they are the header's, byte for byte."""
    import shutil

    from helixbench.methods.genegpt import take_live_snapshot
    from helixbench.paths import upstream_path
    from helixbench.sources.recordings import recorded_runs
    from helixbench.tools import SETTINGS_ENV
    from helixbench.tools.cache import ReplyCache
    from helixbench.tools.seed import seed_from_recordings

    monkeypatch.chdir(tmp_path)
    run = next(r for r in recorded_runs("genegpt-2023", "geneturing", "111111"))
    local = tmp_path / upstream_path(run.file)
    local.parent.mkdir(parents=True)
    shutil.copy(recording("geneturing", "111111", run.task), local)
    cache = {"cache": str(tmp_path / "tools.sqlite"), "budgets": str(tmp_path / "budgets")}
    seeded = seed_from_recordings("genegpt-2023", ReplyCache(tmp_path / "tools.sqlite"),
                                  [upstream_path(run.file)])  # fmt: skip
    assert seeded[0]["demonstrations"] == 7
    monkeypatch.setenv(SETTINGS_ENV, json.dumps(cache))
    taken = take_live_snapshot("seeded", "offline")
    recorded = extract_from_header(recorded_header(load_recording(local)))
    assert taken.replies == recorded.replies and len(taken.replies) == 7
