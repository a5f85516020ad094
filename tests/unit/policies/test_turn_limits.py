"""The per-turn cap and the argument size limit, planned on a turn before anything runs."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from smart_agent.config.context import AgentContext
from smart_agent.policies.base import ToolTurn, TurnCall
from smart_agent.policies.turn_limits import TurnLimits


def planned(n: int, *, cap: int = 2, max_chars: int = 100, big: int = -1) -> ToolTurn:
    calls = [
        {"name": "lookup", "args": {"q": "x" * 200 if i == big else str(i)}, "id": f"c{i}", "type": "tool_call"}
        for i in range(n)
    ]
    message = AIMessage("", tool_calls=calls)
    ctx = AgentContext(max_tool_calls_per_turn=cap, max_tool_arg_chars=max_chars)
    turn = ToolTurn(state={}, ctx=ctx, meter=None, message=message, calls=[TurnCall(dict(c)) for c in calls])
    TurnLimits().plan(turn)
    return turn


def test_calls_within_both_limits_are_left_as_they_are():
    turn = planned(2)
    assert [c.id for c in turn.calls] == ["c0", "c1"]
    assert all(c.open and c.refusal is None for c in turn.calls) and turn.replacement is None


def test_one_call_over_the_cap_answers_for_itself():
    turn = planned(3)  # the cap is 2: the third is kept to answer, with nothing dropped after it
    assert [c.id for c in turn.calls] == ["c0", "c1", "c2"]
    assert [c.open for c in turn.calls] == [True, True, False] and turn.calls[2].notes["over_cap"]
    assert "per-turn" in turn.calls[2].events[0][1]["preview"]


def test_calls_beyond_the_cap_are_dropped_from_the_kept_reply():
    turn = planned(5)
    assert [c.id for c in turn.calls] == ["c0", "c1", "c2"] and not turn.calls[2].open
    assert turn.replacement is not None and [c["id"] for c in turn.replacement.tool_calls] == ["c0", "c1", "c2"]


def test_an_oversized_argument_is_refused_and_shrunk_in_the_history():
    turn = planned(2, big=1)
    assert turn.calls[0].refusal is None and turn.calls[1].refusal is not None
    assert turn.calls[1].refusal[1] == "args_too_large"
    assert turn.replacement is not None and "_truncated" in turn.replacement.tool_calls[1]["args"]
