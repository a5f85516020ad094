"""Review of planner steps: which ready steps wait for a human, and the routes around ``review_steps`` (pure)."""

from __future__ import annotations

from langgraph.types import Send
from planner_support import make_registry

from smart_agent.config.context import Context
from smart_agent.nodes.planner.common import offered_registry
from smart_agent.nodes.planner.review import rejected_result, review_calls
from smart_agent.nodes.planner.routes import route_after_dispatch, route_after_review
from smart_agent.nodes.planner.schema import Plan
from smart_agent.tools.ask import ASK_TAG, ask_user
from smart_agent.tools.registry import ToolMeta

PLAN = Plan.model_validate(
    {
        "steps": [
            {"id": "a", "tool": "search", "args": {"query": "q"}},
            {"id": "b", "tool": "echo", "args": {"text": "first: ${a.results[0].title}"}, "depends_on": ["a"]},
            {"id": "c", "tool": "upper", "args": {"text": "x"}},
            {"id": "d", "tool": "echo", "args": {"text": "${a.missing}"}},
            {"id": "e", "tool": "nowhere", "args": {}},
        ]
    }
)
A_OUTPUT = '{"results": [{"title": "About q"}]}'


def registry():
    reg, _ = make_registry()
    reg.register(reg.get("upper"), ToolMeta(side_effects=True), replace=True)
    return reg


def ok(sid, output):
    return {"id": sid, "status": "ok", "output": output}


def test_review_calls_resolve_references_and_follow_the_approve_setting():
    results = {"a": ok("a", A_OUTPUT)}
    calls = review_calls(PLAN, ["b", "c"], results, {}, registry(), "echo")
    every = ["approve", "edit", "reject"]
    assert calls == [{"id": "b", "name": "echo", "args": {"text": "first: About q"}, "allowed": every}]
    assert review_calls(PLAN, ["b", "c"], results, {}, registry(), "side-effects=approve/reject") == [
        {"id": "c", "name": "upper", "args": {"text": "x"}, "allowed": ["approve", "reject"]}
    ]
    assert [c["id"] for c in review_calls(PLAN, ["b", "c"], results, {}, registry(), "echo,side-effects")] == ["b", "c"]
    assert review_calls(PLAN, ["b", "c"], results, {}, registry(), "none") == []


def test_review_calls_skip_decided_steps_and_steps_that_fail_without_running():
    results = {"a": ok("a", A_OUTPUT)}
    assert review_calls(PLAN, ["b"], results, {"b": {"type": "approve"}}, registry(), "echo") == []
    # d's reference does not resolve, e's tool is unknown: both fail in run_step, never asked about
    assert review_calls(PLAN, ["d", "e"], results, {}, registry(), "echo,nowhere") == []


def test_rejected_result_is_a_failure_carrying_the_message():
    state = {"plan": PLAN.model_dump(), "round": 2, "replans": 1}
    result = rejected_result(state, {"id": "c", "name": "upper", "args": {"text": "x"}}, "not now")
    assert result["status"] == "failed" and result["kind"] == "rejected" and result["attempts"] == 0
    assert "not now" in result["error"] and "'upper'" in result["error"]
    assert (result["index"], result["round"], result["plan_round"]) == (2, 2, 1)


def test_route_after_dispatch_goes_to_review_when_steps_wait():
    state = {"status": "running", "ready": ["a", "c"], "plan": PLAN.model_dump(), "step_results": {}}
    assert route_after_dispatch({**state, "awaiting_review": [{"id": "c", "name": "upper", "args": {}}]}) == (
        "review_steps"
    )
    sends = route_after_dispatch({**state, "awaiting_review": []})
    assert [s.arg["step"]["id"] for s in sends] == ["a", "c"]


def test_route_after_review_runs_what_was_not_rejected_with_the_edits():
    edit = {"type": "edit", "name": "upper", "args": {"text": "edited"}}
    state = {
        "status": "running",
        "ready": ["a", "c", "e"],
        "plan": PLAN.model_dump(),
        "step_results": {"e": {"id": "e", "status": "failed", "kind": "rejected"}},
        "step_reviews": {"c": edit, "e": {"type": "reject", "message": ""}},
    }
    sends = route_after_review(state)
    assert all(isinstance(s, Send) and s.node == "run_step" for s in sends)
    assert [(s.arg["step"]["id"], s.arg["review"]) for s in sends] == [("a", None), ("c", edit)]
    assert route_after_review({**state, "ready": ["e"]}) == "dispatch"  # all rejected: schedule again


def test_offered_registry_has_ask_user_only_while_the_run_asks():
    reg = registry()
    reg.register(ask_user, ToolMeta(tags=(ASK_TAG,)))
    assert "ask_user" not in offered_registry(reg, Context()).names()
    assert "ask_user" in offered_registry(reg, Context(ask_user=True)).names()
    assert offered_registry(reg, Context(ask_user=True, tools=["echo"])).names() == ["echo"]
    assert offered_registry(reg, Context()).meta("upper").side_effects  # metadata kept
