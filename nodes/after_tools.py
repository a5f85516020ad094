"""Where a tool turn goes next, decided where the agent's step starts.

The ``tools`` node has a plain edge to ``agent``. Nearly every tool turn goes on to the model,
and a conditional edge after ``tools`` would cost LangGraph a copy of every channel of the
state at every turn (it reads the state "fresh" for the decision). So the tools node marks its
update (``after_tools = "pending"``) and the agent's step decides first, with
:func:`route_after_tools`: when the run must hand off, finalize or summarize, the step calls no
model and records where it sends the run (``after_tools = <node>``), which the agent's edge
follows (:func:`forwarded_first`); otherwise the turn runs and clears the mark.

A state written with ``update_state`` as ``tools`` (Studio: stop after ``tools``, edit a tool's
result, go on) follows the plain edge to ``agent``, whose step takes the same decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from langgraph.runtime import Runtime

from ..config.context import AgentContext
from ..history.budget import RequestMeter
from ..policies.hooks import with_update
from ..state import AgentState, keep, kept
from .routes import Edge, edge, route_after_tools

__all__ = ["FORWARDS", "PENDING", "forwarded", "forwarded_first", "gate_after_tools", "mark_tool_turn"]

#: ``after_tools`` once the tools node ran: the agent's step decides where the run goes.
PENDING: Final = "pending"
#: Where the agent's step may send the run after a tool turn, instead of calling the model.
FORWARDS: Final = ("handoff", "toolLimitFinalize", "summarize")


def forwarded(state: Mapping[str, Any]) -> str | None:
    """The node the agent's step sent the run to after a tool turn (None: it called the model)."""
    to = kept(state, "after_tools")
    return to if to in FORWARDS else None


def mark_tool_turn(tools_node: Callable[..., Any]) -> Callable[..., Any]:
    """``tools_node`` whose update marks the turn for the agent's step (:data:`PENDING`)."""

    async def tools(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
        return with_update(await tools_node(state, runtime), keep({}, after_tools=PENDING))

    return tools


def gate_after_tools(agent_node: Callable[..., Any], meter: RequestMeter) -> Callable[..., Any]:
    """``agent_node`` that first takes the decision after a tool turn (:func:`route_after_tools`,
    the next request measured with ``meter``): hand off, finalize or summarize without a model
    call, or run the turn and clear the mark."""

    async def agent(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
        mark = kept(state, "after_tools")
        if mark == PENDING:
            to = route_after_tools(state, AgentContext.of(runtime), meter)
            if to != "agent":
                return keep({}, after_tools=to)
        output = await agent_node(state, runtime)
        return with_update(output, keep({}, after_tools="")) if mark else output

    return agent


def forwarded_first(route: Edge) -> Edge:
    """``route`` (the agent's edge), after the node the agent's step forwarded the run to, if any."""
    decide = route.func

    def first(state: Mapping[str, Any]) -> str:
        to = forwarded(state)
        return to if to is not None else decide(state)

    return edge(first, like=decide)
