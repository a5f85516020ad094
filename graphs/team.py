"""The team graph: agents with their own prompts and tools handing one thread to each other.

Wiring only; the work is in ``smart_agent.nodes.team``::

    START -> resolver -> agent ⇄ tools -> [handoff] -> agent ... -> END
                                   └-> toolLimitFinalize -> agent

``agent`` and ``tools`` are the agent loop's own nodes, run as the active member
(``active_agent`` in the state, kept across runs of the thread).
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from smart_agent.context import Context
from smart_agent.nodes.agent import make_agent_node
from smart_agent.nodes.limit import tool_limit_finalize
from smart_agent.nodes.reasoning import make_two_phase_node
from smart_agent.nodes.resolver import resolver
from smart_agent.nodes.routes import route_after_agent
from smart_agent.nodes.team import (
    AgentSpec,
    active_agent,
    make_handoff_node,
    make_team_node,
    route_after_handoff,
    route_after_team_tools,
    team_registries,
)
from smart_agent.nodes.tools import make_tools_node
from smart_agent.state import InputState, OutputState, TeamState

RECURSION_LIMIT = 1000


class _TeamOutput(OutputState, total=False):
    """What a team run returns: the answer plus who holds the thread now."""

    active_agent: str
    handoffs: int
    tool_calls_made: int


def build_team_graph(
    *,
    agents: dict[str, AgentSpec],
    default: str | None = None,
    model: BaseChatModel | None = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "team",
):
    """Compile a team of ``agents`` (name -> AgentSpec); ``default`` (the first agent
    when None) holds a new thread. ``model`` overrides the context's ``model``."""
    if not agents:
        raise ValueError("build_team_graph needs at least one agent")
    default = default or next(iter(agents))
    if default not in agents:
        raise ValueError(f"default agent {default!r} is not one of {', '.join(agents)}")
    registries = team_registries(agents)

    async def resolve(state: dict, runtime: Runtime[Context]) -> dict[str, Any]:
        update = await resolver(state, runtime)
        return {**update, "active_agent": active_agent(state, agents, default), "handoffs": 0}

    g = StateGraph(TeamState, input_schema=InputState, output_schema=_TeamOutput, context_schema=Context)
    g.add_node("resolver", resolve)
    members = {n: make_two_phase_node(make_agent_node(r, model), r, model) for n, r in registries.items()}
    g.add_node("agent", make_team_node(agents, default, members))
    g.add_node("tools", make_team_node(agents, default, {n: make_tools_node(r) for n, r in registries.items()}))
    g.add_node("handoff", make_handoff_node(agents, default, registries))
    g.add_node("toolLimitFinalize", tool_limit_finalize)
    g.add_edge(START, "resolver")
    g.add_edge("resolver", "agent")
    g.add_conditional_edges("agent", route_after_agent, {"tools": "tools", END: END})
    g.add_conditional_edges("tools", route_after_team_tools, ["handoff", "toolLimitFinalize", "agent"])
    g.add_conditional_edges("handoff", route_after_handoff, ["toolLimitFinalize", "agent"])
    g.add_edge("toolLimitFinalize", "agent")
    return g.compile(checkpointer=checkpointer, store=store, name=name).with_config(recursion_limit=RECURSION_LIMIT)

