"""The tool executor: every tool call a model makes goes through here.

Modes (``tools.mode`` in config):

- ``offline``: the cache only; a miss is a recorded tool error, never a request.
- ``live``: the cache first, then the network; what the network gives is stored.
- ``refresh``: the network first (stored); the cache only if the network fails.
- ``replay`` is not handled here: :class:`helixbench.tools.replay.ReplayToolbox`.

Before anything leaves the process a URL must pass
:func:`helixbench.tools.urls.check_url`, and so must every redirect target. Each
host has one request budget shared by all processes on the machine
(:class:`helixbench.tools.ratelimit.RateLimiter`): E-utils 3 requests/s, 10/s
with an API key; BLAST one contact per 10 s. A BLAST Get waits for its search as
NCBI asks: the first status check after RTOE, then at most one check of a RID a
minute, the results fetched once READY; a FAILED or UNKNOWN search is an error,
never resubmitted. 429, 5xx and timeouts are retried with exponential backoff and
jitter (``Retry-After`` honoured), then recorded as an error: a run always ends.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

import requests

from .. import __version__, paths, secrets
from ..digests import sha256_json
from ..store import KeyedLocks
from . import ToolRequest, ToolResult
from .cache import CachedReply, ReplyCache, utc_now
from .ratelimit import RateLimiter
from .urls import (
    UnsafeURL,
    abridged,
    canonical_url,
    check_url,
    normalise_url,
    query_params,
    strip_secrets,
)

log = logging.getLogger("helixbench.tools")

EUTILS_HOST = "eutils.ncbi.nlm.nih.gov"
BLAST_HOST = "blast.ncbi.nlm.nih.gov"
NCBI_HOSTS = (EUTILS_HOST, BLAST_HOST)
MODES = ("offline", "live", "refresh")
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
_BLAST_STATUS = re.compile(r"Status=([A-Z]+)")
_BLAST_RID = re.compile(r"RID = (\S+)")
_BLAST_RTOE = re.compile(r"RTOE = (\d+)")


@dataclass(frozen=True)
class ToolSettings:
    """``tools`` in config, flattened; see docs/reference/config.md for each key."""

    mode: str = "offline"
    cache: str = paths.TOOL_CACHE
    code_cache: str = paths.CODE_CACHE  # the code tools' executions (gateway.code)
    budgets: str = "resources/cache/budgets"
    allowed_hosts: tuple[str, ...] = NCBI_HOSTS
    routes: dict = field(default_factory=dict)  # public URL prefix -> where it is served
    rates: dict = field(default_factory=dict)  # host -> requests per second
    rate_margin: float = 0.04  # keep this fraction under each limit, against timing jitter
    ncbi_tool: str = "helixbench"
    ncbi_email: str | None = None
    api_key_env: str = "NCBI_API_KEY"
    timeout_s: float = 30.0
    max_bytes: int = 20_000_000
    max_url_length: int = 8192  # a longer model-written URL is refused (a tool error)
    retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 120.0
    blast_wait: str = "poll"  # poll (NCBI's rules) | paper (upstream's fixed wait)
    blast_paper_wait_s: float = 30.0
    blast_poll_interval_s: float = 60.0
    blast_max_wait_s: float = 1800.0

    @classmethod
    def from_config(cls, tools: dict | None) -> ToolSettings:
        tools = dict(tools or {})
        flat = {}
        for section in ("ncbi", "http", "blast"):
            for key, value in (tools.pop(section, None) or {}).items():
                name = key if section == "http" else f"{section}_{key}"
                flat[name] = value
        flat.update(tools)
        if "allowed_hosts" in flat:
            flat["allowed_hosts"] = tuple(flat["allowed_hosts"])
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(flat) - known)
        if unknown:
            raise ValueError(f"tools: unknown setting(s) {', '.join(unknown)}")
        settings = cls(**flat)
        if settings.mode not in MODES:
            raise ValueError(f"tools.mode: {settings.mode!r} is not one of {', '.join(MODES)}")
        if settings.blast_wait not in ("poll", "paper"):
            raise ValueError("tools.blast.wait: poll or paper")
        return settings

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def rate(self, host: str) -> float:
        """Requests per second allowed to ``host`` (from all processes together)."""
        if host in self.rates:
            return float(self.rates[host])
        if host == EUTILS_HOST:
            return 10.0 if self.api_key() else 3.0
        if host == BLAST_HOST:
            return 0.1  # NCBI: no more than one request every 10 seconds
        return 1.0


class _Failure(Exception):
    """A request that ends as a recorded tool error (the message is shown to the model)."""


@dataclass
class _Reply:
    status: int
    body: bytes
    attempts: int
    elapsed_s: float


class ToolExecutor:
    def __init__(self, settings: ToolSettings, cache: ReplyCache | None = None):
        self.settings = settings
        self.cache = cache or ReplyCache(Path(settings.cache))
        self._allowed = frozenset(h.lower() for h in settings.allowed_hosts)
        self._api_key = settings.api_key()
        # Sent to NCBI only; a reply that repeats them back is stored without them.
        secrets.register(self._api_key)
        secrets.register(settings.ncbi_email)
        self._sessions = threading.local()  # one requests.Session per thread
        self._asking = KeyedLocks()
        self._limiters: dict[str, RateLimiter] = {}
        self._routes = route_table(settings.routes)
        self._searches: dict[str, tuple[float, int]] = {}  # BLAST RID -> (submitted, RTOE s)

    # -- the Toolbox interface -------------------------------------------------------

    def call(self, request: ToolRequest) -> ToolResult:
        limit = self.settings.max_url_length
        if len(request.url) > limit:  # refused before it is stored, keyed or shown whole
            return ToolResult(
                abridged(strip_secrets(request.url)),
                request.index,
                error=f"refused: a URL of {len(request.url)} characters; the limit is {limit} "
                "(tools.http.max_url_length)",
            )
        shown = strip_secrets(request.url)
        try:
            return self._call(request, shown)
        except Exception as exc:  # a tool call never crashes a run
            log.exception("tool call failed unexpectedly")
            return ToolResult(shown, request.index, error=secrets.redact(f"internal error: {exc}"))

    def _call(self, request: ToolRequest, shown: str) -> ToolResult:
        try:
            # One canonical spelling (host case, port, path) for the allowlist, the
            # routes, the cache key and the request: one call, one destination.
            request = replace(request, url=normalise_url(request.url))
            shown = strip_secrets(request.url)
            host = check_url(request.url, self._allowed)
        except UnsafeURL as exc:
            return ToolResult(shown, request.index, error=f"refused: {exc}")
        key = request_key(request)
        with self._asking.hold(key):  # one URL asked once, however many questions ask it
            return self._answer(request, shown, host, key)

    def _answer(self, request: ToolRequest, shown: str, host: str, key: str) -> ToolResult:
        mode = self.settings.mode
        cached = self.cache.get(key)
        if cached is not None and not cached.serves(request.needed_bytes):
            cached = None
        method = request.method
        if cached is not None and mode in ("offline", "live"):
            return replace(self._from_cache(shown, request.index, cached, "hit"), method=method)
        if mode == "offline":
            return ToolResult(
                shown,
                request.index,
                error="offline: not in the tool cache",
                cache="miss",
                method=method,
            )
        try:
            if request.body is None:
                reply = self._fetch_tool(host, request.url)
            else:
                reply = self._http(host, request.url, (request.body_kind, request.body))
        except _Failure as exc:
            if cached is not None:  # refresh mode: the network failed, the cache still answers
                return replace(
                    self._from_cache(shown, request.index, cached, "stale"), method=method
                )
            return ToolResult(shown, request.index, error=str(exc), cache="miss", method=method)
        stored = CachedReply(
            key=key,
            url=shown,
            status=reply.status,
            body=secrets.redact_bytes(reply.body),  # a server may echo the API key
            rid=None,
            truncated_at=None,
            fetched_at=utc_now(),
            origin="live " + self._origin(request.url),
            elapsed_s=reply.elapsed_s,
        )
        self.cache.put(stored)
        result = self._from_cache(shown, request.index, stored, "miss")
        return replace(result, attempts=reply.attempts, method=method)

    @staticmethod
    def _from_cache(url: str, index: int, reply: CachedReply, how: str) -> ToolResult:
        error = (
            None if reply.status is None or 200 <= reply.status < 300 else f"HTTP {reply.status}"
        )
        return ToolResult(
            url,
            index,
            body=reply.body,
            text=reply.rid,
            status=reply.status,
            error=error,
            cache=how,
            fetched_at=reply.fetched_at,
            origin=reply.origin,
        )

    # -- BLAST -------------------------------------------------------------------------

    def _fetch_tool(self, host: str, url: str) -> _Reply:
        params = {k.upper(): v for k, v in query_params(url).items()}
        cmd = params.get("CMD", "").lower()
        is_blast = host == BLAST_HOST
        if is_blast and cmd == "get" and params.get("FORMAT_OBJECT", "").lower() != "searchinfo":
            if "RID" in params:
                self._wait_for_search(url, params["RID"])
        reply = self._http(host, url)
        if is_blast and cmd == "put" and reply.status == 200:
            text = reply.body.decode("utf-8", "replace")
            rid, rtoe = _BLAST_RID.search(text), _BLAST_RTOE.search(text)
            if rid:
                self._searches[rid.group(1)] = (time.time(), int(rtoe.group(1)) if rtoe else 0)
        return reply

    def _wait_for_search(self, url: str, rid: str) -> None:
        settings = self.settings
        if settings.blast_wait == "paper":  # upstream: a fixed wait, then the Get
            time.sleep(settings.blast_paper_wait_s)
            return
        submitted, rtoe = self._searches.get(rid, (0.0, 0))
        time.sleep(max(0.0, submitted + rtoe - time.time()))
        parts = urlsplit(url)
        info_url = f"{parts.scheme}://{parts.netloc}{parts.path}?CMD=Get&FORMAT_OBJECT=SearchInfo&RID={rid}"
        # One RID is never checked more than once per poll interval, by any process.
        poll = RateLimiter.for_budget(
            Path(settings.budgets), f"blast-rid-{rid}", settings.blast_poll_interval_s
        )
        deadline = time.time() + settings.blast_max_wait_s
        while True:
            poll.acquire()
            reply = self._http(BLAST_HOST, info_url)
            match = _BLAST_STATUS.search(reply.body.decode("utf-8", "replace"))
            status = match.group(1) if match else "UNKNOWN"
            log.info("BLAST %s: %s", rid, status)
            if status == "READY":
                return
            if status != "WAITING":
                raise _Failure(f"BLAST search {rid} ended {status}; not resubmitted")
            if time.time() + settings.blast_poll_interval_s > deadline:
                raise _Failure(
                    f"BLAST search {rid} still WAITING after {settings.blast_max_wait_s:g} s"
                )

    # -- HTTP --------------------------------------------------------------------------

    def _limiter(self, host: str) -> RateLimiter:
        if host not in self._limiters:
            interval = (1.0 + self.settings.rate_margin) / self.settings.rate(host)
            self._limiters[host] = RateLimiter.for_budget(
                Path(self.settings.budgets), host, interval
            )
        return self._limiters[host]

    def _route(self, url: str) -> str:
        """Where a checked public ``url`` is sent: a route's target where one covers it,
        the public URL where none names its host; a host that routes name is never
        reached past them (a URL on it that no route covers is a _Failure)."""
        host = urlsplit(url).hostname
        for prefix, target in self._routes:
            if _covers(prefix, url):
                return target + url[len(prefix) :]
        of_host = [p for p, _ in self._routes if urlsplit(p).hostname == host]
        if of_host:
            raise _Failure(
                f"refused: tools.routes route {host} ({', '.join(of_host)}) but none covers "
                f"{abridged(strip_secrets(url))}; it is not sent to the public host"
            )
        return url

    def _unroute(self, url: str) -> str:
        for prefix, target in self._routes:
            if _covers(target, url):
                return prefix + url[len(target) :]
        return url

    def _origin(self, url: str) -> str:
        """Where the reply to ``url`` came from, as a cached reply names it: the scheme
        and host it was sent to."""
        sent = urlsplit(self._route(url))
        return f"{sent.scheme}://{sent.netloc}"

    def _send_url(self, host: str, url: str) -> str:
        url = strip_secrets(url)
        if host == EUTILS_HOST:  # NCBI asks E-utils clients to identify themselves
            extra = [("tool", self.settings.ncbi_tool), ("email", self.settings.ncbi_email)]
            extra.append(("api_key", self._api_key))
            query = "&".join(f"{k}={quote(v, safe='@.')}" for k, v in extra if v)
            if query:
                url += ("&" if "?" in url else "?") + query
        return self._route(url)

    def _http(self, host: str, url: str, body: tuple[str, dict] | None = None) -> _Reply:
        """GET ``url`` (a checked public URL), or POST ``body`` (its kind and fields) to
        it, politely; a _Failure once retries are spent."""
        settings = self.settings
        redirects, attempt, started = 0, 0, time.perf_counter()
        while True:
            attempt += 1
            destination = self._send_url(host, url)  # a _Failure before anything is sent
            self._limiter(host).acquire()
            key, shown = canonical_url(url), strip_secrets(url)
            at, t0 = utc_now(), time.perf_counter()
            status, content, error, retry_after = None, b"", None, None
            try:
                status, content, headers = self._send(destination, body)
                retry_after = _retry_after(headers.get("Retry-After"))
                location = headers.get("Location")
            except requests.Timeout:
                error = f"timeout after {settings.timeout_s:g} s"
            except requests.ConnectionError as exc:
                error = f"connection failed ({type(exc).__name__})"
            except requests.RequestException as exc:  # cut short of Content-Length, bad gzip
                error = f"broken reply ({type(exc).__name__})"
            except _Failure as exc:
                error = str(exc)
                self.cache.log_request(
                    key, shown, attempt, at, time.perf_counter() - t0, None, None, error
                )
                raise
            elapsed = time.perf_counter() - t0
            self.cache.log_request(
                key,
                shown,
                attempt,
                at,
                elapsed,
                status,
                len(content),
                secrets.redact(error or "") or None,
            )
            if status in REDIRECT_STATUSES and location:
                redirects += 1
                target = self._unroute(urljoin(self._route(url), location))
                try:
                    target = normalise_url(target)
                    host = check_url(target, self._allowed)
                except UnsafeURL as exc:
                    raise _Failure(f"refused redirect to {strip_secrets(target)}: {exc}") from None
                if redirects > MAX_REDIRECTS:
                    raise _Failure(f"more than {MAX_REDIRECTS} redirects")
                url, attempt = target, attempt - 1
                continue
            retryable = error is not None or status in RETRY_STATUSES
            if not retryable:
                return _Reply(status, content, attempt, time.perf_counter() - started)
            what = error or f"HTTP {status}"
            if attempt > settings.retries:
                raise _Failure(f"{what} after {attempt} attempts")
            delay = min(settings.max_backoff_s, settings.backoff_s * 2 ** (attempt - 1))
            delay = delay / 2 + random.uniform(0, delay / 2)  # "equal jitter"
            if retry_after is not None:
                if retry_after > settings.max_backoff_s:
                    raise _Failure(f"{what}; the server asks to wait {retry_after:g} s")
                delay = max(delay, retry_after)
            log.info("%s from %s; retry %d in %.1f s", what, host, attempt, delay)
            time.sleep(delay)

    @property
    def _session(self) -> requests.Session:
        session = getattr(self._sessions, "session", None)
        if session is None:
            session = requests.Session()
            session.trust_env = False  # no proxies or .netrc credentials from the environment
            session.headers["User-Agent"] = f"helixbench/{__version__}"
            self._sessions.session = session
        return session

    def _send(
        self, url: str, body: tuple[str, dict] | None
    ) -> tuple[int, bytes, Mapping[str, str]]:
        settings = self.settings
        deadline = time.monotonic() + settings.timeout_s
        if body is None:
            sent = self._session.get(
                url, stream=True, allow_redirects=False, timeout=settings.timeout_s
            )
        else:
            kind, fields_ = body
            payload = {"json": fields_} if kind == "json" else {"files": _form(fields_)}
            sent = self._session.post(
                url, stream=True, allow_redirects=False, timeout=settings.timeout_s, **payload
            )
        with sent as response:
            chunks, size = [], 0
            for chunk in response.iter_content(65536):
                size += len(chunk)
                if size > settings.max_bytes:
                    raise _Failure(f"reply larger than {settings.max_bytes} bytes; not kept")
                if time.monotonic() > deadline:
                    raise requests.Timeout()
                chunks.append(chunk)
            return response.status_code, b"".join(chunks), response.headers


def route_table(routes: Mapping[str, str]) -> list[tuple[str, str]]:
    """``tools.routes`` as (public prefix, target) pairs, the most specific first, each
    prefix in the canonical spelling requests are matched in. A prefix of a host alone
    (``https://blast.ncbi.nlm.nih.gov``) covers every path of it; one with a path covers
    that path and what lies below it."""
    table = []
    for prefix, target in routes.items():
        try:
            public = normalise_url(prefix)
        except UnsafeURL as exc:
            raise ValueError(f"tools.routes: {prefix!r} is not a URL ({exc})") from None
        if urlsplit(public).query or not urlsplit(public).hostname:
            raise ValueError(f"tools.routes: {prefix!r} is not a URL prefix (scheme, host, path)")
        if public.endswith("/") and not target.endswith("/"):
            target += "/"
        table.append((public, target))
    return sorted(table, key=lambda pair: -len(pair[0]))


def _covers(prefix: str, url: str) -> bool:
    """Whether a route's ``prefix`` covers ``url``: the same, or below it by a path
    segment (``/blast`` covers ``/blast/Blast.cgi``, not ``/blastx``) or a query."""
    if not url.startswith(prefix):
        return False
    rest = url[len(prefix) :]
    return prefix.endswith("/") or rest[:1] in ("", "/", "?")


def request_key(request: ToolRequest) -> str:
    """The cache key of a call: its canonical URL, and for a POST the digest of its body."""
    key = canonical_url(request.url)
    if request.body is not None:
        key += "#post:" + sha256_json([request.body_kind, request.body])
    return key


def _form(fields_: dict) -> dict:
    """Multipart form fields as ``requests`` sends them (no file names)."""
    return {name: (None, str(value)) for name, value in fields_.items()}


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
