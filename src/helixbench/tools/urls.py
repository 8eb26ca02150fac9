"""Which model-written URLs may leave the process, and how they are keyed and shown.

A model writes URLs; the executor first brings each to one canonical spelling
(:func:`normalise_url`: lower-case scheme and host, default port dropped, dot
segments and doubled slashes removed from the path), then sends only those that
pass :func:`check_url`: ``https``, a host on the allowlist (exact name, no IP
literal), the default port, no user-info. Credentials (``api_key``) and the
identification NCBI asks for (``tool``, ``email``) are added at send time and
removed from every URL that is stored or shown, so the cache key and the
transcript never depend on, or contain, them.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode, urlsplit

# Never stored or shown; stripped from what a model writes, set by the executor.
SECRET_PARAMS = frozenset({"api_key", "tool", "email"})


class UnsafeURL(ValueError):
    """A URL the executor refuses to request; the message says why."""


def check_url(url: str, allowed_hosts: frozenset[str] | set[str]) -> str:
    """The URL's host, if the executor may request ``url``; else :class:`UnsafeURL`."""
    if any(c.isspace() or ord(c) < 32 or c == "\\" for c in url):
        raise UnsafeURL("URL contains whitespace, control characters or a backslash")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeURL(f"malformed URL ({exc})") from None
    if parts.scheme != "https":
        raise UnsafeURL(f"scheme {parts.scheme or '(none)'!r} refused; only https is allowed")
    if "@" in parts.netloc:
        raise UnsafeURL("user-info in the URL authority refused")
    host = (parts.hostname or "").lower()
    if not host:
        raise UnsafeURL("URL has no host")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        raise UnsafeURL(f"IP literal {host} refused; only named hosts on the allowlist")
    if port is not None and port != 443:
        raise UnsafeURL(f"port {port} refused; only the default https port")
    if host not in allowed_hosts:
        raise UnsafeURL(f"host {host} is not on the allowlist ({', '.join(sorted(allowed_hosts))})")
    return host


DEFAULT_PORTS = {"https": 443, "http": 80}


def normalise_url(url: str) -> str:
    """``url`` in one canonical spelling, so that one request has one cache key and one
    destination: scheme and host in lower case (a trailing dot dropped), the default
    port dropped, the path without ``.``/``..`` segments or empty ones (``//``), ``/``
    for an empty path; the query kept byte for byte, a fragment dropped.
    :class:`UnsafeURL` for a URL that cannot be parsed."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeURL(f"malformed URL ({exc})") from None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    netloc = parts.netloc.rpartition("@")[0] + "@" if "@" in parts.netloc else ""
    netloc += f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    segments: list[str] = []
    for segment in parts.path.split("/"):
        plain = unquote(segment)
        if plain in ("", "."):
            continue
        if plain == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    path = "/" + "/".join(segments)
    if parts.path.endswith("/") and segments:
        path += "/"
    return f"{scheme}://{netloc}{path}" + (f"?{parts.query}" if parts.query else "")


def abridged(url: str, keep: int = 200) -> str:
    """A URL too long to keep, as transcripts show it: its start and its length."""
    return url if len(url) <= keep else f"{url[:keep]}... ({len(url)} characters)"


def strip_secrets(url: str) -> str:
    """``url`` without secret parameters, the rest of the query kept byte for byte."""
    base, sep, query = url.partition("?")
    if not sep:
        return url
    kept = [p for p in query.split("&") if _param_name(p) not in SECRET_PARAMS]
    return base + ("?" + "&".join(kept) if kept else "")


def canonical_url(url: str) -> str:
    """The cache key of ``url``: normalised, secrets removed, parameters decoded and
    sorted by name alone (stably: a repeated parameter's values keep their order, for
    ``term=A&term=B`` is not the request ``term=B&term=A`` is)."""
    try:
        url = normalise_url(url)
    except UnsafeURL:  # never requested (the executor refuses it); keyed as written
        pass
    parts = urlsplit(strip_secrets(url))
    pairs = sorted(parse_qsl(parts.query, keep_blank_values=True), key=lambda pair: pair[0])
    query = urlencode(pairs, safe=",:")
    host = (parts.hostname or "").lower()
    return f"{parts.scheme}://{host}{parts.path or '/'}" + (f"?{query}" if query else "")


def query_params(url: str) -> dict[str, str]:
    """The URL's decoded query parameters (the last value of a repeated one)."""
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def _param_name(pair: str) -> str:
    return unquote_plus(pair.partition("=")[0]).lower()
