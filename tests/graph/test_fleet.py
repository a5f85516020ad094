"""The fleet graph through the real langchain-openai client against a scripted server."""

from __future__ import annotations

import threading

import pytest
from conftest import openai_model, run_with_events
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Send

from smart_agent.config.context import Context
from smart_agent.graphs.fleet import build_fleet_graph
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM, SUBMIT_SUBTASKS, route_after_dispatch, validate_subtasks
from smart_agent.testing.scripted_server import error, text, tool_call
from smart_agent.tools.registry import ToolRegistry

CITIES = ["Paris", "Rome", "Oslo", "Lima"]


def ctx(**kw):
    return Context(model="openai:scripted-model", memory=False, **kw)


run = run_with_events


def system_text(req):
    return req["messages"][0]["content"]


def fleet_responder(fail_city="Oslo", delay_s=1.0, subtasks=None, in_flight=None):
    """Decompose into one subtask per city; each worker answers after ``delay_s``; one fails.
    With ``in_flight={"now": 0, "peak": 0, "together": n}`` a worker's request also waits
    (up to 10 s) until n workers' requests are in flight, and ``peak`` records the most
    at once: workers run one by one get an error instead of an answer."""
    lock = threading.Lock()
    barrier = threading.Barrier(in_flight["together"]) if in_flight else None

    def wait_for_the_others() -> None:
        with lock:
            in_flight["now"] += 1
            in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
        try:
            barrier.wait(timeout=10)
        finally:
            with lock:
                in_flight["now"] -= 1

    def respond(req):
        tools = [t["function"]["name"] for t in req.get("tools") or []]
        if SUBMIT_SUBTASKS in tools:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": subtasks or [f"Population of {c}" for c in CITIES]})
        if system_text(req) == AGGREGATE_SYSTEM:
            return text("Summary: " + req["messages"][-1]["content"].replace("\n", " | "))
        task = req["messages"][-1]["content"]
        city = next(c for c in CITIES if f"Population of {c}" in task)
        if barrier is not None:
            wait_for_the_others()
        if city == fail_city:
            return error(500, "worker model exploded", delay_s=delay_s)
        return text(f"{city} has many people.", delay_s=delay_s)

    return respond


async def test_four_workers_run_in_parallel_and_one_failure_is_isolated(scripted_server):
    in_flight = {"now": 0, "peak": 0, "together": 4}
    srv = scripted_server(responder=fleet_responder(delay_s=0.2, in_flight=in_flight))
    graph = build_fleet_graph(model=openai_model(srv), registry=ToolRegistry())
    final, events = await run(graph, "Compare the populations of four cities", ctx(max_workers=4))

    assert in_flight["peak"] == 4, (
        f"{in_flight['peak']} workers' requests in flight at most; parallel workers have all four"
    )
    results = final["results"]
    assert [s["task"] for s in final["subtasks"]] == [f"Population of {c}" for c in CITIES]
    assert {wid: r["ok"] for wid, r in results.items()} == {"w1": True, "w2": True, "w3": False, "w4": True}
    assert results["w1"]["answer"] == "Paris has many people." and results["w4"]["answer"] == "Lima has many people."
    assert "worker model exploded" in results["w3"]["error"]
    # the aggregation saw every result, the failure included
    agg = srv.requests[-1]["messages"][-1]["content"]
    assert "Paris has many people." in agg and "Lima has many people." in agg and "FAILED" in agg
    assert final["answer"].startswith("Summary: Goal:") and final["status"] == "done"
    # each worker had its own conversation: one user message with only its subtask
    worker_reqs = [r for r in srv.requests[1:-1]]
    assert len(worker_reqs) == 4
    for req in worker_reqs:
        users = [m for m in req["messages"] if m["role"] == "user"]
        assert len(users) == 1 and sum(f"Population of {c}" in users[0]["content"] for c in CITIES) == 1
    kinds = [e["event"] for e in events]
    assert kinds.count("step_start") == 4 and kinds.count("step_result") == 4
    assert kinds.index("plan") < kinds.index("step_start") and kinds[-1] == "final_answer"
    plan = next(e for e in events if e["event"] == "plan")
    assert [s["id"] for s in plan["subtasks"]] == ["w1", "w2", "w3", "w4"]
    failed = [e for e in events if e["event"] == "step_result" and not e["ok"]]
    assert [e["step"] for e in failed] == ["w3"]
    # the workers' own events reach the fleet's stream, tagged with the worker id
    assert {e.get("agent") for e in events if e["event"] == "usage"} == {None, "w1", "w2", "w4"}


async def test_max_workers_bounds_the_rounds(scripted_server):
    srv = scripted_server(responder=fleet_responder(fail_city=None, delay_s=0.3))
    graph = build_fleet_graph(model=openai_model(srv), registry=ToolRegistry(), checkpointer=InMemorySaver())
    final, events = await run(graph, "four cities, two at a time", ctx(max_workers=2), thread="f1")
    rounds = [e["round"] for e in events if e["event"] == "step_start"]
    assert sorted(rounds) == [1, 1, 2, 2] and final["round"] == 2
    assert all(r["ok"] for r in final["results"].values())
    # a second run on the same thread starts from a clean slate
    srv2_final, _ = await run(graph, "again", ctx(max_workers=4), thread="f1")
    assert set(srv2_final["results"]) == {"w1", "w2", "w3", "w4"} and srv2_final["round"] == 1


async def test_invalid_subtasks_are_sent_back_then_fall_back_to_the_goal(scripted_server):
    too_many = tool_call(SUBMIT_SUBTASKS, {"subtasks": [f"t{i}" for i in range(9)]})
    srv = scripted_server([too_many, text("not json at all"), text("did the whole goal"), text("final")])
    graph = build_fleet_graph(model=openai_model(srv), registry=ToolRegistry())
    final, events = await run(graph, "one big goal", ctx(max_subtasks=3))
    assert "9 subtasks is too many" in srv.requests[1]["messages"][-1]["content"]
    assert [s["task"] for s in final["subtasks"]] == ["one big goal"]
    assert final["results"]["w1"]["answer"] == "did the whole goal" and final["answer"] == "final"
    assert any(e["event"] == "error" and e["node"] == "decompose" for e in events)


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_validate_subtasks():
    assert validate_subtasks(["a", " b ", "a"], 5) == (["a", "b"], [])
    assert validate_subtasks({"subtasks": [{"task": "x"}, "y"]}, 5) == (["x", "y"], [])
    assert validate_subtasks([], 5)[1] == ["the list of subtasks is empty"]
    assert validate_subtasks(["a", ""], 5)[1] == ["subtask 1 must be a non-empty string"]
    assert "too many" in validate_subtasks(["a", "b", "c"], 2)[1][0]
    assert validate_subtasks("a", 5)[0] == [] and validate_subtasks({"x": 1}, 5)[0] == []


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_route_after_dispatch():
    usage = {"model_calls": 1, "input_tokens": 5, "output_tokens": 1, "cost_usd": 0.0}
    state = {"status": "running", "ready": ["w2"], "goal": "g", "round": 1, "budget_key": "k1", "usage": usage,
             "tool_calls_made": 3, "subtasks": [{"id": "w1", "task": "a"}, {"id": "w2", "task": "b"}]}
    assert route_after_dispatch(state) == [
        Send("worker", {"id": "w2", "task": "b", "goal": "g", "round": 1, "budget_key": "k1", "usage": usage,
                        "tool_calls_made": 3})
    ]  # the round's shared budgets (usage.shared_meter): the run's usage and tool calls so far
    assert route_after_dispatch({**state, "status": "aggregating", "ready": []}) == "aggregate"
    assert route_after_dispatch({"status": "done", "subtasks": []}) == "__end__"
