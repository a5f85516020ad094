"""The planner graph: plan -> (approve) -> execute steps in parallel -> synthesize.

Wiring only; the work is in ``smart_agent.nodes.planner``::

    START -> prepare -> plan -(valid)-> [approve] -> dispatch -(Send x N)-> run_step -> dispatch ...
                         ^  |(invalid, attempts left)                 |(halted, replans left)
                         +--+-------------------------------------------+
             plan -(out of attempts)-> plan_failed -> END
             dispatch -(steps needing approval)-> review_steps -(Send x N)-> run_step
                                                  review_steps -(all rejected)-> dispatch
             dispatch -(done / halted)-> synthesize -> END

``build_executor_graph`` runs a given plan without any model (``smart-agent execute``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

from ..config.context import PlannerContext
from ..nodes.planner.approve import make_approve_node
from ..nodes.planner.execute import (
    BACKOFF_BASE_S,
    make_dispatch_node,
    make_prepare_node,
    make_run_step_node,
)
from ..nodes.planner.plan import (
    PlanMethod,
    make_plan_failed_node,
    make_plan_node,
)
from ..nodes.planner.review import make_review_node
from ..nodes.planner.routes import (
    route_after_approve,
    route_after_dispatch,
    route_after_load,
    route_after_plan,
    route_after_prepare,
    route_after_review,
)
from ..nodes.planner.synthesize import make_report_node, make_synthesize_node
from ..policies.hooks import Hooks
from ..policies.middleware import served_middleware
from ..state import InputState, PlannerOutputState, PlannerState
from ..tools.builtins import default_registry
from ..tools.registry import ToolRegistry
from .run_scope import mcp_servers_of, served_graph, served_mcp_config, with_mcp_servers

# Two supersteps per dispatch round (dispatch, run_step): LangGraph's default of 25 would
# stop a long sequential plan. Every loop of this graph is bounded by its own limits.
RECURSION_LIMIT = 10_000


def build_planner_graph(
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "planner",
    plan_method: PlanMethod = "tool",
    backoff_base_s: float = BACKOFF_BASE_S,
    mcp_config: Any = None,
    middleware: Sequence[AgentMiddleware] = (),
):
    """Compile the plan-then-execute graph.

    ``model`` overrides the context's ``model`` spec; ``registry`` defaults to the
    built-in tools; ``plan_method`` is how the plan is requested: ``"tool"`` (a
    ``submit_plan`` tool, JSON text also accepted), ``"structured"`` (the model's
    structured output) or ``"text"`` (JSON in the reply). ``mcp_config`` (a ``{"mcpServers":
    ...}`` file, or ``McpServer``s): MCP servers each async run opens and closes; their tools
    may be planned and run (``graphs/run_scope.py``). ``middleware``: LangChain middleware whose
    ``wrap_model_call`` layers wrap the planning and synthesis calls and whose ``wrap_tool_call``
    layers wrap each step attempt (``policies/hooks.py``).
    """
    registry = registry if registry is not None else default_registry()
    hooks = Hooks(middleware)
    g = StateGraph(
        PlannerState, input_schema=InputState, output_schema=PlannerOutputState, context_schema=PlannerContext
    )
    g.add_node("prepare", make_prepare_node())
    g.add_node("plan", make_plan_node(registry, model, method=plan_method, hooks=hooks))
    g.add_node("plan_failed", make_plan_failed_node())
    g.add_node("approve", make_approve_node(registry))
    g.add_node("dispatch", make_dispatch_node(registry))
    g.add_node("review_steps", make_review_node())
    g.add_node("run_step", make_run_step_node(registry, backoff_base_s=backoff_base_s, hooks=hooks))
    g.add_node("synthesize", make_synthesize_node(model, hooks))

    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", route_after_prepare, ["plan", END])
    g.add_conditional_edges("plan", route_after_plan, ["plan", "approve", "dispatch", "plan_failed", "synthesize"])
    g.add_edge("plan_failed", END)
    g.add_conditional_edges("approve", route_after_approve, ["dispatch", "approve", END])
    g.add_conditional_edges("dispatch", route_after_dispatch, ["run_step", "review_steps", "plan", "synthesize"])
    g.add_conditional_edges("review_steps", route_after_review, ["run_step", "dispatch"])
    g.add_edge("run_step", "dispatch")
    g.add_edge("synthesize", END)
    compiled = g.compile(checkpointer=checkpointer, store=store, name=name)
    return with_mcp_servers(compiled, mcp_servers_of(mcp_config)).with_config(recursion_limit=RECURSION_LIMIT)


def build_executor_graph(
    *,
    registry: ToolRegistry | None = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "plan_executor",
    backoff_base_s: float = BACKOFF_BASE_S,
):
    """Compile a model-free graph that validates and runs the ``plan`` given in its input."""
    registry = registry if registry is not None else default_registry()
    g = StateGraph(PlannerState, output_schema=PlannerOutputState, context_schema=PlannerContext)
    g.add_node("load_plan", make_prepare_node(execute_only=True, registry=registry))
    g.add_node("dispatch", make_dispatch_node(registry))
    g.add_node("review_steps", make_review_node())
    g.add_node("run_step", make_run_step_node(registry, backoff_base_s=backoff_base_s))
    g.add_node("report", make_report_node())

    g.add_edge(START, "load_plan")
    g.add_conditional_edges("load_plan", route_after_load, ["dispatch", END])
    g.add_conditional_edges(
        "dispatch",
        route_after_dispatch,
        {"run_step": "run_step", "review_steps": "review_steps", "plan": "report", "synthesize": "report"},
    )
    g.add_conditional_edges("review_steps", route_after_review, ["run_step", "dispatch"])
    g.add_edge("run_step", "dispatch")
    g.add_edge("report", END)
    return g.compile(checkpointer=checkpointer, store=store, name=name).with_config(recursion_limit=RECURSION_LIMIT)


# For `langgraph dev` / langgraph.json: no checkpointer of its own (the server brings one);
# the MCP servers of $SMART_AGENT_MCP_CONFIG opened for each run.
# Built on first access (run_scope.served_graph), not at import.
def __getattr__(name: str) -> Any:
    return served_graph(
        __name__, name, lambda: build_planner_graph(mcp_config=served_mcp_config(), middleware=served_middleware())
    )
