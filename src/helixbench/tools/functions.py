"""Tools offered to a model through function calling: what is shared by every set of
them (the call record, the schemas, checking a call's arguments), and NCBI's web
APIs as functions (:class:`NCBIFunctions`).

The NCBI functions are E-utils ``esearch``, ``efetch``, ``esummary`` and ``elink``
and one ``blast`` that submits a sequence and waits for its hits. One ``blast``
rather than a Put and a Get: the wait is NCBI's to rule (the first status check
after RTOE, then at most one a minute, results once READY), which the executor
already does for a Get; a model handed the RID would poll as fast as it could
write calls, and every poll it made would spend one of its tool rounds.

A call becomes the URL a GeneGPT model would have written (the same parameters,
values URL-encoded), so it goes through the same executor: the allowlist, the
shared budgets, the cache and the offline/live/refresh modes, and a call that
asks what Codex asked in 2023 gets the seeded recorded reply offline. A call with
bad arguments (not JSON, an unknown function, a missing or malformed field) is a
tool error returned to the model: it never becomes a request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..genegpt_format import blast_rid
from . import ToolRequest, ToolResult

EUTILS = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
BLAST = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi"
# The BLAST search the demonstrations and GeneGPT's documentation describe.
BLAST_PUT = {
    "CMD": "Put",
    "PROGRAM": "blastn",
    "MEGABLAST": "on",
    "DATABASE": "nt",
    "FORMAT_TYPE": "XML",
}
BLAST_GET = {"CMD": "Get", "FORMAT_TYPE": "Text"}


@dataclass
class ToolCall:
    """One function call a model made, and every request it sent."""

    name: str
    arguments: dict
    text: str  # what the model is shown
    requests: list[ToolResult] = field(default_factory=list)
    error: str | None = None

    def describe(self) -> dict:
        return {
            "tool": self.name,
            "arguments": self.arguments,
            "url": self.requests[0].url if self.requests else None,
            "requests": [r.describe(None) for r in self.requests],
            "error": self.error,
            "status": self.requests[-1].status if self.requests else None,
            "cache": ",".join(sorted({r.cache or "" for r in self.requests})) or None,
            "rendered": self.text,
        }


def schema(name: str, description: str | None, parameters: dict, required: list[str]) -> dict:
    """An OpenAI function-calling schema; without ``description`` (tool documentation
    off) the function and its parameters are named only."""
    if description is None:
        parameters = {
            k: {key: v for key, v in p.items() if key != "description"}
            for k, p in parameters.items()
        }
    function = {"name": name}
    if description is not None:
        function["description"] = description
    function["parameters"] = {"type": "object", "properties": parameters, "required": required}
    return {"type": "function", "function": function}


def parse_arguments(raw) -> dict:
    """A call's arguments as the model wrote them (a JSON object, or one already
    parsed); ValueError saying what is wrong."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the arguments are not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError("the arguments are not a JSON object")
    return value


class ArgumentError(ValueError):
    """A call's arguments that cannot make a request; the message says why."""


# The order of an E-utils URL's parameters in GeneGPT's demonstrations.
URL_ORDER = ("dbfrom", "db", "retmax", "retmode", "sort", "term", "id")
_DATABASE = re.compile(r"^[a-z]{2,20}$")
_SEQUENCE = re.compile(r"^[ACGTURYKMSWBDHVN]+$")
_ID = re.compile(r"^[A-Za-z0-9_.]+$")

_DB = {"type": "string", "description": "Entrez database: gene, snp, omim, nuccore, pubmed, ..."}
_IDS = {"type": "string", "description": "Record ids, comma-separated, e.g. 19171,5699."}
_RETMAX = {"type": "integer", "description": "At most this many records."}
_RETMODE = {"type": "string", "enum": ["json", "xml"], "description": "The reply's format."}
FUNCTIONS = {
    "esearch": (
        "Search an Entrez database for a term; returns the ids of the matching records.",
        {
            "db": _DB,
            "term": {"type": "string", "description": "The search term, e.g. LMP10."},
            "retmax": _RETMAX,
            "retmode": _RETMODE,
            "sort": {"type": "string", "description": "Order of the ids, e.g. relevance."},
        },
        ["db", "term"],
    ),
    "efetch": (
        "Full records of ids in an Entrez database (names, locations, descriptions).",
        {"db": _DB, "id": _IDS, "retmax": _RETMAX, "retmode": _RETMODE},
        ["db", "id"],
    ),
    "esummary": (
        "Summaries of records of an Entrez database by id (name, chromosome, location).",
        {"db": _DB, "id": _IDS, "retmax": _RETMAX, "retmode": _RETMODE},
        ["db", "id"],
    ),
    "elink": (
        "The records of another Entrez database linked to the given ids.",
        {
            "dbfrom": {"type": "string", "description": "The database the ids are of."},
            "db": _DB,
            "id": _IDS,
            "retmode": _RETMODE,
        },
        ["dbfrom", "db", "id"],
    ),
    "blast": (
        "Align a DNA sequence with BLAST (megablast against nt) and return the hits with "
        "their species and chromosome locations. Takes a minute or more.",
        {
            "sequence": {"type": "string", "description": "The DNA sequence (A, C, G, T)."},
            "hitlist_size": {"type": "integer", "description": "At most this many hits."},
        },
        ["sequence"],
    ),
}


class NCBIFunctions:
    """NCBI's web APIs as functions, each call sent through ``executor`` (a Toolbox)."""

    def __init__(self, executor, reply_cap: int = 10_000):
        self.executor = executor
        self.reply_cap = reply_cap

    def schemas(self, documented: bool = True) -> list[dict]:
        return [
            schema(name, description if documented else None, parameters, required)
            for name, (description, parameters, required) in FUNCTIONS.items()
        ]

    def call(self, name: str, raw_arguments, question_id: str, index: int) -> ToolCall:
        """Run one call; a bad call is a tool error in the returned record, never a request."""
        call = ToolCall(name, {}, "")
        try:
            call.arguments = parse_arguments(raw_arguments)
            if name not in FUNCTIONS:
                raise ArgumentError(f"unknown function {name!r}; available: {', '.join(FUNCTIONS)}")
            urls = function_urls(name, call.arguments)
        except ValueError as exc:
            call.error = str(exc)
            call.text = f"Error: {exc}"
            return call
        result = self._request(call, urls[0], question_id, index)
        if name == "blast" and result.error is None:
            # NCBI's page, or a seeded recording's RID: a Put serves every protocol alike
            rid = blast_rid(result.value())
            if rid is None:
                result = ToolResult(result.url, index, error="no RID in BLAST's reply")
            else:  # the executor waits for the search as NCBI asks, then fetches it
                get = {**BLAST_GET, "RID": rid.strip()}
                result = self._request(call, f"{BLAST}?{urlencode(get)}", question_id, index)
        call.error = result.error
        call.text = (
            f"Error: {result.error}" if result.error else reply_text(result.value(), self.reply_cap)
        )
        return call

    def refuse(self, name: str, raw_arguments, why: str) -> ToolCall:
        """A call that is not run: a tool error that says ``why``."""
        try:
            arguments = parse_arguments(raw_arguments)
        except ValueError:
            arguments = {}
        return ToolCall(name, arguments, f"Error: {why}", error=why)

    def _request(self, call: ToolCall, url: str, question_id: str, index: int) -> ToolResult:
        result = self.executor.call(
            ToolRequest(url, question_id, index, needed_bytes=self.reply_cap)
        )
        call.requests.append(result)
        return result


def function_urls(name: str, arguments: dict) -> list[str]:
    """The URL a call of ``name`` with ``arguments`` sends first (ArgumentError if
    they cannot make one): the E-utils request, or BLAST's Put."""
    _, parameters, required = FUNCTIONS[name]
    missing = [k for k in required if arguments.get(k) in (None, "", [])]
    if missing:
        raise ArgumentError(f"{name} needs {', '.join(missing)}")
    unknown = sorted(set(arguments) - set(parameters))
    if unknown:
        raise ArgumentError(f"{name} takes no {', '.join(unknown)}")
    if name == "blast":
        sequence = re.sub(r"\s+", "", str(arguments["sequence"])).upper()
        if not _SEQUENCE.match(sequence):
            raise ArgumentError("sequence: only the letters of nucleotides (A, C, G, T, ...)")
        query = {**BLAST_PUT, "QUERY": sequence}
        query["HITLIST_SIZE"] = _integer(arguments.get("hitlist_size", 5), "hitlist_size")
        return [f"{BLAST}?{urlencode(query)}"]
    query = {}
    for key in sorted(parameters, key=URL_ORDER.index):  # as GeneGPT's URLs order them
        if arguments.get(key) in (None, ""):
            continue
        value = arguments[key]
        if key in ("db", "dbfrom"):
            if not isinstance(value, str) or not _DATABASE.match(value):
                raise ArgumentError(f"{key}: a database name in lower-case letters, e.g. gene")
        elif key == "id":
            value = _ids(value)
        elif key == "retmax":
            value = _integer(value, key)
        elif not isinstance(value, str | int | float):
            raise ArgumentError(f"{key}: a string")
        query[key] = str(value)
    return [f"{EUTILS}{name}.fcgi?{urlencode(query, safe=',')}"]


def call_of_url(url: str) -> tuple[str, dict] | None:
    """The function call that sends ``url`` (the inverse of :func:`function_urls`), for
    the demonstrations; None for a URL no function sends (a BLAST Get: the ``blast``
    function's own second request)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if url.startswith(BLAST):
        if query.get("CMD") != "Put":
            return None
        arguments = {"sequence": query["QUERY"]}
        if query.get("HITLIST_SIZE"):
            arguments["hitlist_size"] = int(query["HITLIST_SIZE"])
        return "blast", arguments
    name = parts.path.rsplit("/", 1)[-1].removesuffix(".fcgi")
    if name not in FUNCTIONS:
        return None
    arguments = {k: int(v) if k == "retmax" else v for k, v in query.items()}
    return name, arguments


def _ids(value) -> str:
    items = value if isinstance(value, list) else str(value).split(",")
    ids = [str(i).strip() for i in items if str(i).strip()]
    if not ids or not all(_ID.match(i) for i in ids):
        raise ArgumentError("id: record ids (letters, digits), comma-separated")
    return ",".join(ids)


def _integer(value, key: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{key}: a whole number") from None
    if not 1 <= number <= 10_000:
        raise ArgumentError(f"{key}: between 1 and 10000")
    return number


def reply_text(value: bytes | str, cap: int | None = None) -> str:
    """A reply as a function's result shows it: its first ``cap`` bytes, decoded.

    Bytes, not characters, as GeneGPT's loop cuts replies: a reply seeded from a
    recording holds only the first 10,000 bytes upstream kept, and the same cut of a
    live reply shows the model the same text (a character cap would reach past the
    seeded bytes wherever a reply has non-ASCII text)."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    return (value if cap is None else value[:cap]).decode("utf-8", "replace")
