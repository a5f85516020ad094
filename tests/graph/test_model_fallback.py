"""Model fallback (fallback_models) in every node, through models.invoke_model: model A
answers HTTP 500, the same request goes to B with the same tools bound."""

from __future__ import annotations

import pytest
from conftest import offered, run_with_events
from planner_support import make_registry

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.dual import build_dual_graph
from smart_agent.models.chat import ModelConfigError
from smart_agent.nodes.dual import DECIDE
from smart_agent.testing.scripted_server import text, tool_call


@pytest.fixture
def server(openai_server):
    def make(replies, first_error=None):
        replies = iter(replies)
        error = first_error or {"status": 500, "message": "model A is down"}
        return openai_server(responder=lambda req: {"error": error} if req["model"] == "A" else next(replies))

    return make


def ctx(workspace=None, **kw):
    kw.setdefault("workspace", str(workspace) if workspace else "")
    return Context(model="openai:A", fallback_models=["openai:B"], model_max_retries=0, memory=False, **kw)


async def test_agent_turns_fall_back_with_the_tools_bound(server, workspace):
    srv = server([tool_call("calculator", {"expression": "6*7"}), text("42")])
    final, events = await run_with_events(build_agent_graph(), "6*7?", ctx(workspace), thread=None)
    assert final["answer"] == "42" and final["tool_calls_made"] == 1
    assert [r["model"] for r in srv.requests] == ["A", "B", "A", "B"]  # each turn tries A first
    assert "calculator" in offered(srv.requests[1]) and offered(srv.requests[1]) == offered(srv.requests[0])
    fallbacks = [e for e in events if e["event"] == "model_fallback"]
    assert len(fallbacks) == 2 and fallbacks[0]["from"] == "openai:A" and fallbacks[0]["to"] == "openai:B"
    assert "model A is down" in fallbacks[0]["error"]


async def test_configuration_errors_do_not_fall_back(server, workspace):
    srv = server([text("never")], first_error={"status": 404, "message": "no such model"})
    with pytest.raises(ModelConfigError, match="does not know this model"):
        await run_with_events(build_agent_graph(), "hi", ctx(workspace), thread=None)
    assert [r["model"] for r in srv.requests] == ["A"]


async def test_dual_decide_plan_and_synthesize_fall_back(server):
    registry, calls = make_registry()
    plan = {"steps": [{"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}}]}
    srv = server([
        tool_call(DECIDE, {"action": "execute", "objective": "Add 2 and 3"}),
        tool_call("submit_plan", plan),
        text("The sum is 5."),
        tool_call(DECIDE, {"action": "final", "answer": "2 + 3 = 5"}),
    ])
    final, events = await run_with_events(build_dual_graph(registry=registry), "2 + 3?", ctx(), thread=None)
    assert final["answer"] == "2 + 3 = 5" and calls["add"] == 1
    b_requests = [r for r in srv.requests if r["model"] == "B"]
    assert [offered(r) for r in b_requests] == [[DECIDE], ["submit_plan"], [], [DECIDE]]
    assert [r["model"] for r in srv.requests] == ["A", "B"] * 4  # decide, plan, synthesize, decide
    assert sum(e["event"] == "model_fallback" for e in events) >= 2  # (the planner's own run inside)
