"""The ``run``/``chat`` flags and the run's ``Context`` they build (``add_context_args``,
``context_values``: what a thread records for ``resume``, ``context_from_args``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from .backends import add_db_arg, add_durability_arg, check_run_embeddings
from .budget import add_budget_args, budget_values
from .flags import REVIEW_FIELDS, add_generated_args, generated_values
from .options import (
    add_context_budget_args,
    add_reasoning_args,
    add_workspace_args,
    check_tool_names,
    context_budget_values,
    field_int,
    reasoning_values,
    thread_arg,
    tool_list,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..config.context import BaseContext

CONTEXT_FLAGS: dict[str, str] = {
    "model": "model",
    "system_prompt": "system_prompt",
    "max_tool_calls": "max_tool_calls",
    "max_parallel_tools": "max_parallel_tools",
    "loop_limit": "loop_limit",
    "workspace": "workspace",
    "allow_private_network": "allow_private_network",
    "tools": "tools",
    "model_timeout": "model_timeout_s",
    "model_retries": "model_max_retries",
    "tool_retries": "tool_retries",
    "fallback_model": "fallback_models",
}


def add_context_args(p: argparse.ArgumentParser, *, review_flags: bool = True) -> None:
    from ..graphs import BUILDERS

    p.add_argument("--graph", default="agent", choices=list(BUILDERS), help="which graph runs the task: %(choices)s")
    p.add_argument("--model", help="chat model as provider:model (default: $SMART_AGENT_MODEL or openai:gpt-4o-mini)")
    p.add_argument("--system-prompt", help="replace the system prompt")
    p.add_argument("--thread", type=thread_arg, help="thread id: continue an earlier session of that id")
    p.add_argument(
        "--max-tool-calls", type=field_int("max_tool_calls"), help="hard bound on tool executions per run (default 20)"
    )
    p.add_argument(
        "--max-parallel-tools",
        type=field_int("max_parallel_tools"),
        help="tool calls of one turn run at once (default 5)",
    )
    p.add_argument(
        "--loop-limit",
        type=field_int("loop_limit"),
        help="the same tool call this many times in a row: a notice, once more: finalize (default 3, 0: off)",
    )
    add_workspace_args(p)
    add_db_arg(p)
    add_durability_arg(p)
    p.add_argument("--tools", type=tool_list, help="comma-separated tool names to offer")
    p.add_argument(
        "--model-timeout",
        type=float,
        metavar="S",
        help="seconds a model request may wait for the service (default 120)",
    )
    p.add_argument(
        "--model-retries", type=int, metavar="N",
        help="retries of a failed model request (timeout, unreachable, HTTP 429/5xx; default 2): each is a model call"
    )
    p.add_argument(
        "--tool-retries",
        type=field_int("tool_retries"),
        metavar="N",
        help="extra attempts of a tool call that failed transiently (timeout, connection; default 0)",
    )
    p.add_argument(
        "--fallback-model",
        action="append",
        metavar="SPEC",
        help="provider:model tried next when a model call fails with a provider error (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout; events go to stderr")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print events")
    for add_args, _values in _feature_context_hooks():
        if review_flags or add_args.__name__ != "add_review_context_args":  # `resume` has its own --approve
            add_args(p)
    add_generated_args(p, skip=() if review_flags else REVIEW_FIELDS)  # every other context field: --<field>


def _feature_context_hooks() -> list[
    tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace, dict], None]]
]:
    """Each feature's (add its flags, map them onto Context fields) pair."""
    from .agents import add_agents_args, agents_values
    from .mcp import add_mcp_args, mcp_values
    from .memory import add_memory_context_args, memory_context_values
    from .planner import add_planner_context_args, planner_context_values
    from .review import add_review_context_args, review_context_values

    return [
        (add_context_budget_args, context_budget_values),
        (add_memory_context_args, memory_context_values),
        (add_planner_context_args, planner_context_values),
        (add_reasoning_args, reasoning_values),
        (add_budget_args, budget_values),
        (add_review_context_args, review_context_values),
        (add_mcp_args, mcp_values),
        (add_agents_args, agents_values),  # after MCP: an agent may name the servers' tools
    ]


def context_values(args: argparse.Namespace) -> dict[str, Any]:
    """The context fields the flags give (all graphs' fields; what a thread records for `resume`)."""
    values: dict[str, Any] = {}
    for flag, field_name in CONTEXT_FLAGS.items():
        v = getattr(args, flag, None)
        if v is not None:
            values[field_name] = v
    if values.get("workspace"):
        values["workspace"] = os.path.abspath(values["workspace"])
    for _add_args, to_values in _feature_context_hooks():
        to_values(args, values)
    generated_values(args, values)
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
