"""The tools a method offers, by name (``tools: [ncbi, python, bash, ensembl, uniprot]``):
NCBI's functions (:mod:`helixbench.tools.functions`), Ensembl's and UniProt's REST
APIs (:mod:`helixbench.tools.rest`) and code (:mod:`helixbench.gateway.code`), behind
one ``schemas`` and one ``call``. Each run job's code tools share one sandbox and its
tool gateway, through which the code's own requests go (and are recorded under the
question).
"""

from __future__ import annotations

import threading

from ..gateway.code import LANGUAGES, CodeCall, CodeSettings, CodeTools
from ..gateway.gateways import Gateways
from ..gateway.sandbox import limits
from ..tools import create_toolbox, tool_settings
from ..tools.executor import ToolExecutor, ToolSettings
from ..tools.functions import NCBIFunctions, ToolCall, parse_arguments
from ..tools.rest import FUNCTIONS as REST
from ..tools.rest import RestFunctions, rest_settings

TOOLSETS = ("ncbi", *LANGUAGES, *REST)
DEFAULT = ("ncbi",)


class Toolset:
    """The tools of one method: ``names`` from the method's ``tools``."""

    def __init__(self, names, ncbi=None, rest=None, code: CodeTools | None = None):
        self.names, self.ncbi, self.rest, self.code = tuple(names), ncbi, rest, code

    def schemas(self, documented: bool = True) -> tuple[dict, ...]:
        found = []
        for part in (self.ncbi, self.rest, self.code):
            if part is not None:
                found += part.schemas(documented)
        return tuple(found)

    def begin(self, question_id: str) -> None:
        """A question starts (its code's scratch folder emptied)."""
        if self.code is not None:
            self.code.begin(question_id)

    def call(self, name: str, raw_arguments, question_id: str, index: int):
        if self.code is not None and name in self.code.names:
            try:
                code = str(parse_arguments(raw_arguments).get("code") or "")
            except ValueError as exc:
                return self.refuse(name, raw_arguments, str(exc))
            if not code.strip():
                return self.refuse(name, raw_arguments, f"{name} needs code")
            return CodeCall(self.code.run(name, code, question_id), index)
        if self.rest is not None and name in self.rest.names:
            return self.rest.call(name, raw_arguments, question_id, index)
        if self.ncbi is not None:  # (an unknown name: NCBI's functions say which exist)
            return self.ncbi.call(name, raw_arguments, question_id, index)
        return self.refuse(name, raw_arguments, f"unknown function {name!r}")

    def refuse(self, name: str, raw_arguments, why: str) -> ToolCall:
        try:
            arguments = parse_arguments(raw_arguments)
        except ValueError:
            arguments = {}
        return ToolCall(name, arguments, f"Error: {why}", error=why)


_GATEWAYS: dict[tuple, Gateways] = {}
_LOCK = threading.Lock()


def code_settings(spec: dict, languages) -> CodeSettings:
    given = spec.get("code") or {}
    return CodeSettings(
        languages=tuple(languages),
        timeout_s=float(given.get("timeout_s", CodeSettings.timeout_s)),
        limits=limits.Limits.from_spec(
            {"cpu_s": 60.0, "output_mb": 8.0, **given.get("limits", {})}
        ),
    )


def toolset(spec: dict, mode: str, reply_cap: int) -> Toolset:
    """The tools a method's spec names, each through the run's tool executor (one code
    sandbox, and its gateways, per run job and mode)."""
    names = tuple(spec.get("tools") or DEFAULT)
    languages = [n for n in names if n in LANGUAGES]
    raw = tool_settings(mode)
    if mode == "replay":  # a recording's replies: nothing else is reachable
        executor = create_toolbox(raw)
    else:  # code may look things up where the REST functions do
        hosts = (*names, *(REST if languages else ()))
        settings = rest_settings(ToolSettings.from_config(raw), hosts)
        executor = ToolExecutor(settings)
    ncbi = NCBIFunctions(executor, reply_cap) if "ncbi" in names else None
    rest = RestFunctions(executor, names, reply_cap) if set(names) & set(REST) else None
    code = None
    if languages:
        caps = code_settings(spec, languages)
        key = (mode, names, repr(caps))
        with _LOCK:
            if key not in _GATEWAYS:
                _GATEWAYS[key] = Gateways(None, executor, "", code=caps)
        code = _GATEWAYS[key].code
    return Toolset(names, ncbi, rest, code)
