"""Team: several agents (own prompt, own tools) sharing one conversation, with handoffs.

The active agent's turn runs the ordinary agent and tools nodes with the agent's own
system prompt and tool registry (a per-run context override). Each agent is offered
a ``transfer_to_<name>`` tool per agent it may hand over to; after the tools ran, the
``handoff`` node applies the *first* valid transfer in call order and answers the
other transfers of that turn with an error tool message. Results are matched to calls
by position, never by tool-call id, so ids that collide cannot mix them up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from ..config.context import AgentContext
from ..policies.hooks import with_update
from ..runs.events import emit
from ..state import AgentState, count_of
from ..tools.agents import as_handoff
from ..tools.builtins import builtin_meta
from ..tools.registry import ToolMeta, ToolRegistry, attached_meta
from .routes import HANDOFF_PREFIX, pending_tool_calls


@dataclass
class AgentSpec:
    """One member of a team: its system prompt and tools.

    ``handoffs``: the agents it may transfer to (None: every other member). ``context``: run
    settings of its turns (context fields, e.g. ``model``, ``reasoning``; an agents file's).
    ``run_tools``: names or globs of the run's MCP tools it also has (``run_tools.py``:
    the tools of the sessions its graph opens for each run). ``middleware``: LangChain middleware
    of its turns, after the graph's own (an agents file's ``middleware:``).
    """

    prompt: str
    tools: list[BaseTool] = field(default_factory=list)
    handoffs: list[str] | None = None
    description: str = ""
    context: dict[str, Any] = field(default_factory=dict)
    run_tools: list[str] = field(default_factory=list)
    middleware: list[Any] = field(default_factory=list)


def team_registries(agents: dict[str, AgentSpec]) -> dict[str, ToolRegistry]:
    """Each member's tools plus its ``transfer_to_<name>`` tools (and the context tools)."""
    from ..tools.context_tools import with_context_tools

    out: dict[str, ToolRegistry] = {}
    for name, spec in agents.items():
        reg = ToolRegistry().offer_run_tools(spec.run_tools)
        for tool in spec.tools:  # (a built-in keeps its metadata: side effects decide approval)
            reg.register(tool, builtin_meta(tool) or attached_meta(tool) or ToolMeta(source="user"), replace=True)
        targets = [t for t in (spec.handoffs if spec.handoffs is not None else agents) if t != name]
        for target in targets:
            if target not in agents:
                raise ValueError(f"agent {name!r} hands off to unknown agent {target!r}; known: {', '.join(agents)}")
            reg.register(as_handoff(target, agents[target].description), ToolMeta(source="handoff"), replace=True)
        out[name] = with_context_tools(reg)
    return out


def union_registry(registries: dict[str, ToolRegistry]) -> ToolRegistry:
    """Every member's tools in one registry (the context budget's worst case)."""
    union = ToolRegistry()
    for reg in registries.values():
        union.offer_run_tools(reg.run_patterns)
        for tool_name in reg.names():
            union.register(reg.get(tool_name), reg.meta(tool_name), replace=True)
    return union


def team_budget_tools(everyone: ToolRegistry) -> Callable[[Any, Mapping[str, Any]], list[BaseTool]]:
    """What the context budget counts for a team's turn: every member's tools. Members take
    their tools from their own registries and ignore the run's ``tools`` (member_runtime), so
    the budget ignores it too (counting it against the union raised KeyError for a name no
    member has)."""
    from .agent import offered_tools

    def offered(ctx: Any, state: Mapping[str, Any]) -> list[BaseTool]:
        return offered_tools(dataclasses.replace(ctx, tools=None) if ctx.tools else ctx, everyone, state)

    return offered


def make_team_start_hook(agents: dict[str, AgentSpec], default: str) -> Callable:
    """Resolver hook: who holds the thread at the start of a run; no handoffs yet."""

    def on_run_start(state: Mapping[str, Any], update: dict, ctx: AgentContext) -> dict[str, Any]:
        return {"active_agent": active_agent(state, agents, default), "handoffs": 0}

    return on_run_start


def active_agent(state: Mapping[str, Any], agents: dict[str, Any], default: str) -> str:
    name = state.get("active_agent")
    return name if name in agents else default


def member_runtime(runtime: Runtime[AgentContext], spec: AgentSpec) -> Runtime[AgentContext]:
    """The run's runtime with the member's prompt and settings; its tools come from its own registry."""
    ctx = dataclasses.replace(AgentContext.of(runtime), **spec.context, system_prompt=spec.prompt, tools=None)
    return runtime.override(context=ctx)


def make_team_node(agents: dict[str, AgentSpec], default: str, inner: dict[str, Callable]) -> Callable:
    """A node that runs ``inner[active agent]`` (an agent or tools node) as that member."""

    async def node(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
        name = active_agent(state, agents, default)
        update = await inner[name](state, member_runtime(runtime, agents[name]))
        if state.get("active_agent") != name:
            update = with_update(update, {"active_agent": name})
        return update

    return node


def handoff_calls(message: Any) -> list[tuple[int, dict]]:
    """``(position, call)`` of the transfer calls of an AI message, in call order."""
    return [
        (i, c) for i, c in enumerate(pending_tool_calls(message)) if (c.get("name") or "").startswith(HANDOFF_PREFIX)
    ]


def last_turn(messages: list[Any]) -> tuple[AIMessage | None, list[ToolMessage]]:
    """The last AI message and the tool messages that follow it, in order."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AIMessage):
            return messages[i], [m for m in messages[i + 1 :] if isinstance(m, ToolMessage)]
    return None, []


def resolve_handoffs(
    calls: list[tuple[int, dict]], current: str, allowed: set[str]
) -> tuple[int | None, dict[int, str]]:
    """Position of the winning transfer (the first valid one in call order) and an error per other position."""
    winner: int | None = None
    errors: dict[int, str] = {}
    for pos, call in calls:
        target = (call.get("name") or "")[len(HANDOFF_PREFIX) :]
        if call.get("type") == "invalid_tool_call" or target not in allowed or target == current:
            continue  # the tools node already answered it with an error
        if winner is None:
            winner = pos
        else:
            first = next(c for p, c in calls if p == winner)
            errors[pos] = (
                f"Not transferred: only one handoff per turn is applied and {first.get('name')} came first; "
                f"{first.get('name', '')[len(HANDOFF_PREFIX):]} is now the active agent."
            )
    return winner, errors


async def no_handoff(state: AgentState) -> dict[str, Any]:
    """The ``handoff`` node of a single agent: never routed to (no ``active_agent``), changes nothing."""
    return {}


def make_handoff_node(agents: dict[str, AgentSpec], default: str, registries: dict[str, ToolRegistry]) -> Callable:
    async def handoff(state: AgentState) -> dict[str, Any]:
        current = active_agent(state, agents, default)
        ai, results = last_turn(state.get("messages") or [])
        calls = handoff_calls(ai)
        allowed = {n[len(HANDOFF_PREFIX) :] for n in registries[current].names() if n.startswith(HANDOFF_PREFIX)}
        winner, errors = resolve_handoffs(calls, current, allowed)
        replaced: list[ToolMessage] = []
        for pos, text in errors.items():
            if pos < len(results):  # the tools node answers calls in call order
                old = results[pos]
                replaced.append(
                    ToolMessage(content=text, tool_call_id=old.tool_call_id, name=old.name, status="error", id=old.id)
                )
        update: dict[str, Any] = {"messages": replaced} if replaced else {}
        if winner is not None:
            call = dict(calls)[winner]
            target = (call.get("name") or "")[len(HANDOFF_PREFIX) :]
            emit(
                "handoff",
                **{"from": current, "to": target},
                call_id=call.get("id"),
                reason=(call.get("args") or {}).get("reason", ""),
                ignored=[dict(calls)[p].get("name") for p in errors],
            )
            update.update(active_agent=target, handoffs=count_of(state, "handoffs") + 1)
        return update

    return handoff
