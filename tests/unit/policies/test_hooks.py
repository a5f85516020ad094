"""policies/hooks.py: LangChain middleware composed with create_agent's semantics."""

from __future__ import annotations

import contextvars
import threading
from typing import Any, get_type_hints

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    after_agent,
    after_model,
    before_agent,
    before_model,
    hook_config,
    wrap_model_call,
    wrap_tool_call,
)
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from smart_agent.policies.hooks import Hooks, MiddlewareError
from smart_agent.state import AgentState, merge_messages

pytestmark = pytest.mark.unit


def _request(text: str = "hi") -> ModelRequest:
    return ModelRequest(model=None, messages=[HumanMessage(text)], tools=[])  # type: ignore[arg-type]


async def test_wrap_model_call_first_is_outermost_sync_and_async():
    seen: list[str] = []

    @wrap_model_call
    async def outer(request, handler):
        seen.append("outer in")
        response = await handler(request.override(messages=[*request.messages, HumanMessage("outer")]))
        seen.append("outer out")
        return response

    @wrap_model_call
    def inner(request, handler):  # a sync layer: its handler runs the rest on the event loop
        seen.append(f"inner in {threading.current_thread() is threading.main_thread()}")
        response = handler(request.override(messages=[*request.messages, HumanMessage("inner")]))
        seen.append("inner out")
        return response

    async def execute(request: ModelRequest) -> ModelResponse:
        seen.append("model " + ",".join(str(m.content) for m in request.messages))
        return ModelResponse(result=[AIMessage("done")])

    call = await Hooks([outer, inner]).call_model(_request(), execute)
    assert call.message.content == "done"
    assert seen == ["outer in", "inner in False", "model hi,outer,inner", "inner out", "outer out"]


async def test_a_retried_inner_call_drops_its_commands():
    attempts = []

    @wrap_model_call
    async def retry(request, handler):
        response = await handler(request)
        return await handler(request) if response.result[0].content == "bad" else response

    @wrap_model_call
    async def tagging(request, handler):
        response = await handler(request)
        return ExtendedModelResponse(response, Command(update={"tag": len(attempts)}))

    async def execute(request):
        attempts.append(1)
        return ModelResponse(result=[AIMessage("bad" if len(attempts) == 1 else "ok")])

    call = await Hooks([retry, tagging]).call_model(_request(), execute)
    assert call.message.content == "ok"
    assert [c.update for c in call.commands] == [{"tag": 2}]  # (the first attempt's {"tag": 1} is dropped)


async def test_short_circuit_and_aimessage_result():
    @wrap_model_call
    async def canned(request, handler):
        return AIMessage("canned")

    async def execute(request):  # pragma: no cover - never reached
        raise AssertionError("the model must not be called")

    assert (await Hooks([canned]).call_model(_request(), execute)).message.content == "canned"


async def test_state_hooks_order_updates_and_declared_jumps():
    order: list[str] = []

    @before_model
    def first(state, runtime):
        order.append("first:" + str(state.get("n")))
        return {"n": 1}

    @before_model(can_jump_to=["end"])
    async def second(state, runtime):
        order.append("second:" + str(state.get("n")))
        return {"n": 2, "jump_to": "end"}

    @before_model
    def third(state, runtime):  # pragma: no cover - the jump stops before it
        order.append("third")

    hooks = Hooks([first, second, third])
    result = await hooks.run_state_hooks(hooks.before_model, {"n": 0}, None)
    assert order == ["first:0", "second:1"]
    assert result.jump == "end" and result.updates == [{"n": 1}, {"n": 2}] and result.state["n"] == 2


async def test_an_undeclared_jump_is_ignored_as_create_agent_ignores_it():
    @after_model
    def jumper(state, runtime):
        return {"jump_to": "end"}

    hooks = Hooks([jumper])
    assert (await hooks.run_state_hooks(hooks.after_model, {}, None)).jump is None


async def test_after_hooks_run_in_reverse_order():
    class Named(AgentMiddleware):
        def __init__(self, label: str, log: list[str]) -> None:
            self.label, self.log = label, log

        @property
        def name(self) -> str:
            return self.label

        def after_model(self, state, runtime):
            self.log.append(self.label)

    log: list[str] = []
    hooks = Hooks([Named("a", log), Named("b", log)])
    await hooks.run_state_hooks(hooks.after_model, {}, None)
    assert log == ["b", "a"]


async def test_messages_updates_go_through_the_reducer():
    @before_agent
    def redact(state, runtime):
        m = state["messages"][-1]
        return {"messages": [m.model_copy(update={"content": "[redacted]"})]}

    hooks = Hooks([redact], reducers={"messages": merge_messages})
    message = HumanMessage("secret", id="m1")
    result = await hooks.run_state_hooks(hooks.before_agent, {"messages": [message]}, None)
    assert [m.content for m in result.state["messages"]] == ["[redacted]"]


async def test_a_sync_hook_runs_in_a_thread_with_the_callers_context():
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("node")

    @after_agent
    def look(state, runtime):
        return {"seen": (var.get(), threading.current_thread() is threading.main_thread())}

    hooks = Hooks([look])
    result = await hooks.run_state_hooks(hooks.after_agent, {}, None)
    assert result.state["seen"] == ("node", False)


async def test_wrap_tool_call_may_retry_replace_or_short_circuit() -> None:
    calls: list[dict[str, Any]] = []

    @wrap_tool_call
    async def guard(request, handler):
        if request.tool_call["args"].get("x") == "blocked":
            return ToolMessage("refused", tool_call_id=request.tool_call["id"], status="error")
        for _ in range(2):
            result = await handler(request.override(tool_call={**request.tool_call, "args": {"x": "edited"}}))
            if result.status != "error":
                return result
        return result

    async def execute(request: ToolCallRequest) -> ToolMessage:
        calls.append(request.tool_call["args"])
        status = "error" if len(calls) == 1 else "success"
        return ToolMessage("r", tool_call_id=request.tool_call["id"], status=status)

    hooks = Hooks([guard])
    call = {"name": "t", "args": {"x": "a"}, "id": "c1", "type": "tool_call"}
    result = await hooks.call_tool(ToolCallRequest(call, None, {}, None), execute)  # type: ignore[arg-type]
    assert isinstance(result, ToolMessage)
    assert result.status == "success" and calls == [{"x": "edited"}, {"x": "edited"}]
    blocked = {**call, "args": {"x": "blocked"}}
    result = await hooks.call_tool(ToolCallRequest(blocked, None, {}, None), execute)  # type: ignore[arg-type]
    assert isinstance(result, ToolMessage) and result.content == "refused" and len(calls) == 2


def test_bad_middleware_lists_are_one_line_errors() -> None:
    with pytest.raises(MiddlewareError, match=r"middleware\[0\] is str"):
        Hooks(["nope"])  # type: ignore[list-item]
    with pytest.raises(MiddlewareError, match="not an instance"):
        Hooks([AgentMiddleware])  # type: ignore[list-item]

    @before_model
    def same(state, runtime):
        return None

    with pytest.raises(MiddlewareError, match="two middleware named 'same'"):
        Hooks([same, same])


def test_hook_config_on_a_class_declares_jumps():
    class Stop(AgentMiddleware):
        @hook_config(can_jump_to=["end", "model"])
        def after_model(self, state, runtime):
            return {"jump_to": "model"}

    hooks = Hooks([Stop()])
    assert hooks.after_model[0].can_jump_to == ("end", "model")
    # the loop's schema: hooks apply its reducers in the graph
    assert get_type_hints(AgentState, include_extras=True)["messages"].__metadata__ == (merge_messages,)
