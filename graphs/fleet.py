"""The fleet graph: one goal, N worker agents in parallel, one aggregated answer.

Wiring only; the work is in ``smart_agent.nodes.fleet``::

    START -> decompose -> dispatch -(Send x max_workers)-> worker -> dispatch ... -> aggregate -> END

Every worker is the agent loop (``build_agent_graph``) on one subtask, with its own
messages; a failed worker is a failed result, never a failed run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph

from ..config.context import FleetContext
from ..nodes.fleet import (
    make_aggregate_node,
    make_decompose_node,
    make_dispatch_node,
    make_worker_node,
    route_after_dispatch,
)
from ..policies.hooks import Hooks
from ..policies.middleware import served_middleware
from ..state import FleetOutputState, FleetState, InputState
from ..tools.registry import ToolRegistry
from .agent import build_agent_graph
from .run_scope import mcp_servers_of, served_graph, served_mcp_config, with_mcp_servers

RECURSION_LIMIT = 1000


def build_fleet_graph(
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    tools: Iterable[BaseTool] | None = None,
    worker: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "fleet",
    middleware: Sequence[AgentMiddleware] = (),
):
    """Compile the fleet graph.

    ``model`` overrides the context's ``model`` for the coordinator and the workers;
    ``registry``/``tools`` are the workers' tools (as in ``build_agent_graph``);
    ``worker`` replaces the worker agent with any compiled graph taking ``{"task"}``
    and returning ``{"answer"}``. ``middleware``: LangChain middleware the workers run (every
    hook, as in ``build_agent_graph``) and whose model-call hooks wrap the coordinator's calls.
    """
    hooks = Hooks(middleware)
    # checkpointer=False: a worker is a one-shot call with its own conversation, never
    # checkpointed into the fleet's thread (parallel workers would share a namespace).
    worker = worker or build_agent_graph(
        model=model, registry=registry, tools=tools, checkpointer=False, name="fleet_worker", middleware=middleware
    )
    g = StateGraph(FleetState, input_schema=InputState, output_schema=FleetOutputState, context_schema=FleetContext)
    g.add_node("decompose", make_decompose_node(model, hooks))
    g.add_node("dispatch", make_dispatch_node())
    g.add_node("worker", make_worker_node(worker))
    g.add_node("aggregate", make_aggregate_node(model, hooks))
    g.add_edge(START, "decompose")
    g.add_edge("decompose", "dispatch")
    g.add_conditional_edges("dispatch", route_after_dispatch, ["worker", "aggregate", END])
    g.add_edge("worker", "dispatch")
    g.add_edge("aggregate", END)
    return g.compile(checkpointer=checkpointer, store=store, name=name).with_config(recursion_limit=RECURSION_LIMIT)


# For `langgraph dev` / langgraph.json: no checkpointer of its own (the server brings one);
# the MCP servers of $SMART_AGENT_MCP_CONFIG opened for each run (graphs/run_scope.py).
# Built on first access (run_scope.served_graph), not at import.
def __getattr__(name: str) -> Any:
    return served_graph(__name__, name, lambda: with_mcp_servers(
        build_fleet_graph(middleware=served_middleware()), mcp_servers_of(served_mcp_config())
    ))
