"""The ``run``/``chat`` flags and the run's ``Context`` they build (``add_context_args``,
``context_values``: what a thread records for ``resume``, ``context_from_args``)."""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from .agents import add_agents_args, agents_values
from .backends import add_db_arg, add_durability_arg, check_run_embeddings
from .flags import REVIEW_FIELDS, add_setting_args, setting_values
from .mcp import add_mcp_args, mcp_values
from .middleware import add_middleware_args, middleware_values
from .options import check_tool_names, thread_arg

if TYPE_CHECKING:  # pragma: no cover
    from ..config.context import BaseContext


def add_context_args(p: argparse.ArgumentParser, *, review_flags: bool = True) -> None:
    """The flags of ``run``/``chat``/``resume``/``eval``: what is not a context field (graph, thread,
    output, database, MCP servers, agents file), then a flag for every context field
    (``cli/flags.py``; ``resume`` has its own ``--approve`` decision flag: ``review_flags=False``)."""
    from ..graphs import BUILDERS

    p.add_argument("--graph", default="agent", choices=list(BUILDERS), help="which graph runs the task: %(choices)s")
    p.add_argument("--thread", type=thread_arg, help="thread id: continue an earlier session of that id")
    add_db_arg(p)
    add_durability_arg(p)
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout; events go to stderr")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print events")
    add_mcp_args(p)
    add_agents_args(p)
    add_middleware_args(p)
    add_setting_args(p, skip=() if review_flags else REVIEW_FIELDS)


def context_values(args: argparse.Namespace) -> dict[str, Any]:
    """The context fields the flags give (all graphs' fields; what a thread records for `resume`)."""
    values = setting_values(args)
    if values.get("ask_user") is None and getattr(args, "command", None) == "chat":
        values["ask_user"] = True  # chat offers ask_user unless --no-ask-user
    mcp_values(args, values)
    agents_values(args, values)  # after MCP: an agent may name the servers' tools
    middleware_values(args, values)
    return values


def context_from_args(args: argparse.Namespace, base: dict[str, Any] | None = None) -> BaseContext:
    """The run's context, of the class of the graph it runs (``--graph``, default agent):
    flags that graph has no field for are ignored, as they always were by its nodes.
    ``base``: field values the flags override (a resumed thread's recorded flags)."""
    from ..config.context import GRAPH_CONTEXTS, Context
    from .mcp import mcp_names

    schema: type[BaseContext] = GRAPH_CONTEXTS.get(getattr(args, "graph", None) or "agent", Context)
    names = {f.name for f in fields(schema)}
    values = {**(base or {}), **context_values(args)}
    ctx = check_tool_names(schema(**{k: v for k, v in values.items() if k in names}), also=mcp_names(values))
    check_run_embeddings(ctx)  # Postgres memory embeds with the local model: another one is one line
    return ctx
