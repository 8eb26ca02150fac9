"""The tool executor against a loopback NCBI stand-in: safety, politeness, faults, cache.

Every request goes to 127.0.0.1 through ``tools.routes``; the hostile URLs must
never reach the server at all.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest

from helixbench.datasets.snapshots import Snapshot, SnapshotError
from helixbench.loopback.ncbi import NCBIServer, NCBIServerState
from helixbench.methods.genegpt import DEMONSTRATIONS, GeneGPT, build_header, take_snapshot
from helixbench.models import Completion
from helixbench.sources.recordings import load_recording, recorded_tool_replies
from helixbench.tools import ToolRequest
from helixbench.tools.cache import CachedReply, ReplyCache, utc_now
from helixbench.tools.executor import ToolExecutor, ToolSettings
from helixbench.tools.ratelimit import RateLimiter
from helixbench.tools.seed import recorded_replies
from helixbench.tools.urls import UnsafeURL, canonical_url, check_url, strip_secrets
from helixbench.transcripts import to_record, without_timings

ESEARCH = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&retmax=5&term="
BLAST = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi"
NCBI = frozenset({"eutils.ncbi.nlm.nih.gov", "blast.ncbi.nlm.nih.gov"})


def settings(tmp_path: Path, server: NCBIServer | None, **overrides) -> ToolSettings:
    base = {
        "mode": "live",
        "cache": str(tmp_path / "cache" / "tools.sqlite"),
        "budgets": str(tmp_path / "cache" / "budgets"),
        "routes": server.routes() if server else {},
        "http": {"backoff_s": 0.05, "timeout_s": 2.0, "retries": 3},
        "blast": {"poll_interval_s": 0.2},
        "rates": {"blast.ncbi.nlm.nih.gov": 50},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return ToolSettings.from_config(base)


def call(executor: ToolExecutor, url: str, index: int = 0):
    return executor.call(ToolRequest(url, "q", index))


@pytest.fixture
def server():
    with NCBIServer() as srv:
        yield srv


# -- URL safety ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, reason",
    [
        ("file:///etc/passwd", "scheme"),
        ("http://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene", "scheme"),
        ("http://127.0.0.1:8080/x", "scheme"),
        ("https://127.0.0.1/x", "IP literal"),
        ("https://169.254.169.254/latest/meta-data/", "IP literal"),
        ("https://[::1]/x", "IP literal"),
        ("https://evil.example/", "allowlist"),
        ("https://eutils.ncbi.nlm.nih.gov.evil.example/x", "allowlist"),
        ("https://user@eutils.ncbi.nlm.nih.gov/x", "user-info"),
        ("https://eutils.ncbi.nlm.nih.gov@evil.example/x", "user-info"),
        ("https://eutils.ncbi.nlm.nih.gov:8443/x", "port"),
        ("https://eutils.ncbi.nlm.nih.gov:99999/x", "malformed"),
        ("https://eutils.ncbi.nlm.nih.gov/x y", "whitespace"),
        ("https:///x", "no host"),
    ],
)
def test_unsafe_urls_are_refused(url, reason):
    with pytest.raises(UnsafeURL, match=reason):
        check_url(url, NCBI)


def test_allowed_urls_pass():
    assert check_url(ESEARCH + "LMP10", NCBI) == "eutils.ncbi.nlm.nih.gov"
    assert check_url("https://BLAST.ncbi.nlm.nih.gov:443/blast/Blast.cgi", NCBI)


def test_canonical_url_sorts_and_strips_secrets():
    a = canonical_url(ESEARCH + "LMP10&api_key=SECRET&tool=x&email=a@b.c")
    b = canonical_url(
        "https://EUTILS.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?term=LMP10&retmax=5&db=gene"
    )
    assert a == b
    assert "SECRET" not in a and "tool" not in a and "email" not in a
    assert strip_secrets(ESEARCH + "a+b&API_KEY=S") == ESEARCH + "a+b"


def test_a_repeated_parameter_keeps_its_order_in_the_cache_key(tmp_path, server):
    """term=A&term=B and term=B&term=A are two requests: two keys, two cache entries,
    the second never served the first one's reply."""
    ab, ba = ESEARCH + "A&term=B", ESEARCH + "B&term=A"
    assert canonical_url(ab) != canonical_url(ba)
    assert canonical_url(ab).endswith("retmax=5&term=A&term=B")
    executor = ToolExecutor(settings(tmp_path, server))
    assert call(executor, ab).cache == "miss" and call(executor, ba, 1).cache == "miss"
    assert len(server.state.received) == 2 and executor.cache.count() == 2
    assert call(executor, ba, 2).cache == "hit"


# -- executor: safety, faults ----------------------------------------------------------


def test_hostile_urls_never_reach_the_server(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server))
    hostile = [
        "file:///etc/passwd",
        f"http://127.0.0.1:{server.port}/entrez/eutils/esearch.fcgi?db=gene&term=x",
        f"https://127.0.0.1:{server.port}/entrez/eutils/esearch.fcgi?db=gene&term=x",
        "https://169.254.169.254/latest/meta-data/",
        "https://evil.example/",
        f"https://x@eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?term={server.port}",
    ]
    for i, url in enumerate(hostile):
        result = call(executor, url, i)
        assert result.error and result.error.startswith("refused:"), url
        assert result.body is None
    assert server.state.received == []
    assert executor.cache.count("requests") == 0


def test_redirect_off_the_allowlist_is_refused(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server))
    server.state.faults.append(("redirect", "https://evil.example/steal"))
    result = call(executor, ESEARCH + "LMP10")
    assert "refused redirect" in result.error and "evil.example" in result.error
    server.state.faults.append(("redirect", f"http://127.0.0.1:{server.port + 1}/entrez/eutils/x"))
    assert "refused redirect" in call(executor, ESEARCH + "LMP11").error
    assert len(server.state.received) == 2  # the two redirecting replies, nothing after


def test_redirect_within_the_allowlist_is_followed(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server))
    server.state.faults.append(("redirect", ESEARCH.replace("esearch", "esummary") + "X"))
    result = call(executor, ESEARCH + "LMP10")
    assert result.error is None and b"esummary" in result.body


def test_faults_are_retried_with_retry_after(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server))
    server.state.faults.extend([("429", 0.3), ("500",), ("stall", 3.0)])
    started = time.monotonic()
    result = call(executor, ESEARCH + "LMP10")
    assert result.error is None and result.status == 200 and result.attempts == 4
    assert time.monotonic() - started >= 0.3 + 2.0  # Retry-After, then the 2 s timeout
    statuses = [r.status for r in server.state.received]
    assert statuses[:2] == [429, 500] and statuses[-1] == 200


def test_faults_past_the_limit_become_a_tool_error(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server, http={"retries": 2}))
    server.state.faults.extend([("500",)] * 3)
    result = call(executor, ESEARCH + "LMP10")
    assert result.error == "HTTP 500 after 3 attempts"
    assert executor.cache.get(canonical_url(ESEARCH + "LMP10")) is None  # nothing cached
    # A Retry-After past the backoff ceiling stops at once instead of hammering.
    server.state.faults.append(("429", 3600))
    assert "asks to wait 3600" in call(executor, ESEARCH + "LMP11").error


def test_oversized_reply_is_not_kept(tmp_path, server):
    server.state.replies[canonical_url(ESEARCH + "BIG")] = b"x" * 5000
    executor = ToolExecutor(settings(tmp_path, server, http={"max_bytes": 1000}))
    result = call(executor, ESEARCH + "BIG")
    assert "larger than 1000 bytes" in result.error
    assert executor.cache.get(canonical_url(ESEARCH + "BIG")) is None


@pytest.mark.parametrize("fault", ["short", "badgzip"])
def test_a_broken_reply_is_retried_and_every_attempt_logged(tmp_path, server, fault):
    executor = ToolExecutor(settings(tmp_path, server))
    server.state.faults.append((fault,))
    result = call(executor, ESEARCH + "LMP10")
    assert result.error is None and result.status == 200 and result.attempts == 2
    with sqlite3.connect(executor.settings.cache) as db:
        log = db.execute("SELECT attempt, status, error FROM requests ORDER BY id").fetchall()
    assert [row[0] for row in log] == [1, 2]
    assert log[0][2].startswith("broken reply") and log[1][1] == 200
    server.state.faults.extend([(fault,)] * 4)  # past the retries: a tool error, logged
    failed = call(executor, ESEARCH + "LMP11")
    assert failed.error.startswith("broken reply") and "after 4 attempts" in failed.error
    assert executor.cache.count("requests") == 2 + 4


def test_every_spelling_of_a_url_is_routed_and_keyed_alike(tmp_path, server):
    """Host case, the default port, no path, dot segments and doubled slashes: each is
    the same request, to the same (routed) server, under one cache key."""
    executor = ToolExecutor(settings(tmp_path, server))
    path = "/entrez/eutils/esearch.fcgi?db=gene&term=LMP10"
    spellings = [
        "https://EUTILS.ncbi.nlm.nih.gov" + path,
        "https://eutils.ncbi.nlm.nih.gov:443" + path,
        "https://eutils.NCBI.nlm.nih.gov./entrez/./eutils//esearch.fcgi?db=gene&term=LMP10",
        "https://eutils.ncbi.nlm.nih.gov/entrez/x/../eutils/esearch.fcgi?db=gene&term=LMP10",
    ]
    first = call(executor, spellings[0])
    assert first.error is None and first.origin.startswith("live http://127.0.0.1")
    assert first.url == "https://eutils.ncbi.nlm.nih.gov" + path
    for url in spellings[1:]:
        again = call(executor, url)
        assert (again.error, again.cache, again.url) == (None, "hit", first.url), url
    assert len(server.state.received) == 1
    for url in (
        "https://eutils.ncbi.nlm.nih.gov?db=gene&term=X",
        "https://blast.ncbi.nlm.nih.gov//blast/./Blast.cgi?CMD=Put&QUERY=ACGT",
    ):
        result = call(executor, url)
        assert result.origin and result.origin.startswith("live http://127.0.0.1"), url
    assert [r.path for r in server.state.received[1:]] == ["/", "/blast/Blast.cgi"]


def test_a_route_covers_its_whole_host_or_its_path_and_nothing_reaches_a_routed_host(
    tmp_path, server
):
    """A route of a host alone covers every path of it (``/Blast/Blast.cgi`` too); one
    with a path covers what lies below it; a URL on a routed host that no route covers
    is a tool error and never a request to the public host."""
    host_wide = ToolExecutor(settings(tmp_path, server, mode="refresh"))
    result = call(host_wide, "https://blast.ncbi.nlm.nih.gov/Blast/Blast.cgi?CMD=Put&QUERY=ACGT")
    assert result.origin.startswith("live http://127.0.0.1")
    assert server.state.received[-1].path == "/Blast/Blast.cgi"
    routes = {  # a path route, spelt loosely: the prefix is normalised like a request
        "HTTPS://BLAST.ncbi.nlm.nih.gov:443/blast/Blast.cgi": f"{server.base}/blast/Blast.cgi",
        "https://eutils.ncbi.nlm.nih.gov/entrez/eutils": f"{server.base}/entrez/eutils",
    }
    executor = ToolExecutor(settings(tmp_path / "paths", None, mode="refresh", routes=routes))
    sent = len(server.state.received)
    ok = call(executor, "https://blast.ncbi.nlm.nih.gov/blast//Blast.cgi?CMD=Put&QUERY=ACGT")
    assert ok.error is None and server.state.received[-1].path == "/blast/Blast.cgi"
    for url in (
        "https://blast.ncbi.nlm.nih.gov/Blast/Blast.cgi?CMD=Put&QUERY=ACGT",
        "https://blast.ncbi.nlm.nih.gov/Blast.cgi?CMD=Put&QUERY=ACGT",
        "https://eutils.ncbi.nlm.nih.gov/entrez/eutilsx/esearch.fcgi?db=gene&term=X",
    ):
        refused = call(executor, url)
        assert refused.error.startswith("refused: tools.routes route"), (url, refused)
        assert "not sent to the public host" in refused.error
    assert len(server.state.received) == sent + 1  # the covered one only
    assert executor.cache.count("requests") == 1  # nothing else left the process
    with pytest.raises(ValueError, match="not a URL prefix"):
        ToolExecutor(settings(tmp_path, server, routes={"https://x.org/a?b=1": "http://y"}))


def test_an_overlong_url_is_refused_and_kept_short(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server, http={"max_url_length": 100}))
    url = ESEARCH + "A" * 10_000
    result = call(executor, url)
    assert result.error.startswith("refused: a URL of") and "max_url_length" in result.error
    assert len(result.url) < 300 and result.url.endswith(f"({len(url)} characters)")
    assert server.state.received == [] and executor.cache.count("replies") == 0
    default = ToolExecutor(settings(tmp_path, server))
    assert "limit is 8192" in call(default, ESEARCH + "A" * 9000).error


# -- modes ----------------------------------------------------------------------------------


def test_offline_miss_is_a_tool_error_without_a_request(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server, mode="offline"))
    result = call(executor, ESEARCH + "LMP10")
    assert result.error == "offline: not in the tool cache" and result.cache == "miss"
    assert server.state.received == []


def test_live_then_offline_hit_then_refresh(tmp_path, server):
    live = ToolExecutor(settings(tmp_path, server))
    first = call(live, ESEARCH + "LMP10")
    assert first.cache == "miss" and first.origin == f"live {server.base}"
    assert call(live, ESEARCH + "LMP10").cache == "hit"
    assert len(server.state.received) == 1
    offline = ToolExecutor(settings(tmp_path, server, mode="offline"))
    again = call(offline, ESEARCH + "LMP10")
    assert (again.body, again.cache, again.fetched_at) == (first.body, "hit", first.fetched_at)
    refresh = ToolExecutor(settings(tmp_path, server, mode="refresh"))
    fresh = call(refresh, ESEARCH + "LMP10")
    assert fresh.cache == "miss" and len(server.state.received) == 2
    # The network fails: refresh falls back on what the cache holds.
    server.state.faults.extend([("500",)] * 4)
    stale = call(refresh, ESEARCH + "LMP10")
    assert stale.cache == "stale" and stale.body == first.body and stale.error is None


def test_non_2xx_final_reply_is_cached_and_shown_as_an_error(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server))
    result = call(executor, "https://eutils.ncbi.nlm.nih.gov/nowhere")
    assert result.error == "HTTP 404" and result.status == 404
    assert call(executor, "https://eutils.ncbi.nlm.nih.gov/nowhere").cache == "hit"


# -- BLAST ----------------------------------------------------------------------------------


def _blast_put(executor, query="ACGT"):
    put = call(executor, f"{BLAST}?CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY={query}")
    return put.body.decode().split("RID = ")[1].split()[0]


def test_blast_polls_by_rid_then_fetches_once_ready(tmp_path, server):
    server.state.waiting_polls = 2
    server.state.rtoe = 1
    executor = ToolExecutor(settings(tmp_path, server))
    put_at = time.time()
    rid = _blast_put(executor)
    result = call(executor, f"{BLAST}?CMD=Get&FORMAT_TYPE=Text&RID={rid}", 1)
    assert result.error is None and rid.encode() in result.body
    received = server.state.received
    polls = [r.at for r in received if r.query.get("FORMAT_OBJECT") == "SearchInfo"]
    assert len(polls) == 3  # WAITING, WAITING, READY
    assert polls[0] - put_at >= 1.0  # the first check waits for RTOE
    # The limiter spaces the sends by poll_interval_s (0.2 s); the server's clock sees
    # arrivals, which a loaded machine may delay by some milliseconds each.
    assert all(b - a >= 0.2 - 0.05 for a, b in zip(polls, polls[1:], strict=False))
    gets = [r for r in received if r.query.get("CMD") == "Get" and "FORMAT_OBJECT" not in r.query]
    assert len(gets) == 1 and gets[0].at >= polls[-1]


def test_blast_contacts_respect_the_shared_interval(tmp_path, server):
    server.state.blast_interval = 0.25  # the server answers 429 to anything faster
    # Our interval is 0.42 s: the spacing must hold with ~0.15 s of arrival jitter (a
    # loaded machine, tests running in parallel).
    executor = ToolExecutor(settings(tmp_path, server, rates={"blast.ncbi.nlm.nih.gov": 2.5}))
    rid = _blast_put(executor)
    call(executor, f"{BLAST}?CMD=Get&FORMAT_TYPE=Text&RID={rid}", 1)
    assert [r.status for r in server.state.received] == [200] * len(server.state.received)


def test_failed_blast_search_is_recorded_not_resubmitted(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server))
    rid = _blast_put(executor)
    server.state.failed_rids.add(rid)
    result = call(executor, f"{BLAST}?CMD=Get&FORMAT_TYPE=Text&RID={rid}", 1)
    assert result.error == f"BLAST search {rid} ended FAILED; not resubmitted"
    assert _blast_put(executor) == rid  # a second Put of the same query is a cache hit
    assert sum(r.query.get("CMD") == "Put" for r in server.state.received) == 1
    unknown = call(executor, f"{BLAST}?CMD=Get&FORMAT_TYPE=Text&RID=NOSUCH", 2)
    assert "ended UNKNOWN" in unknown.error


def test_blast_paper_mode_waits_a_fixed_time_without_polling(tmp_path, server):
    executor = ToolExecutor(
        settings(tmp_path, server, blast={"wait": "paper", "paper_wait_s": 0.5})
    )
    rid = _blast_put(executor)
    started = time.monotonic()
    result = call(executor, f"{BLAST}?CMD=Get&FORMAT_TYPE=Text&RID={rid}", 1)
    assert result.error is None and time.monotonic() - started >= 0.5
    assert not any(r.query.get("FORMAT_OBJECT") for r in server.state.received)


# -- many processes at once -----------------------------------------------------------------


def _worker(config: dict, worker: int, requests: int) -> None:
    executor = ToolExecutor(ToolSettings.from_config(config))
    for i in range(requests):
        result = executor.call(ToolRequest(f"{ESEARCH}W{worker}R{i}", f"w{worker}", i))
        assert result.error is None, result.error


def _run_workers(target, args_of, n=8):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=target, args=args_of(w)) for w in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * n


def test_eight_processes_share_one_budget(tmp_path, server):
    """Eight processes asking at once keep together to the 3/s they were given. The
    server allows twice that in any second: a shared budget stays well under it
    whatever the machine's load does to arrival times, while eight unshared ones
    (3/s each) would trip it at once; the whole takes as long as 3/s means."""
    server.state.eutils_rate = 6
    # A longer timeout than the tests' 2 s: a reply slowed past it would be asked again.
    loaded = settings(tmp_path, server, rate_margin=0.1, http={"timeout_s": 20.0})
    config = {**loaded.__dict__}
    config = {k: (list(v) if isinstance(v, tuple) else v) for k, v in config.items()}
    _run_workers(_worker, lambda w: (config, w, 3))
    received = server.state.received
    statuses = [r.status for r in received]
    assert statuses == [200] * 24, statuses  # each asked once, never refused
    times = sorted(r.at for r in received)
    assert times[-1] - times[0] > 6.0  # 23 intervals of 1.1 / 3 s: 8.4 s, less any jitter
    assert ReplyCache(tmp_path / "cache" / "tools.sqlite").count() == 24


def _cache_writer(path: str, worker: int, n: int) -> None:
    cache = ReplyCache(Path(path))
    for i in range(n):
        key = f"https://eutils.ncbi.nlm.nih.gov/x?w={worker}&i={i}"
        cache.put(CachedReply(key, key, 200, b"x" * 100, None, None, utc_now(), "test"))
        cache.log_request(key, key, 1, utc_now(), 0.0, 200, 100, None)


def test_eight_cache_writers_lose_nothing(tmp_path):
    path = tmp_path / "tools.sqlite"
    _run_workers(_cache_writer, lambda w: (str(path), w, 150))
    cache = ReplyCache(path)
    assert cache.count("replies") == 8 * 150
    assert cache.count("requests") == 8 * 150


def test_rate_limiter_spaces_slots_across_processes(tmp_path):
    limiter = RateLimiter(tmp_path / "budget", 0.1)
    slots = [limiter.reserve() for _ in range(5)]
    assert all(
        b - a == pytest.approx(0.1, abs=1e-6) for a, b in zip(slots, slots[1:], strict=False)
    )


# -- secrets ----------------------------------------------------------------------------------


def test_api_key_reaches_ncbi_but_nothing_stored(tmp_path, server, monkeypatch):
    secret = "SECRETKEY0123456789abcdef"
    monkeypatch.setenv("NCBI_API_KEY", secret)
    executor = ToolExecutor(settings(tmp_path, server, ncbi={"email": "me@example.org"}))
    assert executor.settings.rate("eutils.ncbi.nlm.nih.gov") == 10.0
    # A model may write its own api_key/tool/email: they are replaced by ours.
    model = ScriptedModel(["[" + ESEARCH + "LMP10&api_key=MINE&tool=t]", "Answer: PSMB10"])
    result = GeneGPT("Header\n").run("q1", "What is LMP10?", model, executor)
    tool_event = [e for e in result.events if e.type == "tool"][0]
    assert tool_event.data["url"] == ESEARCH + "LMP10"
    server.state.faults.extend([("500",)] * 4)  # an error message must not leak it either
    failed = call(executor, ESEARCH + "FAIL")
    server.state.faults.append(("echo",))  # nor a reply that repeats the key back (cached)
    echoed = call(executor, ESEARCH + "ECHO")
    assert echoed.status == 400 and b"***" in echoed.body and secret.encode() not in echoed.body
    record = to_record(result, {"model": "scripted"}, 0.1)
    out = tmp_path / "results" / "shard.jsonl"
    out.parent.mkdir()
    out.write_text(str(record) + str(failed))
    assert server.state.received[0].query["api_key"] == secret
    assert server.state.received[0].query["email"] == "me@example.org"
    assert server.state.received[0].query["tool"] == "helixbench"
    executor.cache.close()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data, path
            assert b"me@example.org" not in data, path


# -- the loop, live then offline ------------------------------------------------------------


class ScriptedModel:
    """Answers each call from a script (the loop's model interface)."""

    def __init__(self, script):
        self.script = list(script)
        self.calls = 0

    def identity(self):
        return {"backend": "scripted"}

    def complete(self, request):
        text = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return Completion(text)


LOOP_SCRIPT = [
    f"[{ESEARCH}LMP10]",
    f"[{BLAST}?CMD=Put&PROGRAM=blastn&MEGABLAST=on&DATABASE=nt&FORMAT_TYPE=XML&QUERY=ACGT&HITLIST_SIZE=5]",
    "[https://evil.example/x]",
    "Answer: PSMB10",
]


def test_live_loop_then_offline_replays_it_from_the_cache(tmp_path, server):
    method = GeneGPT("Header\n")
    live = method.run(
        "q1", "What is LMP10?", ScriptedModel(LOOP_SCRIPT), ToolExecutor(settings(tmp_path, server))
    )
    tools = [e for e in live.events if e.type == "tool"]
    assert [e.data["cache"] for e in tools] == ["miss", "miss", None]
    assert tools[2].data["error"].startswith("refused")
    assert all(e.latency_s is not None for e in tools)
    assert live.answer == "Answer: PSMB10"
    seen = len(server.state.received)
    offline_tools = ToolExecutor(settings(tmp_path, None, mode="offline"))
    offline = method.run("q1", "What is LMP10?", ScriptedModel(LOOP_SCRIPT), offline_tools)
    assert len(server.state.received) == seen
    strip = lambda r: without_timings(to_record(r, {}, 0.0))  # noqa: E731
    live_rec, offline_rec = strip(live), strip(offline)
    for rec in (live_rec, offline_rec):
        for event in rec["events"]:
            event["data"].pop("cache", None)
            event["data"].pop("attempts", None)
    assert live_rec == offline_rec


# -- seeding and snapshots --------------------------------------------------------------------


def test_seeded_cache_answers_what_codex_asked(tmp_path, recording):
    items = load_recording(recording("geneturing", "001001", "Gene alias"))
    entries = recorded_replies(items, "seed:genegpt-2023", "recorded")
    cache = ReplyCache(tmp_path / "tools.sqlite")
    assert cache.put_many(entries) == len({e.key for e in entries})
    executor = ToolExecutor(settings(tmp_path, None, mode="offline"), cache=cache)
    url, rendered = recorded_tool_replies(items[10])[0]
    result = executor.call(ToolRequest(url, "q", 0, needed_bytes=10_000))
    assert result.cache == "hit" and result.origin == "seed:genegpt-2023"
    assert repr(result.body[:10_000]) == rendered
    truncated = [e for e in entries if e.truncated_at]
    if truncated:  # a reply upstream cut serves only callers that keep no more
        request = ToolRequest(truncated[0].url, "q", 0, needed_bytes=20_000)
        assert executor.call(request).error == "offline: not in the tool cache"


def test_live_snapshot_through_the_executor(tmp_path, server):
    executor = ToolExecutor(settings(tmp_path, server))
    snapshot = take_snapshot(executor, {"kind": "live", "name": "test"})
    urls = [u for d in DEMONSTRATIONS for u in d.urls]
    assert len(snapshot.replies) == len(urls) == 7
    assert set(snapshot.source["sha256"]) == set(snapshot.replies)
    header = build_header("111111", snapshot)
    assert "->[RID0001]\n" in header and "RID=RID0001]->[b'BLASTN results for RID0001" in header
    snapshot.save(tmp_path / "snap.json")
    assert Snapshot.load(tmp_path / "snap.json").id == snapshot.id
    offline = ToolExecutor(settings(tmp_path, None, mode="offline"))
    assert take_snapshot(offline, {}).id == snapshot.id  # reproducible from the cache


def test_snapshot_fails_on_a_tool_error(tmp_path):
    offline = ToolExecutor(settings(tmp_path, None, mode="offline"))
    with pytest.raises(SnapshotError, match="Dm.1 .*offline"):
        take_snapshot(offline, {})


def test_unknown_tool_setting_is_named():
    with pytest.raises(ValueError, match="unknown setting.*colour"):
        ToolSettings.from_config({"colour": "red"})
    with pytest.raises(ValueError, match="tools.mode"):
        ToolSettings.from_config({"mode": "sometimes"})


def test_server_state_is_per_server():
    assert NCBIServerState().received == []


def test_a_reports_tool_replies_replay_offline_on_another_machine(tmp_path):
    """The replies a run read through the tool cache, exported with its report and
    imported into another machine's empty cache, answer the same calls offline."""
    from helixbench.cli.commands import import_tool_replies
    from helixbench.errors import DataError
    from helixbench.report.run_share.tool_replies import export_tool_replies, used_keys
    from helixbench.tools.executor import ToolExecutor, ToolSettings
    from helixbench.tools.urls import canonical_url

    url = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=LMP10"
    here = ReplyCache(tmp_path / "here.sqlite")
    reply = CachedReply(canonical_url(url), url, 200, b'{"ids": [5699]}', None, None, "t", "live")
    here.put(reply)
    records = {
        "task": [
            {"events": [{"type": "tool", "data": {"url": url, "cache": "miss", "status": 200}}]},
            {"events": [{"type": "tool", "data": {"url": url + "x", "cache": "replay"}}]},
        ]
    }
    exported = tmp_path / "tool_replies.jsonl"
    assert export_tool_replies(used_keys(records), exported, tmp_path / "here.sqlite") == 1
    there = tmp_path / "there" / "tools.sqlite"
    import_tool_replies(exported, there)
    settings = {"mode": "offline", "cache": str(there), "budgets": str(tmp_path / "b")}
    result = ToolExecutor(ToolSettings.from_config(settings)).call(ToolRequest(url, "q", 0))
    assert (result.body, result.cache, result.origin) == (reply.body, "hit", "import:live")
    line = json.loads(exported.read_text())
    exported.write_text(json.dumps({**line, "body": "eyJpZHMiOiBbMV19"}) + "\n")  # changed
    with pytest.raises(DataError, match="tool_replies.jsonl:1: .* does not match its sha256"):
        import_tool_replies(exported, there)
