"""The gateways of one run job: the model gateway, the tool gateway and the MCP
server, each on 127.0.0.1 and on a Unix socket the sandbox's doors reach, the
channel the sandboxes' first processes record refusals on, and the sandbox
(:mod:`.sandbox`) its agents and code tools run in."""

from __future__ import annotations

import atexit
import secrets as _secrets
import shutil
import tempfile
from pathlib import Path

from . import Sessions, sandbox


class Gateways:
    """The model, tool and MCP gateways of one run job, started once, closed at exit,
    and the sandbox whose doors they are (no model gateway where ``model`` is None:
    code tools call no model)."""

    def __init__(
        self,
        model,
        executor,
        served_name: str,
        reply_cap: int | None = None,
        demonstrations=None,
        code=None,
        limits=None,
        max_tokens_ceiling: int | None = None,
    ):
        # code: the code tools' settings (gateway.code.CodeSettings), where the method
        # names python or bash; their executions cached in the executor's code_cache.
        # limits: the method's sandbox caps (sandbox.limits.Limits; its body_mb is the
        # gateways' body limit too); max_tokens_ceiling: the most tokens a call may ask.
        from ..tools.functions import NCBIFunctions
        from .mcp_tools import MCPGateway
        from .model_api import MAX_TOKENS_CEILING, ModelGateway
        from .sandbox import FRONT_SOCKET, RECORDS_SOCKET
        from .sandbox.limits import MB, Limits
        from .tool_api import ToolGateway

        self.sessions = Sessions()
        self.demonstrations = demonstrations
        # The run job's own directory for its agents' questions (mode 700, removed at
        # exit): another job's agents do not share it.
        self.workdir = Path(tempfile.mkdtemp(prefix="helixbench-agents-"))
        doors = self.workdir / ".doors"  # the gateways' Unix sockets, for the sandboxes
        doors.mkdir(mode=0o700)
        limits = limits or Limits()
        body = int(limits.body_mb * MB)
        ceiling = max_tokens_ceiling or MAX_TOKENS_CEILING
        # The key of the records channel, which only the sandboxes' first processes hold.
        recorder_key = _secrets.token_hex(16)
        self.model = None
        if model is not None:
            self.model = ModelGateway(
                model, self.sessions, served_name, max_tokens_ceiling=ceiling, body_limit=body
            )
            self.model.serve_unix(doors / "model.sock")
            self.model.__enter__()
        self.tools = ToolGateway(
            executor, self.sessions, reply_cap, demonstrations, recorder_key, body
        )
        for name in ("tool.sock", FRONT_SOCKET, RECORDS_SOCKET):
            self.tools.serve_unix(doors / name)
        self.tools.__enter__()
        languages = code.languages if code is not None else ()
        functions = NCBIFunctions(executor)
        self.mcp = MCPGateway(functions, self.sessions, doors / "mcp.sock", languages, body)
        self.mcp.__enter__()
        ports = {self.tools.port: "tool.sock", self.mcp.port: "mcp.sock"}
        if self.model is not None:
            ports[self.model.port] = "model.sock"
        self.sandbox = sandbox.Sandbox(
            self.workdir, doors, executor.settings.allowed_hosts, ports, recorder_key
        )
        self.code = None
        if code is not None:
            from ..paths import CODE_ENV
            from .code import CodeTools, ExecutionCache

            cache = ExecutionCache(executor.settings.code_cache)
            self.code = CodeTools(self, CODE_ENV, cache, executor.settings.mode, code)
        self.mcp.code = self.code
        atexit.register(self.close)

    def close(self) -> None:
        for server in (self.mcp, self.tools, self.model):
            if server is not None:
                server.__exit__(None, None, None)
        shutil.rmtree(self.workdir, ignore_errors=True)
