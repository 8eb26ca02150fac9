"""Ensembl's and UniProt's REST APIs as functions (``ensembl``, ``uniprot``), for
database questions (LAB-Bench's DbQA) answered by looking things up.

A call names a path of the service's REST API and its query parameters; it becomes
``https://rest.ensembl.org/<path>?<query>`` (JSON asked for) or
``https://rest.uniprot.org/<path>?<query>``, sent through the tool executor like
every tool call (the allowlist, each host's shared budget, the cache, the modes).
The hosts are allowlisted with their published limits: Ensembl's 55,000 requests
an hour (15 a second); UniProt publishes no number, and helixbench keeps to 5 a
second (``tools.rates`` sets either). Code (the ``python`` and ``bash`` tools) may
call both hosts through the same executor.
"""

from __future__ import annotations

import re
from dataclasses import replace
from urllib.parse import urlencode

from . import ToolRequest
from .executor import ToolSettings
from .functions import ArgumentError, ToolCall, parse_arguments, reply_text, schema

HOSTS = {"ensembl": "rest.ensembl.org", "uniprot": "rest.uniprot.org"}
RATES = {"rest.ensembl.org": 15.0, "rest.uniprot.org": 5.0}
_PATH = re.compile(r"^[A-Za-z0-9_.:,+\-/]+$")
_PARAMS = {
    "type": "object",
    "description": 'Query parameters, e.g. {"species": "homo_sapiens"}.',
    "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
}
FUNCTIONS = {
    "ensembl": (
        "GET a path of Ensembl's REST API (https://rest.ensembl.org), as JSON, e.g. "
        "lookup/symbol/homo_sapiens/BRCA2 or overlap/region/human/7:140424943-140624564.",
        {"path": {"type": "string", "description": "The path after the host."}, "params": _PARAMS},
        ["path"],
    ),
    "uniprot": (
        "GET a path of UniProt's REST API (https://rest.uniprot.org), e.g. "
        'uniprotkb/search with params {"query": "gene:TP53 AND organism_id:9606", '
        '"format": "json"}, or uniprotkb/P04637.json.',
        {"path": {"type": "string", "description": "The path after the host."}, "params": _PARAMS},
        ["path"],
    ),
}


def rest_settings(settings: ToolSettings, names) -> ToolSettings:
    """``settings`` with the hosts of ``names`` (``ensembl``, ``uniprot``) allowlisted at
    their limits (a rate the config sets is kept)."""
    hosts = [HOSTS[n] for n in names if n in HOSTS]
    allowed = tuple(dict.fromkeys((*settings.allowed_hosts, *hosts)))
    rates = {**{h: RATES[h] for h in hosts}, **settings.rates}
    return replace(settings, allowed_hosts=allowed, rates=rates)


def rest_url(name: str, arguments: dict) -> str:
    """The URL a call asks for; ArgumentError saying what is wrong with its arguments."""
    path = str(arguments.get("path") or "").strip().strip("/")
    segments = path.split("/")
    if not path or not _PATH.match(path) or ".." in segments or "" in segments:
        raise ArgumentError(f"{name}: a path of the API (letters, digits, / . : , + - _)")
    params = arguments.get("params") or {}
    if not isinstance(params, dict):
        raise ArgumentError(f"{name}: params must be a JSON object")
    params = {str(k): str(v) for k, v in params.items()}
    if name == "ensembl":
        params.setdefault("content-type", "application/json")
    query = f"?{urlencode(sorted(params.items()))}" if params else ""
    return f"https://{HOSTS[name]}/{path}{query}"


class RestFunctions:
    """Ensembl's and UniProt's REST APIs as functions, through ``executor``."""

    def __init__(self, executor, names, reply_cap: int = 10_000):
        self.executor = executor
        self.names = tuple(n for n in names if n in FUNCTIONS)
        self.reply_cap = reply_cap

    def schemas(self, documented: bool = True) -> list[dict]:
        return [
            schema(name, FUNCTIONS[name][0] if documented else None, *FUNCTIONS[name][1:])
            for name in self.names
        ]

    def call(self, name: str, raw_arguments, question_id: str, index: int) -> ToolCall:
        call = ToolCall(name, {}, "")
        try:
            call.arguments = parse_arguments(raw_arguments)
            url = rest_url(name, call.arguments)
        except ValueError as exc:
            call.error, call.text = str(exc), f"Error: {exc}"
            return call
        result = self.executor.call(ToolRequest(url, question_id, index))
        call.requests.append(result)
        call.error = result.error
        call.text = (
            f"Error: {result.error}" if result.error else reply_text(result.value(), self.reply_cap)
        )
        return call
