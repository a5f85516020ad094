"""MCP server configuration: the common ``{"mcpServers": {name: {...}}}`` format, checked.

A server is either a process spoken to over stdio::

    {"command": "python", "args": ["server.py"], "env": {"TOKEN": "${TOKEN}"}, "cwd": "..."}

or an HTTP endpoint (streamable HTTP unless ``transport`` says ``sse``)::

    {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}

smart-agent's own keys, all optional:

* ``tool_prefix``: tools are named ``<prefix>__<tool>`` (default prefix: the server's name;
  ``""``: the tool's own name);
* ``side_effects`` (default **true**: an MCP tool may change anything, so
  ``approve side-effects`` covers it), ``timeout_s`` (one call; default: the run's
  ``tool_timeout_s``), ``retries``, ``cost``: the tools' ``ToolMeta``;
* ``tools``: the tools to offer, a list of names or ``{name: {side_effects, timeout_s,
  retries, cost}}`` to set one tool's metadata (default: all the server has);
* ``start_timeout_s``: how long the server may take to start and list its tools (default 30).

Every problem is one line naming the file, the server and the field. The same checks
serve any mapping of servers (``parse_mcp_servers``), e.g. ``mcp_servers`` in another file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .registry import ToolMeta

__all__ = ["McpConfigError", "McpServer", "load_mcp_config", "parse_mcp_servers"]

NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
DEFAULT_START_TIMEOUT_S = 30.0
TRANSPORTS = {"stdio": "stdio", "streamable_http": "streamable_http", "streamable-http": "streamable_http",
              "http": "streamable_http", "sse": "sse"}
META_KEYS = {"side_effects", "timeout_s", "retries", "cost"}
OWN_KEYS = {"tool_prefix", "tools", "start_timeout_s", *META_KEYS}
STDIO_KEYS = {"command", "args", "env", "cwd", "transport"}
HTTP_KEYS = {"url", "transport", "headers"}


class McpConfigError(ValueError):
    """A configuration that cannot be used (one line: file, server, field, why)."""


@dataclass(frozen=True)
class McpServer:
    """One configured server: how to reach it and how its tools are named and described."""

    name: str
    connection: dict[str, Any]  # a langchain-mcp-adapters connection (with "transport")
    prefix: str
    meta: ToolMeta  # the default ToolMeta of its tools (source "mcp:<name>", tag "mcp")
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    allowed: tuple[str, ...] | None = None  # None: every tool the server lists
    tool_meta: dict[str, ToolMeta] = field(default_factory=dict)

    def tool_name(self, tool: str) -> str:
        return f"{self.prefix}__{tool}" if self.prefix else tool

    def meta_of(self, tool: str) -> ToolMeta:
        return self.tool_meta.get(tool, self.meta)

    def may_name(self, name: str) -> bool:
        """Whether ``name`` can be one of this server's tools (before it is started): one of
        its allowed tools, or, when it offers all, any ``<prefix>__<tool>``."""
        if self.allowed is not None:
            return name in {self.tool_name(t) for t in self.allowed}
        return bool(self.prefix) and name.startswith(self.prefix + "__") and len(name) > len(self.prefix) + 2


def load_mcp_config(path: str | Path, *, what: str = "MCP config") -> list[McpServer]:
    """The servers of a JSON file ``{"mcpServers": {...}}``; ``McpConfigError`` (one line) if bad.
    ``what`` names where the path came from when the file cannot be read (``--mcp-config``)."""
    from ..config.files import InputFileError, load_json, read_text_file

    path = Path(path)
    try:
        data = load_json(read_text_file(path, what=what), what=str(path))
    except InputFileError as exc:
        raise McpConfigError(str(exc)) from None
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise McpConfigError(f'{path}: expected an object {{"mcpServers": {{name: {{...}}}}}}')
    return parse_mcp_servers(data["mcpServers"], str(path), base=path.parent)


def parse_mcp_servers(servers: Mapping[str, Any], where: str, *, base: Path | None = None) -> list[McpServer]:
    """Check a mapping ``{name: server}``; ``where`` names its origin in errors, ``base`` is the
    folder a relative ``cwd`` is resolved against."""
    out = [_server(name, spec, where, base) for name, spec in servers.items()]
    names: dict[str, str] = {}
    for server in out:  # two servers may not give their tools the same names
        if server.prefix and server.prefix in names:
            raise McpConfigError(
                f"{where}: mcpServers.{server.name}.tool_prefix: {server.prefix!r} is already used by "
                f"{names[server.prefix]!r}"
            )
        names[server.prefix] = server.name
    return out


def _server(name: Any, spec: Any, where: str, base: Path | None) -> McpServer:
    at = f"{where}: mcpServers.{name}"

    def bad(key: str, why: str) -> McpConfigError:
        return McpConfigError(f"{at}.{key}: {why}")

    if not isinstance(name, str) or not NAME_RE.match(name):
        raise McpConfigError(f"{at}: a server name is 1-40 letters, digits, '_' or '-'")
    if not isinstance(spec, Mapping):
        raise McpConfigError(f"{at}: expected an object with 'command' or 'url'")
    has_command, has_url = "command" in spec, "url" in spec
    if has_command == has_url:
        raise McpConfigError(f"{at}: give exactly one of 'command' (stdio) or 'url' (HTTP)")
    transport = spec.get("transport", "stdio" if has_command else "streamable_http")
    if transport not in TRANSPORTS:
        raise bad("transport", f"{transport!r} is not one of {', '.join(TRANSPORTS)}")
    transport = TRANSPORTS[transport]
    if (transport == "stdio") != has_command:
        raise bad("transport", f"{transport} needs {'command' if transport == 'stdio' else 'url'}")
    allowed_keys = OWN_KEYS | (STDIO_KEYS if has_command else HTTP_KEYS)
    unknown = sorted(str(k) for k in spec if k not in allowed_keys)
    if unknown:
        raise bad(unknown[0], f"unknown key (known: {', '.join(sorted(allowed_keys))})")
    connection: dict[str, Any] = {"transport": transport}
    if has_command:
        connection["command"] = _text(spec["command"], bad, "command")
        args = spec.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise bad("args", "expected a list of strings")
        connection["args"] = list(args)
        if "env" in spec:
            connection["env"] = _str_map(spec["env"], bad, "env")
        if "cwd" in spec:
            cwd = Path(_text(spec["cwd"], bad, "cwd"))
            connection["cwd"] = str(cwd if cwd.is_absolute() or base is None else base / cwd)
    else:
        url = _text(spec["url"], bad, "url")
        if not re.match(r"^https?://", url):
            raise bad("url", "expected an http:// or https:// URL")
        connection["url"] = url
        if "headers" in spec:
            connection["headers"] = _str_map(spec["headers"], bad, "headers")
    prefix = spec.get("tool_prefix", name)
    if not isinstance(prefix, str) or (prefix and not NAME_RE.match(prefix)):
        raise bad("tool_prefix", "expected '' or 1-40 letters, digits, '_' or '-'")
    meta = _meta(spec, bad, "", ToolMeta(side_effects=True, source=f"mcp:{name}", tags=("mcp",)))
    start = _number(spec.get("start_timeout_s", DEFAULT_START_TIMEOUT_S), bad, "start_timeout_s", positive=True)
    allowed, tool_meta = _tools(spec.get("tools"), bad, meta)
    return McpServer(name, connection, prefix, meta, start, allowed, tool_meta)


def _tools(value: Any, bad: Any, meta: ToolMeta) -> tuple[tuple[str, ...] | None, dict[str, ToolMeta]]:
    if value is None:
        return None, {}
    if isinstance(value, list) and all(isinstance(t, str) and t for t in value):
        return tuple(value), {}
    if isinstance(value, Mapping):
        metas = {}
        for tool, spec in value.items():
            if not isinstance(spec, Mapping):
                raise bad(f"tools.{tool}", "expected an object of side_effects, timeout_s, retries, cost")
            unknown = sorted(str(k) for k in spec if k not in META_KEYS)
            if unknown:
                raise bad(f"tools.{tool}.{unknown[0]}", f"unknown key (known: {', '.join(sorted(META_KEYS))})")
            metas[str(tool)] = _meta(spec, bad, f"tools.{tool}.", meta)
        return tuple(metas), metas
    raise bad("tools", "expected a list of tool names or an object {tool: {side_effects, timeout_s, ...}}")


def _meta(spec: Mapping[str, Any], bad: Any, at: str, default: ToolMeta) -> ToolMeta:
    side_effects = spec.get("side_effects", default.side_effects)
    if not isinstance(side_effects, bool):
        raise bad(at + "side_effects", "expected true or false")
    timeout = spec.get("timeout_s", default.timeout_s)
    retries = spec.get("retries", default.retries)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        raise bad(at + "retries", "expected a whole number from 0 to 10")
    return ToolMeta(
        side_effects=side_effects,
        timeout_s=None if timeout is None else _number(timeout, bad, at + "timeout_s", positive=True),
        retries=retries,
        cost=_number(spec.get("cost", default.cost), bad, at + "cost"),
        tags=default.tags,
        source=default.source,
    )


def _number(value: Any, bad: Any, key: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (
        float("inf"), float("-inf")
    ):
        raise bad(key, "expected a finite number")
    if value < 0 or (positive and value == 0) or value > 86_400:
        raise bad(key, f"expected a number {'above' if positive else 'from'} 0 up to 86400")
    return float(value)


def _text(value: Any, bad: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise bad(key, "expected a non-empty string")
    return value


def _str_map(value: Any, bad: Any, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise bad(key, "expected an object of strings")
    return dict(value)
