"""Run first in a Python agent benchmarked by helixbench without a sandbox (``sandbox:
cooperative``; this directory leads its PYTHONPATH): the agent's web requests go to
helixbench's tool gateway, unchanged code. It holds only what cooperates: other
languages and clients are held by the sandbox alone.

- ``urllib.request`` and ``requests``: a request for ``http(s)://<host>/<path>`` is
  sent to ``<gateway>/<host>/<path>`` with the session's header; the gateway serves
  the hosts on its allowlist through helixbench's tool executor and refuses, and
  records, every other host.
- Any other connection (``http.client`` used directly, another HTTP library, a raw
  socket) to an address that is not one of the gateways' is refused here, and the
  refusal reported to the tool gateway so that the question's record shows it.

Nothing here runs unless ``HELIXBENCH_GATEWAY_TOOLS`` is set (helixbench sets it for
the agent's process only); an agent's own ``sitecustomize`` is not replaced: it is
imported after this one's patches, where one exists further down the path.
"""

from __future__ import annotations

import os


def _install() -> None:
    import http.client
    import socket
    import urllib.request
    from urllib.parse import quote, urlsplit

    tools = os.environ["HELIXBENCH_GATEWAY_TOOLS"].rstrip("/")
    token = os.environ.get("HELIXBENCH_GATEWAY_TOKEN", "")
    header = "X-Helixbench-Session"
    allowed = {
        (urlsplit(u).hostname, urlsplit(u).port)
        for u in os.environ.get("HELIXBENCH_GATEWAY_URLS", tools).split()
    }

    def rewrite(url: str) -> str:
        """``url`` as the tool gateway serves it; gateway URLs are left as they are."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or (parts.hostname, parts.port) in allowed:
            return url
        where = parts.netloc.rpartition("@")[2]
        return f"{tools}/{where}{quote(parts.path or '/', safe='/%:@!$&()*+,;=~-._')}" + (
            f"?{parts.query}" if parts.query else ""
        )

    # urllib: every opener (urlopen included) goes through OpenerDirector.open.
    original_open = urllib.request.OpenerDirector.open

    def open_(self, fullurl, data=None, *args, **kwargs):
        request = fullurl
        if not isinstance(request, urllib.request.Request):
            request = urllib.request.Request(request, data)
            data = None
        target = rewrite(request.full_url)
        if target != request.full_url:
            request.full_url = target
            request.add_header(header, token)
        return original_open(self, request, data, *args, **kwargs)

    urllib.request.OpenerDirector.open = open_

    # requests: every call goes through Session.request.
    try:
        import requests.sessions
    except ImportError:
        pass
    else:
        original_request = requests.sessions.Session.request

        def request_(self, method, url, *args, **kwargs):
            target = rewrite(url)
            if target != url:
                headers = dict(kwargs.pop("headers", None) or {})
                headers[header] = token
                kwargs["headers"] = headers
            return original_request(self, method, target, *args, **kwargs)

        requests.sessions.Session.request = request_

    # Everything else: only the gateways' addresses may be reached.
    original_connect = socket.socket.connect

    def report(host, port) -> None:
        try:
            gateway = urlsplit(tools)
            connection = http.client.HTTPConnection(gateway.hostname, gateway.port, timeout=5)
            connection.request(
                "GET", f"/_refused?host={quote(str(host))}&port={port}", headers={header: token}
            )
            connection.getresponse().read()
        except OSError:
            pass

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host, port = address[0], address[1]
            if (host, port) not in allowed and not (
                host == "localhost" and ("127.0.0.1", port) in allowed
            ):
                report(host, port)
                raise ConnectionRefusedError(
                    f"helixbench: {host}:{port} refused; an agent reaches only the gateways"
                )
        return original_connect(self, address)

    socket.socket.connect = connect


if os.environ.get("HELIXBENCH_GATEWAY_TOOLS"):
    _install()
