"""One loopback server standing in for GeneAgent's web APIs: g:Profiler g:GOSt,
Enrichr (addList, enrich), PubTator3's AgentAPI and the E-utils calls the gene-set
tools make. Replies are shaped like the real services' (recorded-style), built from
the genes asked about; faults can be injected; every request is logged."""

from __future__ import annotations

import collections
import json
import threading
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default
from urllib.parse import parse_qsl, urlsplit

from helixbench.loopback import LoopbackServer, QuietHandler
from helixbench.tools.genesets import PUBTATOR_URL


@dataclass
class GeneSetServerState:
    faults: collections.deque = field(default_factory=collections.deque)  # ("500",) ...
    received: list = field(default_factory=list)  # (service, path, query, body)
    lists: dict = field(default_factory=dict)  # Enrichr userListId -> genes
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, service: str) -> list:
        return [r for r in self.received if r[0] == service]


class GeneSetServer(LoopbackServer):
    def __init__(self, state: GeneSetServerState | None = None):
        super().__init__(state or GeneSetServerState(), _Handler)

    def routes(self) -> dict:
        """``tools.routes`` that send the services' public URLs here."""
        return {
            "https://biit.cs.ut.ee/gprofiler/api/gost/profile/": f"{self.base}/gprofiler/",
            "https://maayanlab.cloud/Enrichr/": f"{self.base}/enrichr/",
            PUBTATOR_URL: f"{self.base}/pubtator/",
            "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/": f"{self.base}/eutils/",
        }


class _Handler(QuietHandler):
    state: GeneSetServerState

    def _record(self, body) -> tuple[str, str, dict] | None:
        parts = urlsplit(self.path)
        service = parts.path.strip("/").split("/")[0]
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        with self.state.lock:
            self.state.received.append((service, parts.path, query, body))
            fault = self.state.faults.popleft() if self.state.faults else None
        if fault and fault[0] == "500":
            self._send(500, {"error": "server error"})
            return None
        return service, parts.path, query

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        got = self._record(None)
        if got is None:
            return
        service, path, query = got
        if service == "enrichr" and path.endswith("/enrich"):
            library = query["backgroundType"]
            genes = self.state.lists.get(query["userListId"], [])
            rows = [[1, f"{library} pathway of {genes[0]}", 0.0001, 5.0, 40.0, genes, 0.001]]
            return self._send(200, {library: rows})
        if service == "pubtator":
            kind = path.strip("/").split("/")[1]
            name = query.get("name", "")
            return self._send(200, {"results": [{"name": name, "kind": kind, "count": 3}]})
        if service == "eutils":
            return self._eutils(path, query)
        self._send(404, {"error": "not found"})

    def _eutils(self, path: str, query: dict) -> None:
        if path.endswith("esearch.fcgi"):
            return self._send(200, {"esearchresult": {"idlist": ["3845"]}})
        if path.endswith("esummary.fcgi"):
            record = {
                "name": "KRAS",
                "description": "KRAS proto-oncogene, GTPase",
                "summary": "A member of the small GTPase superfamily; MAPK signaling.",
            }
            return self._send(200, {"result": {"3845": record}})
        if path.endswith("efetch.fcgi"):
            return self._send(200, b"1. Title of an abstract.\n\nAbstract text.", "text/plain")
        self._send(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        kind = self.headers.get("Content-Type", "")
        if kind.startswith("multipart/form-data"):  # Enrichr's addList
            message = BytesParser(policy=default).parsebytes(
                b"Content-Type: " + kind.encode() + b"\r\n\r\n" + raw
            )
            body = {
                part.get_param("name", header="content-disposition"): part.get_content()
                for part in message.iter_parts()
            }
        else:
            body = json.loads(raw or b"{}")
        got = self._record(body)
        if got is None:
            return
        service, path, _query = got
        if service == "gprofiler":
            genes = body.get("query", [])
            terms = [
                {"name": f"process of {genes[0]}", "native": "GO:0000001", "source": "GO:BP",
                 "p_value": 1e-6},
                {"name": "a broader process", "native": "GO:0000002", "source": "GO:BP",
                 "p_value": 1e-3},
            ]  # fmt: skip
            return self._send(200, {"result": terms})
        if service == "enrichr" and path.endswith("/addList"):
            with self.state.lock:
                list_id = str(100 + len(self.state.lists))
                self.state.lists[list_id] = body["list"].split()
            return self._send(200, {"userListId": int(list_id), "shortId": "abc"})
        self._send(404, {"error": "not found"})

    def _send(self, status: int, payload, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
