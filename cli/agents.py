"""``--agents FILE`` (or ``$SMART_AGENT_AGENTS``): the agent graph runs the team of an agents
file (``docs/agents.md``); ``smart-agent agents validate FILE`` and ``agents list``.

The file is checked when the flags are read (one line naming file, agent and field; exit 2);
its absolute path is one of the flags a thread records, so ``smart-agent resume`` runs the same
team.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from ..config import settings
from .flags import setting_value
from .mcp import AGENTS_FIELD as FLAG_FIELD  # the key of the recorded flags (not a Context field)

__all__ = ["add_agents_args", "agents_values", "checked_agents_file", "recorded_agents_file", "register_cli"]


def add_agents_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agents",
        metavar="FILE",
        help="agents file (YAML or JSON, docs/agents.md): the agent graph runs that team (default $SMART_AGENT_AGENTS)",
    )


def agents_values(args: argparse.Namespace, values: dict) -> None:
    """Check the file now and record its absolute path (only the agent graph runs a team)."""
    given = getattr(args, "agents", None)
    path = given or settings.agents_file()
    if path is None:
        return
    graph = getattr(args, "graph", None) or "agent"
    if graph != "agent":
        if given:
            raise ValueError(f"--agents: only the agent graph runs a team (not --graph {graph})")
        return
    if setting_value(args, "tools"):
        raise ValueError(f"--tools: each agent of {path} offers the tools the file lists; set them there")
    path = os.path.abspath(path)
    _load(path, values)
    values[FLAG_FIELD] = path


def checked_agents_file(given: str | None, graph: str) -> str | None:
    """``graph NAME --agents FILE``: the checked file's absolute path (None: no file)."""
    values: dict[str, Any] = {}
    agents_values(argparse.Namespace(agents=given, graph=graph), values)
    return values.get(FLAG_FIELD)


def recorded_agents_file(metadata: Mapping[str, Any]) -> str | None:
    """The agents file recorded with a run's flags (None: one agent)."""
    from .review import recorded_run

    path = recorded_run(metadata)[1].get(FLAG_FIELD)
    return path if isinstance(path, str) and path else None


def _load(path: str, values: Mapping[str, Any] | None = None) -> Any:
    from ..tools.agents_file import load_agents_file
    from .mcp import mcp_names

    return load_agents_file(path, also=mcp_names(values or {}))


def register_cli(sub: Any) -> None:
    p = sub.add_parser("agents", help="check and list an agents file's agents")
    cmds = p.add_subparsers(dest="agents_command", required=True)
    v = cmds.add_parser("validate", help="check an agents file (one line per problem, exit 2)")
    v.add_argument("file", help="the agents file (YAML or JSON)")
    v.set_defaults(handler=validate_command)
    q = cmds.add_parser("list", help="the agents of --agents FILE (default $SMART_AGENT_AGENTS; none: the one agent)")
    add_agents_args(q)
    q.add_argument("--json", action="store_true", help="print one JSON list on stdout")
    q.set_defaults(handler=list_command)


def validate_command(args: argparse.Namespace) -> int:
    config = _load(args.file)
    print(f"{args.file}: ok: {len(config.agents)} agents ({', '.join(config.agents)}), default {config.default}")
    return 0


def list_command(args: argparse.Namespace) -> int:
    path = args.agents or settings.agents_file()
    rows: list[dict[str, Any]]
    if path is None:
        rows = [{"name": "agent", "default": True, "description": "the single agent (no agents file)",
                 "tools": ["*"], "handoffs": [], "sub_agents": []}]
    else:
        config = _load(str(path))
        rows = [
            {"name": a.name, "default": a.name == config.default, "description": a.description,
             "tools": list(a.tools), "handoffs": list(a.handoffs), "sub_agents": list(a.sub_agents),
             **({"settings": a.settings} if a.settings else {})}
            for a in config.agents.values()
        ]
    if args.json:
        print(json.dumps(rows, default=str))
        return 0
    for r in rows:
        links = "".join(f"  {k}: {', '.join(r[k])}" for k in ("handoffs", "sub_agents") if r[k])
        mark = " (default)" if r["default"] else ""
        print(f"{r['name']}{mark}: {r['description']}  tools: {', '.join(r['tools']) or '-'}{links}", file=sys.stdout)
    return 0
