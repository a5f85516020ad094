"""LangChain middleware in the loop's own nodes, with create_agent's semantics, through the real
OpenAI client against the scripted server: LangChain's own middleware classes (PII, tool-call
limits, model retry, tool emulation...) and the decorator forms, sync and async."""

from __future__ import annotations

import importlib
import json
import operator
from typing import Annotated, Any, NotRequired

import pytest
from conftest import TRIAGE_MATH_TEAM, loop_context, openai_model
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    HumanInTheLoopMiddleware,
    ModelRequest,
    ModelRetryMiddleware,
    PIIMiddleware,
    ToolCallLimitMiddleware,
    after_agent,
    after_model,
    before_agent,
    before_model,
    hook_config,
    wrap_model_call,
    wrap_tool_call,
)
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.dual import build_dual_graph
from smart_agent.graphs.fleet import build_fleet_graph
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.nodes.dual import DECIDE
from smart_agent.nodes.fleet import SUBMIT_SUBTASKS
from smart_agent.testing.script import error
from smart_agent.testing.scripted_server import text, tool_call, tool_calls

pytestmark = pytest.mark.graph

ADDRESS = "bob@example.com"


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_the_issues_check_pii_tool_limit_and_a_model_hook(scripted_server, workspace):
    seen: list[ModelRequest] = []

    @wrap_model_call
    async def spy(request, handler):
        seen.append(request)
        return await handler(request)

    srv = scripted_server([
        tool_calls([("calculator", {"expression": "2+2"}), ("calculator", {"expression": "3+3"})]),
        tool_call("calculator", {"expression": "4+4"}),
        lambda req: text("results: " + " | ".join(tool_results(req))),
    ])
    graph = build_agent_graph(model=openai_model(srv), middleware=[
        PIIMiddleware("email", strategy="redact", apply_to_input=True),
        ToolCallLimitMiddleware(tool_name="calculator", run_limit=1),
        spy,
    ])
    final = await graph.ainvoke({"task": f"Mail {ADDRESS} the sums"}, context=loop_context(workspace))
    assert len(srv.requests) == 3 and ADDRESS not in json.dumps(srv.requests)
    assert "[REDACTED_EMAIL]" in json.dumps(srv.requests[0])
    real = [r for r in tool_results(srv.requests[-1]) if "limit" not in r]
    assert real == ["4"], tool_results(srv.requests[-1])  # one real result: the others were refused
    assert len(seen) == len(srv.requests)  # the hook saw every model request
    assert final["answer"].startswith("results: ")


async def test_sync_and_async_state_hooks_run_in_order_each_turn(scripted_server, workspace):
    log: list[str] = []

    @before_agent
    def started(state, runtime):
        log.append("before_agent")

    @before_model
    async def before(state, runtime):
        log.append("before_model")

    @after_model
    def after(state, runtime):
        log.append("after_model")

    @after_agent
    async def ended(state, runtime):
        log.append(f"after_agent:{state.get('answer')}")

    srv = scripted_server([tool_call("calculator", {"expression": "6*7"}), text("42")])
    graph = build_agent_graph(model=openai_model(srv), middleware=[started, before, after, ended])
    await graph.ainvoke({"task": "6*7?"}, context=loop_context(workspace))
    assert log == ["before_agent", "before_model", "after_model", "before_model", "after_model", "after_agent:42"]


class Counting(AgentMiddleware):
    """A middleware of its own: a state key of its own, a tool, and a count of model replies."""

    class State(AgentState):
        replies: NotRequired[Annotated[int, operator.add]]

    state_schema = State

    def __init__(self) -> None:
        super().__init__()

        @tool
        def shout(word: str) -> str:
            """Say the word loudly."""
            return word.upper() + "!"

        self.tools = [shout]

    async def aafter_model(self, state, runtime):
        return {"replies": 1}


async def test_state_schema_keys_join_the_state_and_tools_are_offered(scripted_server, workspace):
    srv = scripted_server([tool_call("shout", {"word": "hi"}), lambda req: text(tool_results(req)[-1])])
    graph = build_agent_graph(model=openai_model(srv), middleware=[Counting()])
    final = await graph.ainvoke({"task": "shout hi"}, context=loop_context(workspace), stream_mode="values")
    assert "shout" in [t["function"]["name"] for t in srv.requests[0]["tools"]]
    assert final["answer"] == "HI!"


async def test_a_reducer_of_the_middleware_adds_up_across_turns(scripted_server, workspace):
    from langgraph.checkpoint.memory import InMemorySaver

    srv = scripted_server([tool_call("shout", {"word": "a"}), tool_call("shout", {"word": "b"}), text("done")])
    graph = build_agent_graph(model=openai_model(srv), middleware=[Counting()], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "count"}}
    await graph.ainvoke({"task": "shout twice"}, config=config, context=loop_context(workspace))
    assert (await graph.aget_state(config)).values["replies"] == 3


async def test_a_declared_jump_to_end_stops_before_the_model(scripted_server, workspace):
    @before_model(can_jump_to=["end"])
    def gate(state, runtime):
        return {"messages": [AIMessage("Closed for today.")], "jump_to": "end"}

    srv = scripted_server([text("never")])
    graph = build_agent_graph(model=openai_model(srv), middleware=[gate])
    final = await graph.ainvoke({"task": "hello"}, context=loop_context(workspace))
    assert srv.requests == [] and final["messages"][-1].content == "Closed for today."


async def test_after_model_jump_to_model_asks_again(scripted_server, workspace):
    class Insist(AgentMiddleware):
        def __init__(self) -> None:
            super().__init__()
            self.asked = 0

        @hook_config(can_jump_to=["model"])
        async def aafter_model(self, state, runtime):
            self.asked += 1
            if self.asked == 1:
                return {"messages": [SystemMessage("Answer with a number.")], "jump_to": "model"}
            return None

    srv = scripted_server([text("forty-two"), text("42")])
    graph = build_agent_graph(model=openai_model(srv), middleware=[Insist()])
    final = await graph.ainvoke({"task": "6*7?"}, context=loop_context(workspace))
    assert len(srv.requests) == 2 and final["answer"] == "42"


def sender() -> tuple[Any, list[str]]:
    sent: list[str] = []

    @tool
    def send(to: str) -> str:
        """Send the report to an address."""
        sent.append(to)
        return f"sent to {to}"

    return send, sent


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_langchains_hitl_middleware_pauses_after_the_reply_without_asking_again(
    scripted_server, workspace, decision
):
    """HumanInTheLoopMiddleware interrupts in after_model: the resume reviews the checkpointed reply
    (the model is not called again for it), and the decision is the one applied."""
    send, sent = sender()
    srv = scripted_server([tool_call("send", {"to": "ops"}), lambda req: text("done: " + tool_results(req)[0])])
    hitl = HumanInTheLoopMiddleware({"send": {"allowed_decisions": ["approve", "reject"]}})
    graph = build_agent_graph(model=openai_model(srv), tools=[send], middleware=[hitl], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": f"hitl-{decision}"}}
    paused = await graph.ainvoke({"task": "send it"}, config, context=loop_context(workspace))
    [pending] = paused["__interrupt__"]
    assert pending.value["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
    assert len(srv.requests) == 1 and sent == []
    final = await graph.ainvoke(
        Command(resume={"decisions": [{"type": decision, "message": "not now"}]}), config,
        context=loop_context(workspace),
    )  # fmt: skip
    assert len(srv.requests) == 2  # one reply reviewed, one answer: no model call was repeated
    assert sent == (["ops"] if decision == "approve" else [])
    assert final["answer"].startswith("done: ")
    assert ("sent to ops" in final["answer"]) is (decision == "approve")


async def test_wrap_model_call_may_change_the_request_and_the_response(scripted_server, workspace):
    @wrap_model_call
    async def edit(request, handler):
        only_calculator = [t for t in request.tools if getattr(t, "name", "") == "calculator"]
        request = request.override(
            system_message=SystemMessage("You are terse."), tools=only_calculator, model_settings={"temperature": 0}
        )
        response = await handler(request)
        reply = response.result[-1]
        return AIMessage(content=f"[checked] {reply.content}", tool_calls=reply.tool_calls, id=reply.id)

    srv = scripted_server([text("hello")])
    graph = build_agent_graph(model=openai_model(srv), middleware=[edit])
    final = await graph.ainvoke({"task": "hi"}, context=loop_context(workspace))
    (request,) = srv.requests
    assert request["messages"][0] == {"role": "system", "content": "You are terse."}
    assert [t["function"]["name"] for t in request["tools"]] == ["calculator"] and request["temperature"] == 0
    assert final["answer"] == "[checked] hello"


async def test_wrap_tool_call_may_replace_retry_or_short_circuit(scripted_server, workspace):
    attempts: list[dict[str, Any]] = []

    @wrap_tool_call
    async def guard(request, handler):
        if request.tool_call["name"] == "read_file":  # short-circuit: never runs
            return ToolMessage("reading is off today", tool_call_id=request.tool_call["id"], status="error")
        fixed = request.override(tool_call={**request.tool_call, "args": {"expression": "1+1"}})  # replace
        first = await handler(fixed)
        attempts.append(fixed.tool_call["args"])
        return first if first.status != "error" else await handler(fixed)  # retry

    srv = scripted_server([
        tool_calls([("calculator", {"expression": "oops"}), ("read_file", {"path": "x.txt"})]),
        lambda req: text(" | ".join(tool_results(req))),
    ])
    graph = build_agent_graph(model=openai_model(srv), middleware=[guard])
    final = await graph.ainvoke({"task": "go"}, context=loop_context(workspace))
    assert final["answer"] == "2 | reading is off today" and attempts == [{"expression": "1+1"}]


async def test_a_middleware_retrying_a_tool_spends_the_tool_budget(scripted_server, workspace):
    @tool
    def flaky(n: int) -> str:
        """Fails."""
        raise RuntimeError("down")

    @wrap_tool_call
    async def stubborn(request, handler):
        result = await handler(request)
        for _ in range(5):
            result = await handler(request)
        return result

    srv = scripted_server([tool_call("flaky", {"n": 1}), lambda req: text(tool_results(req)[-1])])
    graph = build_agent_graph(model=openai_model(srv), tools=[flaky], middleware=[stubborn])
    final = await graph.ainvoke({"task": "go"}, context=loop_context(workspace, max_tool_calls=3))
    assert "tool budget exhausted" in final["answer"] and final["tool_calls_made"] == 3


async def test_the_planner_runs_the_model_and_tool_hooks(scripted_server, workspace):
    models, tools = [], []

    @wrap_model_call
    async def on_model(request, handler):
        models.append(len(request.messages))
        return await handler(request)

    @wrap_tool_call
    async def on_tool(request, handler):
        tools.append(request.tool_call["name"])
        return await handler(request)

    plan = {"steps": [{"id": "s1", "tool": "calculator", "args": {"expression": "6*7"}}]}
    srv = scripted_server([tool_call("submit_plan", plan), text("It is 42.")])
    graph = build_planner_graph(model=openai_model(srv), middleware=[on_model, on_tool])
    final = await graph.ainvoke({"task": "6*7"}, context=loop_context(workspace))
    assert final["answer"] == "It is 42." and len(models) == 2 and tools == ["calculator"]


async def test_the_fleet_runs_the_hooks_in_its_coordinator_and_workers(scripted_server, workspace):
    calls: list[str] = []

    @wrap_model_call
    async def on_model(request, handler):
        calls.append("model")
        return await handler(request)

    def respond(req):
        names = [t["function"]["name"] for t in req.get("tools") or []]
        if SUBMIT_SUBTASKS in names:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": ["say a", "say b"]})
        return text("ok")

    srv = scripted_server(responder=respond)
    graph = build_fleet_graph(model=openai_model(srv), middleware=[on_model])
    await graph.ainvoke({"task": "two things"}, context=loop_context(workspace, max_workers=1))
    assert len(calls) == len(srv.requests) == 4  # decompose, two workers, aggregate


async def test_langchains_model_retry_middleware_retries_a_failed_model_call(scripted_server, workspace):
    srv = scripted_server([error(500, "overloaded"), text("fine")])
    retry = ModelRetryMiddleware(max_retries=1, initial_delay=0)
    graph = build_agent_graph(model=openai_model(srv), middleware=[retry])
    final = await graph.ainvoke({"task": "hello"}, context=loop_context(workspace))
    assert final["answer"] == "fine" and len(srv.requests) == 2


async def test_the_dual_graph_runs_the_model_hooks_on_its_decisions(scripted_server, workspace):
    seen: list[str] = []

    @wrap_model_call
    async def on_model(request, handler):
        seen.append(str(request.messages[-1].content)[:40])
        return await handler(request)

    srv = scripted_server([
        tool_call(DECIDE, {"action": "brainstorm", "thought": "Nothing to run."}),
        tool_call(DECIDE, {"action": "final", "answer": "done"}),
    ])
    graph = build_dual_graph(model=openai_model(srv), middleware=[on_model])
    final = await graph.ainvoke({"task": "think"}, context=loop_context(workspace))
    assert final["answer"] == "done" and len(seen) == len(srv.requests) == 2  # each decision's request


TEAM_WITH_MIDDLEWARE = TRIAGE_MATH_TEAM + "    middleware: [team_hooks:COUNT]\n"

HOOKS_MODULE = """\
from langchain.agents.middleware import before_model

SEEN = []


@before_model
def COUNT(state, runtime):
    SEEN.append(state["messages"][-1].type)
"""


async def test_an_agents_file_gives_one_member_its_own_middleware(scripted_server, workspace, tmp_path, monkeypatch):
    """The agents file's `middleware:` runs on its member's turns only (math), not on triage's."""
    (tmp_path / "team_hooks.py").write_text(HOOKS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    team = tmp_path / "team.yaml"
    team.write_text(TEAM_WITH_MIDDLEWARE)
    srv = scripted_server([
        tool_call("transfer_to_math", {}),
        tool_call("calculator", {"expression": "6*7"}),
        text("42"),
    ])
    graph = build_agent_graph(model=openai_model(srv), agents_file=team)
    final = await graph.ainvoke({"task": "6*7?"}, context=loop_context(workspace))
    team_hooks = importlib.import_module("team_hooks")  # the module the agents file named

    assert final["answer"] == "42" and len(srv.requests) == 3
    assert team_hooks.SEEN == ["tool", "tool"]  # math's two turns (after the handoff, after the calculator)
