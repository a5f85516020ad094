"""The dual graph: brainstorm, execute an objective through the planner, answer — over real HTTP."""

from __future__ import annotations

import pytest
from conftest import offered, openai_model, run_with_events
from langgraph.checkpoint.memory import InMemorySaver
from planner_support import make_registry

from smart_agent.config.context import Context
from smart_agent.graphs.dual import build_dual_graph
from smart_agent.nodes.dual import DECIDE, LAST_STEP, parse_decision, route_after_decide
from smart_agent.testing.scripted_server import text, tool_call


def ctx(**kw):
    return Context(model="openai:scripted-model", memory=False, **kw)


run = run_with_events


async def test_dual_brainstorms_executes_through_the_planner_and_answers(scripted_server):
    registry, calls = make_registry()
    plan = {"steps": [{"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}}]}
    srv = scripted_server([
        tool_call(DECIDE, {"action": "brainstorm", "thought": "I need the sum of 2 and 3; the add tool computes it."}),
        text('Sure.\n```json\n{"action": "execute", "objective": "Add 2 and 3"}\n```'),
        tool_call("submit_plan", plan),          # the planner plans the objective...
        text("The sum is 5."),                   # ...and synthesizes its answer
        text("hmm, let me think"),               # not a decision: sent back
        tool_call(DECIDE, {"action": "final", "answer": "2 + 3 = 5"}),
    ])
    graph = build_dual_graph(model=openai_model(srv), registry=registry, checkpointer=InMemorySaver())
    final, events = await run(graph, "What is 2 + 3?", ctx())

    assert final["answer"] == "2 + 3 = 5"
    assert calls["add"] == 1
    assert final["thoughts"] == ["I need the sum of 2 and 3; the add tool computes it."]
    assert final["assets"] == {
        "a1": {"id": "a1", "objective": "Add 2 and 3", "answer": "The sum is 5.", "status": "ok"}
    }
    assert final["iterations"] == 4
    reqs = srv.requests
    assert offered(reqs[0]) == [DECIDE] and offered(reqs[2]) == ["submit_plan"]
    assert "Add 2 and 3" in reqs[2]["messages"][-1]["content"]  # the planner got the objective
    # the decision after the execution sees the thought and the asset
    after = reqs[4]["messages"][-1]["content"]
    assert "I need the sum of 2 and 3" in after and "[a1] objective: Add 2 and 3" in after and "The sum is 5." in after
    assert "not a valid decision" in reqs[5]["messages"][-1]["content"]
    actions = [e["action"] for e in events if e["event"] == "reasoning"]
    assert actions == ["brainstorm", "execute", "final"]
    steps = [(e["event"], e["step"], e.get("agent")) for e in events if e["event"] in ("step_start", "step_result")]
    # the execution a1, and inside it the planner's step s1, its events tagged with the asset
    assert steps == [("step_start", "a1", None), ("step_start", "s1", "a1"), ("step_result", "s1", "a1"),
                     ("step_result", "a1", None)]
    assert [e["event"] for e in events if e.get("agent") == "a1"][0] == "usage"  # the planner's model call
    assert events[-1]["event"] == "final_answer"


async def test_iteration_limit_forces_a_final_answer(scripted_server):
    srv = scripted_server(responder=lambda req: tool_call(DECIDE, {"action": "brainstorm", "thought": "more thinking"}))
    registry, _ = make_registry()
    graph = build_dual_graph(model=openai_model(srv), registry=registry)
    final, _ = await run(graph, "ponder", ctx(max_iterations=3))
    assert len(srv.requests) == 3 and LAST_STEP in srv.requests[-1]["messages"][-1]["content"]
    assert final["answer"] == "I reached the step limit before reaching an answer."
    assert final["thoughts"] == ["more thinking", "more thinking"]


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_parse_decision_is_lenient_about_shape():
    assert parse_decision({"action": "Brainstorm", "thought": " x "}) == (
        {"action": "brainstorm", "thought": "x"},
        None,
    )
    assert parse_decision({"objective": "do it"}) == ({"action": "execute", "objective": "do it"}, None)
    assert parse_decision([{"action": "final", "response": "42"}]) == ({"action": "final", "answer": "42"}, None)
    assert parse_decision({"decision": {"action": "finish", "answer": "ok"}})[0] == {"action": "final", "answer": "ok"}
    assert "must be one of" in parse_decision({"action": "dance"})[1]
    assert "needs a non-empty 'objective'" in parse_decision({"action": "execute"})[1]
    assert parse_decision("text")[0] is None


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_route_after_decide():
    assert route_after_decide({"decisions": [{"action": "execute", "objective": "x"}]}) == "execute"
    assert route_after_decide({"decisions": [{"action": "final", "answer": "x"}]}) == "finish"
    assert route_after_decide({"decisions": [{"action": "brainstorm", "thought": "x"}]}) == "brainstorm"
    assert route_after_decide({"decisions": [{"action": "final", "answer": "x"}], "decision_error": "bad"}) == "decide"
