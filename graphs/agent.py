"""The agent loop graph ("Smart Agent"): wiring only — the work lives in nodes/.

    resolver → agent ⇄ tools → toolLimitFinalize → agent → END
"""

from __future__ import annotations

from typing import Any, Iterable

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph

from smart_agent.context import Context
from smart_agent.nodes.agent import make_agent_node
from smart_agent.nodes.limit import tool_limit_finalize
from smart_agent.nodes.resolver import resolver
from smart_agent.nodes.routes import route_after_agent, route_after_tools
from smart_agent.nodes.tools import make_tools_node
from smart_agent.state import AgentState, InputState
from smart_agent.tools.registry import ToolMeta, ToolRegistry

# Enough supersteps for any bounded run: the loop itself ends through the tool limit.
DEFAULT_RECURSION_LIMIT = 1000


def resolve_registry(registry: ToolRegistry | None, tools: Iterable[BaseTool] | None) -> ToolRegistry:
    if registry is None:
        from smart_agent.tools.builtins import default_registry

        registry = default_registry()
    if tools:
        registry = registry.copy()
        for t in tools:
            registry.register(t, ToolMeta(source="user"), replace=True)
    return registry


def build_agent_graph(
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    tools: Iterable[BaseTool] | None = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "agent",
):
    """Compile the agent loop.

    ``model`` overrides the context's ``model`` string (useful in notebooks and
    tests); ``tools`` are added to the registry (default: the built-in tools and
    discovered plugins).
    """
    registry = resolve_registry(registry, tools)
    builder = StateGraph(AgentState, context_schema=Context, input_schema=InputState)
    builder.add_node("resolver", resolver)
    builder.add_node("agent", make_agent_node(registry, model))
    builder.add_node("tools", make_tools_node(registry))
    builder.add_node("toolLimitFinalize", tool_limit_finalize)
    builder.add_edge(START, "resolver")
    builder.add_edge("resolver", "agent")
    builder.add_conditional_edges("agent", route_after_agent, {"tools": "tools", END: END})
    builder.add_conditional_edges("tools", route_after_tools, ["toolLimitFinalize", "agent"])
    builder.add_edge("toolLimitFinalize", "agent")
    compiled = builder.compile(checkpointer=checkpointer, store=store, name=name)
    return compiled.with_config(recursion_limit=DEFAULT_RECURSION_LIMIT)


# What `langgraph dev` serves: no checkpointer of its own (the server provides one).
graph = build_agent_graph()
