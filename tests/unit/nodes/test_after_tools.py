"""The decision after a tool turn, taken where the agent's step starts (nodes/after_tools.py)."""

import asyncio
from typing import Any, cast

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from smart_agent.config.context import AgentContext
from smart_agent.history.budget import RequestMeter
from smart_agent.nodes.after_tools import PENDING, forwarded, forwarded_first, gate_after_tools, mark_tool_turn
from smart_agent.nodes.routes import END, edge

CALL = AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "1"}, "id": "c1"}])
TURN = [HumanMessage("q"), CALL, ToolMessage("1", tool_call_id="c1")]
PENDING_MARK = {"bookkeeping": {"after_tools": PENDING}}
NO_METER = cast(RequestMeter, None)  # (no context_token_limit in these states: nothing is measured)


class Turn:
    """An agent node that counts its model turns."""

    def __init__(self, output: Any = None) -> None:
        self.calls = 0
        self.output = {"messages": [AIMessage("done")]} if output is None else output

    async def __call__(self, state: Any, runtime: Any) -> Any:
        self.calls += 1
        return self.output


def run(node: Any, state: dict) -> Any:
    return asyncio.run(node(state, Runtime(context=AgentContext())))


def test_a_tool_turn_at_the_budget_goes_to_finalize_without_a_model_call():
    turn = Turn()
    state = {"messages": TURN, **PENDING_MARK, "tool_calls_made": 3, "run_settings": {"max_tool_calls": 3}}
    assert run(gate_after_tools(turn, NO_METER), state) == {"bookkeeping": {"after_tools": "toolLimitFinalize"}}
    assert turn.calls == 0


def test_a_tool_turn_under_the_budget_runs_the_turn_and_clears_the_mark():
    turn = Turn()
    state = {"messages": TURN, **PENDING_MARK, "tool_calls_made": 1, "run_settings": {"max_tool_calls": 3}}
    cleared = {"bookkeeping": {"after_tools": ""}}
    assert run(gate_after_tools(turn, NO_METER), state) == {"messages": turn.output["messages"], **cleared}
    assert turn.calls == 1


def test_after_the_node_it_was_sent_to_the_next_step_calls_the_model():
    # toolLimitFinalize ran and routed back: the stale mark is not a second decision (no loop)
    turn = Turn()
    spent = {"tool_calls_made": 3, "run_settings": {"max_tool_calls": 3}}
    state = {"messages": TURN, "bookkeeping": {"after_tools": "toolLimitFinalize"}, **spent}
    assert run(gate_after_tools(turn, NO_METER), state)["bookkeeping"]["after_tools"] == ""
    assert turn.calls == 1


def test_a_step_not_after_tools_is_the_turn_alone():
    turn = Turn()
    assert run(gate_after_tools(turn, NO_METER), {"messages": [HumanMessage("q")]}) is turn.output


def test_hooks_commands_get_the_clearing_as_one_more_command():
    turn = Turn([Command(update={"messages": [AIMessage("a")]})])
    out = run(gate_after_tools(turn, NO_METER), {"messages": TURN, "bookkeeping": {"after_tools": PENDING}})
    assert isinstance(out, list) and len(out) == 2 and out[-1].update == {"bookkeeping": {"after_tools": ""}}


def test_the_tools_node_marks_its_update():
    tools = Turn({"messages": [ToolMessage("1", tool_call_id="c1")]})
    assert run(mark_tool_turn(tools), {})["bookkeeping"]["after_tools"] == PENDING


def test_the_mark_joins_the_bookkeeping_the_tools_node_wrote():
    # (one key holds every entry: the mark must not replace the turn's own entries)
    tools = Turn({"messages": [], "bookkeeping": {"notice": "", "retrievals_made": 2}})
    out = run(mark_tool_turn(tools), {})
    assert out["bookkeeping"] == {"notice": "", "retrievals_made": 2, "after_tools": PENDING}


def test_the_agents_edge_follows_where_the_step_sent_the_run_first():
    route = forwarded_first(edge(lambda state: END))
    for to in ("handoff", "toolLimitFinalize", "summarize"):
        state = {"bookkeeping": {"after_tools": to}}
        assert forwarded(state) == to and route.func(state) == to
    for mark in (PENDING, "", None, "agent"):
        state = {"bookkeeping": {"after_tools": mark}}
        assert forwarded(state) is None and route.func(state) == END
