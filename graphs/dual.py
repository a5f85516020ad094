"""The dual graph: a reasoning agent that hands objectives to the planner.

Wiring only; the work is in ``smart_agent.nodes.dual``::

    START -> prepare -> decide -(brainstorm)-> brainstorm -> decide
                           |---(execute)----> execute (planner subgraph) -> decide
                           |---(invalid)----> decide
                           '---(final)------> finish -> END

The dynamic side (``decide``) only reasons and chooses; the static side (the planner
graph) plans a tool sequence for one objective, runs it and reports its answer,
which is kept as an asset every later decision sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

from ..config.context import DualContext
from ..nodes.dual import (
    brainstorm,
    finish,
    make_decide_node,
    make_execute_node,
    make_prepare_node,
    route_after_decide,
)
from ..policies.hooks import Hooks
from ..policies.middleware import served_middleware
from ..state import DualOutputState, DualState, InputState
from ..tools.registry import ToolRegistry
from .planner import build_planner_graph
from .run_scope import mcp_servers_of, served_graph, served_mcp_config, with_mcp_servers

RECURSION_LIMIT = 1000


def build_dual_graph(
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    planner: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "dual",
    middleware: Sequence[AgentMiddleware] = (),
):
    """Compile the dual graph.

    ``model`` overrides the context's ``model`` (reasoning and planner); ``registry``
    is the planner's tools (default: the built-in tools); ``planner`` replaces the
    executor with any compiled graph taking ``{"task"}`` and returning ``{"answer"}``.
    ``middleware``: LangChain middleware whose model-call hooks wrap the decisions, and which the
    planner runs too (``build_planner_graph``).
    """
    # No checkpointer of its own: the planner runs as a subgraph of this graph's thread
    # (one objective at a time), so a plan approval pauses and resumes the whole run.
    planner = planner or build_planner_graph(model=model, registry=registry, name="executor", middleware=middleware)
    g = StateGraph(DualState, input_schema=InputState, output_schema=DualOutputState, context_schema=DualContext)
    g.add_node("prepare", make_prepare_node())
    g.add_node("decide", make_decide_node(model, Hooks(middleware)))
    g.add_node("brainstorm", brainstorm)
    g.add_node("execute", make_execute_node(planner))
    g.add_node("finish", finish)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "decide")
    g.add_conditional_edges("decide", route_after_decide, ["decide", "brainstorm", "execute", "finish"])
    g.add_edge("brainstorm", "decide")
    g.add_edge("execute", "decide")
    g.add_edge("finish", END)
    return g.compile(checkpointer=checkpointer, store=store, name=name).with_config(recursion_limit=RECURSION_LIMIT)


# For `langgraph dev` / langgraph.json: no checkpointer of its own (the server brings one);
# the MCP servers of $SMART_AGENT_MCP_CONFIG opened for each run (graphs/run_scope.py).
# Built on first access (run_scope.served_graph), not at import.
def __getattr__(name: str) -> Any:
    return served_graph(__name__, name, lambda: with_mcp_servers(
        build_dual_graph(middleware=served_middleware()), mcp_servers_of(served_mcp_config())
    ))
