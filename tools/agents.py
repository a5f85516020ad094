"""Agents as tools: delegate a task to another agent and get only its answer back.

* ``as_tool(graph, name, description)`` wraps any compiled graph that takes
  ``{"task": str}`` and returns ``{"answer": str}`` (the agent, planner, fleet and dual
  graphs all do) as a LangChain tool ``name(task)``.
* ``run_child`` runs a graph as a detached child of the agent calling a tool; the
  ``sub_agent(task)`` tool that builds fresh agent loops for it is
  ``graphs/sub_agent.py`` (``sub_agent_tool()``): it composes graphs, so it lives above them.
* ``as_handoff(agent_name)`` is the ``transfer_to_<name>`` tool of the team graph
  (``graphs/team.py``): calling it asks the graph to switch the active agent.
* ``start_sub_agent`` / ``check_sub_agent`` / ``cancel_sub_agent`` (``graphs/sub_agent.py``) run the
  same children in the background: a task of the run (``runs/background.py``) that ends at the
  latest with the run of the agent that started it (``run_detached`` cancels a nested run's own).

A child runs outside the parent's checkpoint: it is a one-shot call whose answer
comes back as the tool result, so parallel children never share a checkpoint
namespace. Its depth and id travel in the run config (``configurable``); the parent
stream gets ``sub_agent`` events (``phase`` start/end, ``parent``, ``child``,
``depth``) and the child's own events tagged with ``agent`` (the child id).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from ..config.context import Context, coerce_context
from ..models.usage import child_meter, current_meter, using
from ..runs.background import current_run_tasks
from ..runs.events import make_event, preview
from .registry import ToolRegistry

DEPTH_KEY = "smart_agent_depth"
AGENT_KEY = "smart_agent_agent_id"
ROOT_AGENT = "root"
SUB_AGENT = "sub_agent"
#: The background sub-agent tools of ``graphs/sub_agent.py`` (of the ``sub_agent`` tool's name).
START_SUB_AGENT, CHECK_SUB_AGENT, CANCEL_SUB_AGENT = "start_sub_agent", "check_sub_agent", "cancel_sub_agent"
SUB_AGENT_TOOL_NAMES = (SUB_AGENT, START_SUB_AGENT, CHECK_SUB_AGENT, CANCEL_SUB_AGENT)
# Tools named transfer_to_<agent> hand the thread to another agent (the team's handoff node).
HANDOFF_PREFIX = "transfer_to_"


class TaskArgs(BaseModel):
    task: str = Field(description="The complete, self-contained task for the agent: everything it needs to know.")


def agent_depth(config: Mapping[str, Any] | None) -> int:
    """Nesting depth of the agent running under ``config`` (0 for a top-level agent). A served
    graph's client may set the run's ``configurable`` (langgraph_api): a negative depth, which would
    let children nest past ``max_agent_depth``, counts as 0."""
    value = ((config or {}).get("configurable") or {}).get(DEPTH_KEY, 0)
    return max(0, value) if isinstance(value, int) and not isinstance(value, bool) else 0


def agent_id(config: dict | None) -> str:
    return str(((config or {}).get("configurable") or {}).get(AGENT_KEY) or ROOT_AGENT)


def child_context(ctx: Context, registry: ToolRegistry | None = None) -> Context:
    """The parent's context for a child: no long-term memory, only tools the child has, no
    ask_user (nobody answers a detached child's interrupt; its approvals are refused, nodes/human.py)."""
    changes: dict[str, Any] = {"memory": False, "ask_user": False}
    if ctx.tools and registry is not None:
        changes["tools"] = [n for n in ctx.tools if n in registry] or None
    return dataclasses.replace(ctx, **changes)


def parent_stream_writer(stream_writer: Any) -> Callable[[dict], None]:
    """A writer to the current run's custom stream that also works while a child is detached."""
    write = stream_writer or (lambda _ev: None)
    parent_run = var_child_runnable_config.get()

    def writer(event: dict) -> None:
        # LangGraph's stream writer looks up its run's config in a context variable.
        token = var_child_runnable_config.set(parent_run)
        try:
            write(event)
        except Exception:
            pass
        finally:
            var_child_runnable_config.reset(token)

    return writer


async def run_detached(
    graph: Any,
    graph_input: Any,
    *,
    context: Any,
    config: dict[str, Any],
    forward: Callable[[dict], None],
) -> dict:
    """Run ``graph`` as its own run, not a subgraph of the current node: no shared
    checkpoint namespace (parallel children cannot collide), its own recursion limit.
    Its custom events go to ``forward``; returns its final state. The background tasks the
    run's agent started and did not collect end with it (``runs/background.py``)."""
    token = var_child_runnable_config.set(None)
    try:
        final: dict = {}
        async for mode, chunk in graph.astream(
            graph_input, config=config, context=context, stream_mode=["custom", "values"]
        ):
            if mode == "custom" and isinstance(chunk, dict) and "event" in chunk:
                forward(chunk)
            elif mode == "values" and isinstance(chunk, dict):
                final = chunk
        return final
    finally:
        var_child_runnable_config.reset(token)
        tasks, owner = current_run_tasks(), (config.get("configurable") or {}).get(AGENT_KEY)
        if tasks is not None and owner:
            ended = tasks.cancel_owned(str(owner))
            if ended:
                await asyncio.wait([r.task for r in ended], timeout=5)


def tag_events(writer: Callable[[dict], None], agent: str) -> Callable[[dict], None]:
    """Forward a child's events tagged with its id (a grandchild's keep their own tag)."""
    return lambda ev: writer({**ev, "agent": ev.get("agent") or agent})


async def run_child(
    graph: Any,
    task: str,
    *,
    runtime: ToolRuntime | None,
    name: str,
    context: Context | None = None,
    background: bool = False,
) -> str:
    """Run ``graph`` on ``task`` as a child of the agent calling the tool; return its answer.

    A failure of the child propagates (the tools node turns it into an error result).
    ``background``: the child runs as a background task of the run, outliving the tool call: it
    gets none of the call's callbacks (the node that made the call is over).
    """
    parent_config = dict(getattr(runtime, "config", None) or {})
    depth = agent_depth(parent_config) + 1
    parent = agent_id(parent_config)
    child = f"{name}-{uuid.uuid4().hex[:8]}"
    ctx = context if context is not None else child_context(coerce_context(getattr(runtime, "context", None)))
    writer = parent_stream_writer(getattr(runtime, "stream_writer", None))
    config: dict[str, Any] = {"configurable": {DEPTH_KEY: depth, AGENT_KEY: child, "thread_id": child}}
    if parent_config.get("callbacks") is not None and not background:
        config["callbacks"] = parent_config["callbacks"]
    writer(make_event(
        "sub_agent", phase="start", tool=name, parent=parent, child=child, depth=depth, task=preview(task),
        **({"background": True} if background else {}),
    ))
    answer, ok, problem = "", False, None
    try:
        # The child shares the run's budgets and leaves one model call for this agent's answer; its
        # own meter adds what it spends (model and tool calls) to this agent's as it goes.
        meter, own = current_meter(), child_meter()
        with (
            meter.reserve() if meter is not None else contextlib.nullcontext(),
            using(own) if own is not None else contextlib.nullcontext(),
        ):
            final = await run_detached(
                graph, {"task": task}, context=ctx, config=config, forward=tag_events(writer, child)
            )
        answer = str(final.get("answer") or "")
        ok = True
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
        raise
    except asyncio.CancelledError:
        problem = "cancelled"
        raise
    finally:
        writer(make_event("sub_agent", phase="end", tool=name, parent=parent, child=child, depth=depth, ok=ok,
                          error=problem, preview=preview(answer) if ok else None))
    return answer or "(the agent gave no answer)"


def as_tool(graph: Any, name: str, description: str, *, context: dict[str, Any] | None = None) -> BaseTool:
    """Wrap a compiled agent graph as a tool that runs it on a task and returns its ``answer``.

    The child runs with the caller's context (long-term memory off) updated with
    ``context``, e.g. ``{"system_prompt": "You are the researcher."}``. Compile the
    wrapped graph without a checkpointer: each call is a fresh, one-shot run.
    """
    overrides = dict(context or {})

    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    async def run(task: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
        ctx = child_context(coerce_context(getattr(runtime, "context", None)))
        if overrides:
            ctx = dataclasses.replace(ctx, **overrides)
        return await run_child(graph, task, runtime=runtime, name=name, context=ctx)

    return StructuredTool.from_function(coroutine=run, name=name, description=description, args_schema=TaskArgs)


class HandoffArgs(BaseModel):
    reason: str = Field(default="", description="Why the other agent should take over (one sentence).")


def handoff_tool_name(agent_name: str) -> str:
    return f"{HANDOFF_PREFIX}{agent_name}"


def as_handoff(agent_name: str, description: str = "") -> BaseTool:
    """The ``transfer_to_<agent_name>`` tool. Only the team graph acts on it: its
    ``handoff`` node switches the active agent; the tool itself only acknowledges."""

    def transfer(reason: str = "") -> str:
        return f"Transferred to {agent_name}."

    return StructuredTool.from_function(
        func=transfer,
        name=handoff_tool_name(agent_name),
        description=description or f"Hand the conversation over to the {agent_name} agent, who continues the task.",
        args_schema=HandoffArgs,
    )
