"""Attack: malformed replies in the dual, fleet and planner graphs and in structured
output, through the real langchain-openai client over HTTP: non-object tool arguments,
an empty aggregation, a plan or answer nested 100k levels deep. Each is sent back to the
model (and the run finishes with the scripted answer) or fails with one line."""

from __future__ import annotations

import pytest
from conftest import openai_model, run_graph, run_with_events
from planner_support import make_registry
from planner_support import run_graph as run_planner

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.dual import build_dual_graph
from smart_agent.graphs.fleet import build_fleet_graph
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.models.chat import ModelReplyError
from smart_agent.nodes.dual import DECIDE
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM, SUBMIT_SUBTASKS
from smart_agent.testing.scripted_server import text, tool_call
from smart_agent.tools.registry import ToolRegistry

pytestmark = pytest.mark.graph

DEEP = 100_000


def ctx(**kw):
    return Context(model="openai:scripted-model", memory=False, **kw)


async def test_dual_decision_with_non_object_arguments_is_sent_back(scripted_server):
    srv = scripted_server([
        tool_call(DECIDE, '"final answer: 4"'),  # a JSON string, not an object
        tool_call(DECIDE, {"action": "final", "answer": "4"}),
    ])
    graph = build_dual_graph(model=openai_model(srv), registry=ToolRegistry())
    final, _ = await run_with_events(graph, "2+2?", ctx())
    assert final["answer"] == "4"
    assert (
        "not a valid decision: expected a JSON object with an action, got str"
        in srv.requests[1]["messages"][-1]["content"]
    )


async def test_fleet_subtasks_given_as_a_bare_list_are_read(scripted_server):
    def respond(req):
        tools = [t["function"]["name"] for t in req.get("tools") or []]
        if SUBMIT_SUBTASKS in tools:
            return tool_call(SUBMIT_SUBTASKS, '["Population of Paris", "Population of Rome"]')  # a list, not an object
        if req["messages"][0]["content"] == AGGREGATE_SYSTEM:
            return text("both are big")
        return text("many people")

    srv = scripted_server(responder=respond)
    graph = build_fleet_graph(model=openai_model(srv), registry=ToolRegistry())
    final, _ = await run_with_events(graph, "compare", ctx())
    assert [s["task"] for s in final["subtasks"]] == ["Population of Paris", "Population of Rome"]
    assert final["answer"] == "both are big"


def fleet_with_aggregate(*aggregate_replies):
    replies = list(aggregate_replies)

    def respond(req):
        tools = [t["function"]["name"] for t in req.get("tools") or []]
        if SUBMIT_SUBTASKS in tools:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": ["only task"]})
        if req["messages"][0]["content"] == AGGREGATE_SYSTEM:
            return replies.pop(0)
        return text("worker result")

    return respond


async def test_fleet_empty_aggregation_is_asked_again_once(scripted_server):
    srv = scripted_server(responder=fleet_with_aggregate(text(""), text("the summary")))
    final, _ = await run_with_events(build_fleet_graph(model=openai_model(srv), registry=ToolRegistry()), "goal", ctx())
    assert final["answer"] == "the summary"
    assert "Your previous reply was empty" in srv.requests[-1]["messages"][-1]["content"]


async def test_fleet_content_filtered_aggregation_fails_the_run(scripted_server):
    blocked = text("", finish_reason="content_filter")
    srv = scripted_server(responder=fleet_with_aggregate(blocked, blocked))
    with pytest.raises(ModelReplyError, match="empty reply twice \\(finish_reason 'content_filter'\\)"):
        await run_with_events(build_fleet_graph(model=openai_model(srv), registry=ToolRegistry()), "goal", ctx())


def deep_plan() -> str:
    return '{"steps": ' + "[" * DEEP + "]" * DEEP + "}"


@pytest.mark.parametrize("method", ["tool", "text"])
async def test_a_plan_nested_100k_deep_is_a_validation_error_for_the_model(scripted_server, method):
    registry, calls = make_registry()
    good = {"steps": [{"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}}]}
    first = tool_call("submit_plan", deep_plan()) if method == "tool" else text(deep_plan())
    second = (
        tool_call("submit_plan", good)
        if method == "tool"
        else text('{"steps": [{"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}}]}')
    )
    srv = scripted_server([first, second, text("5")])
    graph = build_planner_graph(model=openai_model(srv), registry=registry, plan_method=method)
    final, _ = await run_planner(graph, {"task": "2+3"}, context=ctx())
    assert final["answer"] == "5" and calls["add"] == 1
    assert "nested too deeply" in srv.requests[1]["messages"][-1]["content"]


async def test_a_structured_answer_nested_100k_deep_is_sent_back(scripted_server, workspace):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    srv = scripted_server([text('{"city": ' + "[" * DEEP + "]" * DEEP + "}"), text('{"city": "Paris"}')])
    graph = build_agent_graph(model=openai_model(srv))
    # (a context budget that holds the 200 kB reply, so no summarization request intervenes)
    final = await run_graph(
        graph, "city?", ctx(workspace=str(workspace), output_schema=schema, context_token_limit=200_000)
    )
    assert final["structured_response"] == {"city": "Paris"}
    assert "nested too deeply" in srv.requests[1]["messages"][-1]["content"]


async def test_dual_with_no_valid_decision_fails_the_run_instead_of_a_canned_answer(scripted_server):
    srv = scripted_server(responder=lambda _req: text(""))  # every decision reply is empty
    graph = build_dual_graph(model=openai_model(srv), registry=ToolRegistry())
    with pytest.raises(ModelReplyError, match="no valid decision in 3 attempt"):
        await run_with_events(graph, "2+2?", ctx(max_iterations=3))
    assert len(srv.requests) == 3


async def test_dual_keeps_a_real_answer_found_before_the_limit(scripted_server):
    srv = scripted_server([
        tool_call(DECIDE, {"action": "brainstorm", "thought": "think first"}),
        text(""),
    ])
    graph = build_dual_graph(model=openai_model(srv), registry=ToolRegistry())
    final, _ = await run_with_events(graph, "2+2?", ctx(max_iterations=2))
    assert final["answer"] == "I reached the step limit before reaching an answer."  # a valid decision was made


async def test_a_plan_step_with_a_100k_character_tool_name_is_not_echoed_back(scripted_server):
    registry, calls = make_registry()
    bad = {"steps": [{"id": "s1", "tool": "x" * 100_000, "args": {}}]}
    good = {"steps": [{"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}}]}
    srv = scripted_server([tool_call("submit_plan", bad), tool_call("submit_plan", good), text("5")])
    graph = build_planner_graph(model=openai_model(srv), registry=registry)
    final, _ = await run_planner(graph, {"task": "2+3"}, context=ctx())
    assert final["answer"] == "5" and calls["add"] == 1
    feedback = srv.requests[1]["messages"][-1]["content"]
    assert f"uses tool '{'x' * 40}__clipped_100000', which does not exist" in feedback
    assert len(feedback) < 2_000
