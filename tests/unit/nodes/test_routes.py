"""Routing decisions of the agent loop, on hand-built states."""

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from smart_agent.nodes.routes import (
    END,
    pending_tool_calls,
    remembers,
    route_after_agent,
    route_after_resolver,
    route_after_tools,
    route_at_end,
)
from smart_agent.policies.loop_guard import (
    call_signature,
    cycle_length,
    loop_excess,
    loop_limit_reached,
    loop_stage,
    runs_after,
    window_after,
)
from smart_agent.policies.tool_budget import plan_calls, tool_limit_reached


def ai_with_calls(n=1):
    return AIMessage(
        "", tool_calls=[{"name": "calculator", "args": {"expression": "1"}, "id": f"c{i}"} for i in range(n)]
    )


def test_after_agent_runs_tools_when_model_asked():
    assert route_after_agent({"messages": [HumanMessage("q"), ai_with_calls()]}) == "tools"


def test_after_agent_ends_on_plain_answer():
    assert route_after_agent({"messages": [HumanMessage("q"), AIMessage("done")]}) == END


def test_after_agent_ends_when_finalizing_even_with_calls():
    assert route_after_agent({"messages": [ai_with_calls()], "bookkeeping": {"finalize": True}}) == END


def test_after_agent_treats_malformed_calls_as_calls():
    msg = AIMessage(
        "",
        invalid_tool_calls=[
            {"name": "calculator", "args": "{bad", "id": "x", "error": "bad json", "type": "invalid_tool_call"}
        ],
    )
    assert pending_tool_calls(msg)
    assert route_after_agent({"messages": [msg]}) == "tools"


def test_after_agent_ends_on_empty_state():
    assert route_after_agent({}) == END
    assert route_after_agent({"messages": [ToolMessage("x", tool_call_id="1")]}) == END


def test_after_tools_finalizes_exactly_at_limit():
    assert route_after_tools({"tool_calls_made": 2, "run_settings": {"max_tool_calls": 3}}) == "agent"
    assert route_after_tools({"tool_calls_made": 3, "run_settings": {"max_tool_calls": 3}}) == "toolLimitFinalize"
    assert route_after_tools({"tool_calls_made": 5, "run_settings": {"max_tool_calls": 3}}) == "toolLimitFinalize"


def test_limit_zero_means_no_tools():
    assert tool_limit_reached({"tool_calls_made": 0, "run_settings": {"max_tool_calls": 0}})
    assert not tool_limit_reached({"tool_calls_made": 0})


def test_plan_calls_splits_at_remaining_budget():
    calls = [{"id": str(i)} for i in range(5)]
    run, skipped = plan_calls(calls, made=18, limit=20)
    assert [c["id"] for c in run] == ["0", "1"] and [c["id"] for c in skipped] == ["2", "3", "4"]
    run, skipped = plan_calls(calls, made=25, limit=20)
    assert run == [] and len(skipped) == 5


# -- loop detection (loop_limit) ---------------------------------------------------------
def calc(expression, **extra):
    return {"name": "calculator", "args": {"expression": expression, **extra}, "id": "x"}


def test_same_call_means_same_name_and_canonical_json_arguments():
    a = {"name": "t", "args": {"a": 1, "b": [1, {"y": 2, "x": 1}]}, "id": "1"}
    b = {"name": "t", "args": {"b": [1, {"x": 1, "y": 2}], "a": 1}, "id": "2"}  # keys in another order, other id
    assert call_signature(a) == call_signature(b)
    assert call_signature(a) != call_signature({**a, "name": "u"})
    assert call_signature(a) != call_signature({**a, "args": {"a": 1.5, "b": [1, {"x": 1, "y": 2}]}})
    assert call_signature(calc("1")) != call_signature({"name": "calculator", "args": '{"expression": "1"}'})
    # The signature is the JSON of [name, canonical arguments], also for a name that is not a string.
    for call in (a, {"name": "é", "args": {"ü": 1}}, {"name": 3, "args": {"é": [1]}}, {"args": {}}):
        name = call.get("name") or ""
        args = json.dumps(call["args"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert call_signature(call) == json.dumps([name, args], ensure_ascii=False)


def after(signatures, window=(), runs=()):
    """``(loop_calls, loop_runs)`` after these signatures."""
    window, runs = list(window), list(runs)
    for s in signatures:
        runs = runs_after(window, runs, s)
        window = window_after(window, s)
    return window, runs


def test_runs_count_identical_calls_and_cycles_in_a_row_across_and_within_turns():
    a, b, c = (call_signature(calc(x)) for x in "123")
    window, runs = after([a])
    assert (window, runs) == ([a], [1, 1, 1, 1])
    window, runs = after([a, a], window, runs)  # identical calls of one turn count too
    assert runs[0] == 3 and window == [a, a, a]
    assert after([b], window, runs)[1][0] == 1  # another call starts over
    assert after([a, b, a], window, runs)[1][:2] == [1, 3]  # ... and a cycle of two begins: a,a,a,a,b,a
    assert after([a, b, a, b, a, b])[1] == [1, 6, 3, 6]  # a,b three times: a run of 6 of period 2
    assert after([a, b, c] * 3)[1] == [1, 2, 9, 4]  # period 3
    assert after([a, b, c])[1] == [1, 2, 3, 3]  # distinct calls: every run is as short as can be
    window, runs = after([a, b] * 10)
    assert len(window) == 4 and runs[1] == 20  # the window stays small, the run counts on
    assert after([], window, runs) == (window, runs)


def guarded(limit: int, **kept: Any) -> dict[str, Any]:
    """A state whose run has ``loop_limit`` ``limit`` and loop detection's ``kept`` (calls, runs, cycle)."""
    return {"bookkeeping": {"loop_guard": {"limit": limit, **kept}}}


def test_loop_excess_is_what_would_repeat_a_cycle_past_loop_limit_plus_one():
    calls = [calc("1") for _ in range(6)]
    assert set(loop_excess(guarded(3), calls).values()) == {5, 6}
    assert list(loop_excess(guarded(3), calls)) == [id(calls[4]), id(calls[5])]
    window, runs = after([call_signature(calc("1"))] * 3)
    carried = guarded(3, calls=window, runs=runs)  # earlier turns
    assert list(loop_excess(carried, calls[:3]).values()) == [5, 6]
    mixed = [calc("1"), calc("2"), calc("1"), calc("1")]
    assert loop_excess(guarded(1), mixed) == {}  # another call starts over: at most 2 in a row
    assert loop_excess(guarded(0), calls) == {}  # off
    assert loop_excess({}, calls) == {}  # no limit copied (a state from outside a run): off
    alternating = [calc(str(1 + i % 2)) for i in range(10)]
    assert list(loop_excess(guarded(3), alternating)) == [id(c) for c in alternating[7:]]


def test_loop_stage_notice_at_the_limit_finalize_after_it_off_at_zero():
    def stage(run, limit, period=1):
        return loop_stage([run if p == period else min(run, p) for p in range(1, 5)], limit)

    assert [stage(n, 3)[0] for n in range(6)] == ["none", "none", "none", "notice", "finalize", "finalize"]
    assert stage(1, 1) == ("notice", 1) and stage(2, 1) == ("finalize", 1)
    assert all(stage(n, 0) == ("none", 0) for n in range(10))
    assert [stage(n, 3, 2)[0] for n in (5, 6, 7)] == ["none", "notice", "finalize"]  # a,b three times
    assert [stage(n, 2, 3)[0] for n in (3, 5, 6, 7)] == ["none", "none", "notice", "finalize"]
    assert (cycle_length(1, 1), cycle_length(1, 3), cycle_length(3, 2)) == (1, 6, 6)  # a cycle: from twice


def test_after_tools_finalizes_a_loop_past_loop_limit():
    cycle = {"action": "notice", "period": 1, "repeats": 3, "tools": ["calculator"]}
    assert route_after_tools(guarded(3, cycle=cycle)) == "agent"  # at the limit: a notice, not yet the end
    finalize = {**cycle, "action": "finalize", "repeats": 4}
    assert route_after_tools(guarded(3, cycle=finalize)) == "toolLimitFinalize"
    assert loop_limit_reached(guarded(3, cycle=finalize))
    assert route_after_tools(guarded(0, cycle=finalize)) == "agent"  # off
    # no limit copied (from outside a run)
    assert route_after_tools({"bookkeeping": {"loop_guard": {"cycle": finalize}}}) == "agent"
    # not loop detection's (update_state may write it)
    assert route_after_tools({"bookkeeping": {"loop_guard": "finalize"}}) == "agent"


def test_memory_nodes_only_while_the_runs_memory_is_on(monkeypatch):
    from smart_agent.config.context import AgentContext

    monkeypatch.delenv("SMART_AGENT_MEMORY", raising=False)
    on, off = AgentContext(memory=True), AgentContext(memory=False)
    fresh = {"messages": [HumanMessage("q")]}
    assert route_after_resolver(fresh, on) == "memory_recall"
    assert route_after_resolver(fresh, off) == "agent"  # no budget in the state: nothing to compact
    # an earlier run's recalled block is cleared by memory_recall even with memory off now
    assert route_after_resolver({**fresh, "memory_context": "Memories: ..."}, off) == "memory_recall"
    assert route_after_resolver({**fresh, "recalled_memories": [{"key": "k"}]}, off) == "memory_recall"
    assert route_at_end(END, on) == "memory_write" and route_at_end(END, off) == END
    assert route_at_end("tools", on) == "tools" and route_at_end("structuredOutput", off) == "structuredOutput"


def test_memory_routes_outside_a_run_follow_the_environment(monkeypatch):
    monkeypatch.delenv("SMART_AGENT_MEMORY", raising=False)
    assert remembers(None) and route_after_resolver({"messages": [HumanMessage("q")]}) == "memory_recall"
    monkeypatch.setenv("SMART_AGENT_MEMORY", "false")
    assert not remembers(None) and route_at_end(END, None) == END



def test_track_repeats_writes_loop_detections_key_once_a_call_was_made():
    from smart_agent.policies.loop_guard import track_repeats

    one, two = call_signature(calc("1")), call_signature(calc("2"))
    first = track_repeats(guarded(3), [calc("1")])
    assert first == guarded(3, calls=[one], runs=[1, 1, 1, 1], cycle={})
    assert track_repeats(first, [calc("2")]) == guarded(3, calls=[one, two], runs=[1, 2, 2, 2], cycle={})
    assert track_repeats(first, [calc("1")]) == guarded(3, calls=[one, one], runs=[2, 2, 2, 2], cycle={})
    full = guarded(3, calls=[two, one, two, one], runs=[1, 2, 3, 4])
    three = call_signature(calc("3"))
    assert track_repeats(full, [calc("3")]) == guarded(3, calls=[one, two, one, three], runs=[1, 2, 3, 4], cycle={})
    same = guarded(3, calls=[one] * 4, runs=[2, 2, 3, 4])
    update = track_repeats(same, [calc("1")])  # the same call a third time: its notice
    notice = {"action": "notice", "period": 1, "repeats": 3, "tools": ["calculator"]}
    guard = update["bookkeeping"]["loop_guard"]
    assert guard == {"limit": 3, "calls": [one] * 4, "runs": [3, 3, 4, 5], "cycle": notice}
    assert "calculator" in update["bookkeeping"]["notice"]
    assert track_repeats(first, []) == {}  # no call: nothing written


def test_a_canonical_effect_that_fails_counts_the_arguments_as_they_are():
    call = calc("1", note="x")
    assert call_signature(call, lambda args: 1 / 0) == call_signature(call)
    assert call_signature(call, lambda args: {"expression": args["expression"]}) == call_signature(calc("1"))
    assert call_signature({"name": "t", "args": "not json"}, lambda args: {}) == call_signature(
        {"name": "t", "args": "not json"}
    )  # malformed arguments (a string): as they are


def test_past_limit_quick_answer_is_the_full_rule_for_every_small_run():
    import itertools

    from smart_agent.policies.loop_guard import cycle_length, past_limit

    for limit in range(0, 6):
        for runs in itertools.product(range(1, 14), repeat=4):
            full = limit > 0 and any(run > cycle_length(limit, p) + 1 for p, run in enumerate(runs, start=1))
            assert past_limit(list(runs), limit) == full, (runs, limit)
