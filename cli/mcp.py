"""``--mcp-config FILE`` (or ``$SMART_AGENT_MCP_CONFIG``): MCP servers' tools in a CLI run.

The file is checked when the flags are read (one line, exit 2); its absolute path is one of
the flags a thread records, so ``smart-agent resume`` opens the same servers. A run opens the
sessions once around the graph (``open_mcp_registry``) and closes them at its end;
``smart-agent tools --mcp-config FILE`` lists their tools.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from ..config import settings

if TYPE_CHECKING:  # pragma: no cover
    from ..tools.registry import ToolRegistry

__all__ = ["add_mcp_args", "mcp_names", "mcp_values", "open_mcp_registry"]

FLAG_FIELD = "mcp_config"  # the key of the recorded flags (not a Context field)
AGENTS_FIELD = "agents_file"  # the recorded --agents file (cli/agents.py), whose mcp_servers a run opens too


def add_mcp_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mcp-config",
        metavar="FILE",
        help='MCP servers whose tools the run offers, as <server>__<tool>: a JSON file {"mcpServers": {name: '
        '{"command", "args", "env"} | {"url"}}} (default $SMART_AGENT_MCP_CONFIG)',
    )


def mcp_values(args: argparse.Namespace, values: dict) -> None:
    """Check the file now (a bad one: one line, exit 2) and record its absolute path."""
    flag = getattr(args, "mcp_config", None)
    path = flag or settings.mcp_config()
    if path is None:
        return
    from ..tools.mcp_config import load_mcp_config

    path = os.path.abspath(path)
    load_mcp_config(path, what="--mcp-config" if flag else "SMART_AGENT_MCP_CONFIG")
    values[FLAG_FIELD] = path


def mcp_names(values: Mapping[str, Any]) -> Callable[[str], bool] | None:
    """Which tool names the recorded file's servers may provide (``--tools``, ``--approve``)."""
    path = values.get(FLAG_FIELD)
    if not path:
        return None
    from ..tools.mcp_config import load_mcp_config

    servers = load_mcp_config(path)
    return lambda name: any(s.may_name(name) for s in servers)


def agents_file_servers(flags: Mapping[str, Any]) -> list[Any]:
    """The MCP servers of the recorded agents file (its ``mcp_servers``; none without a file)."""
    path = flags.get(AGENTS_FIELD)
    if not path:
        return []
    from ..tools.agents_file import load_agents_file

    return list(load_agents_file(path, also=mcp_names(flags)).mcp_servers)


@asynccontextmanager
async def open_mcp_registry(
    metadata: Mapping[str, Any], on_event: Callable[[dict], None] | None = None
) -> AsyncIterator[ToolRegistry | None]:
    """The run's registry with the recorded file's MCP tools, open for the ``async with``
    (None without a file: the graph's default tools). A server that fails to start is one
    ``error`` event (default: its line on stderr); the run goes on without it."""
    from .review import recorded_run

    if on_event is None:
        on_event = _stderr_line

    flags = recorded_run(metadata)[1]
    path = flags.get(FLAG_FIELD)
    servers = agents_file_servers(flags)  # an --agents file's own mcp_servers
    if not path and not servers:
        yield None
        return
    from ..runs.run_tools import using_run_tools
    from ..tools.mcp import mcp_tools, run_tools_of
    from ..tools.mcp_config import load_mcp_config

    async with mcp_tools([*(load_mcp_config(path) if path else []), *servers], on_event=on_event) as mcp:
        with using_run_tools(run_tools_of(mcp)):  # the run's: a graph of this run opens no session of its own
            yield mcp.registry


def mcp_tool_rows(args: argparse.Namespace, on_event: Callable[[dict], None]) -> list[dict[str, Any]]:
    """``smart-agent tools``: the registry's description, with the MCP servers' tools when a
    file is given (their sessions are opened to list them, then closed)."""
    import asyncio

    from ..tools.builtins import default_registry

    values: dict[str, Any] = {}
    mcp_values(args, values)
    if FLAG_FIELD not in values:
        return default_registry().describe()
    from ..tools.mcp import mcp_tools

    async def listed() -> list[dict[str, Any]]:
        async with mcp_tools(values[FLAG_FIELD], on_event=on_event) as mcp:
            return mcp.registry.describe()

    return asyncio.run(listed())


def _stderr_line(ev: dict) -> None:
    import sys

    from .render import format_event

    print(format_event(ev), file=sys.stderr, flush=True)
