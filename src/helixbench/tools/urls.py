"""Which model-written URLs may leave the process, and how they are keyed and shown.

A model writes URLs; the executor sends only those that pass :func:`check_url`:
``https``, a host on the allowlist (exact name, no IP literal), the default port,
no user-info. Credentials (``api_key``) and the identification NCBI asks for
(``tool``, ``email``) are added at send time and removed from every URL that is
stored or shown, so the cache key and the transcript never depend on, or
contain, them.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit

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


def strip_secrets(url: str) -> str:
    """``url`` without secret parameters, the rest of the query kept byte for byte."""
    base, sep, query = url.partition("?")
    if not sep:
        return url
    kept = [p for p in query.split("&") if _param_name(p) not in SECRET_PARAMS]
    return base + ("?" + "&".join(kept) if kept else "")


def canonical_url(url: str) -> str:
    """The cache key of ``url``: secrets removed, parameters decoded and sorted."""
    parts = urlsplit(strip_secrets(url))
    pairs = sorted(parse_qsl(parts.query, keep_blank_values=True))
    query = urlencode(pairs, safe=",:")
    host = (parts.hostname or "").lower()
    return f"{parts.scheme}://{host}{parts.path or '/'}" + (f"?{query}" if query else "")


def query_params(url: str) -> dict[str, str]:
    """The URL's decoded query parameters (the last value of a repeated one)."""
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret value replaced, for error messages and logs."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _param_name(pair: str) -> str:
    return unquote_plus(pair.partition("=")[0]).lower()
