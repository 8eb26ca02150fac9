"""Ensembl's and UniProt's REST APIs as functions (helixbench.tools.rest): a call
becomes the service's public URL, sent through the tool executor (allowlisted at
the published rates, cached) to a loopback server that stands in for both; a path
that tries to leave the API is a tool error and no request."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

import pytest

from helixbench.loopback import LoopbackServer, QuietHandler
from helixbench.methods.toolsets import toolset
from helixbench.tools import SETTINGS_ENV


@dataclass
class RestState:
    received: list = field(default_factory=list)  # (service, path, query)


class _Handler(QuietHandler):
    state: RestState

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        parts = urlsplit(self.path)
        service, _, path = parts.path.lstrip("/").partition("/")
        query = dict(parse_qsl(parts.query))
        self.state.received.append((service, path, query))
        body = json.dumps({"service": service, "path": path, "query": query}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def rest(tmp_path, monkeypatch):
    with LoopbackServer(RestState(), _Handler) as server:
        settings = {
            "cache": str(tmp_path / "tools.sqlite"),
            "budgets": str(tmp_path / "budgets"),
            "routes": {
                "https://rest.ensembl.org/": f"{server.base}/ensembl/",
                "https://rest.uniprot.org/": f"{server.base}/uniprot/",
            },
        }
        monkeypatch.setenv(SETTINGS_ENV, json.dumps(settings))
        yield server


def test_a_call_is_the_services_url_through_the_executor_and_its_cache(rest):
    tools = toolset({"tools": ["ensembl", "uniprot"]}, "live", 10_000)
    assert [s["function"]["name"] for s in tools.schemas()] == ["ensembl", "uniprot"]
    executor = tools.rest.executor
    assert executor.settings.rate("rest.ensembl.org") == 15.0
    assert executor.settings.rate("rest.uniprot.org") == 5.0
    done = tools.call("ensembl", '{"path": "lookup/symbol/homo_sapiens/BRCA2"}', "Q1", 0)
    assert done.error is None and '"lookup/symbol/homo_sapiens/BRCA2"' in done.text
    (request,) = done.requests
    assert request.url == (
        "https://rest.ensembl.org/lookup/symbol/homo_sapiens/BRCA2?content-type=application%2Fjson"
    )
    arguments = {"path": "uniprotkb/search", "params": {"query": "gene:TP53", "size": 1}}
    done = tools.call("uniprot", json.dumps(arguments), "Q1", 1)
    assert rest.state.received[-1] == (
        "uniprot",
        "uniprotkb/search",
        {"query": "gene:TP53", "size": "1"},
    )
    assert done.error is None
    # Offline, the same calls are answered from the cache: nothing more is sent.
    sent = len(rest.state.received)
    offline = toolset({"tools": ["ensembl", "uniprot"]}, "offline", 10_000)
    again = offline.call("uniprot", json.dumps(arguments), "Q1", 1)
    assert again.text == done.text and len(rest.state.received) == sent


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "../../etc/passwd"},
        {"path": "https://evil.example/x"},
        {"path": "lookup/symbol/homo_sapiens/BRCA2?x=1"},
        {"path": ""},
        {"path": "info/ping", "params": ["not", "a", "mapping"]},
    ],
)
def test_a_path_that_leaves_the_api_is_a_tool_error_and_no_request(rest, arguments):
    tools = toolset({"tools": ["ensembl"]}, "live", 10_000)
    done = tools.call("ensembl", json.dumps(arguments), "Q2", 0)
    assert done.error and done.text.startswith("Error: ensembl:")
    assert not done.requests and rest.state.received == []
