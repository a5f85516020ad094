"""Tests for the scripted OpenAI-compatible server and the demo responder over HTTP
(ScriptedChatModel and the request readers: tests/unit/testing/test_fake_models.py).

The server is driven with the real ``langchain_openai.ChatOpenAI`` client.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.request

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr
from scripted_support import aggregate, calculator, write_file

from smart_agent.testing.demo import DEMO_TASK, demo_responder
from smart_agent.testing.scripted_server import (
    ScriptedOpenAIServer,
    error,
    text,
    tool_call,
    tool_calls,
)


def _model(server: ScriptedOpenAIServer, **kw) -> ChatOpenAI:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 10)
    return ChatOpenAI(base_url=server.base_url, api_key=SecretStr("x"), model="scripted-model", stream_usage=True, **kw)


def _post(url: str, body: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as srv:
        yield srv


# --------------------------------------------------------------------------- #
# ScriptedOpenAIServer with the real ChatOpenAI
# --------------------------------------------------------------------------- #
def test_text_reply_and_usage(server):
    server.reset([text("Hello there, world.")])
    msg = _model(server).invoke([SystemMessage("be brief"), HumanMessage("hi")])
    assert msg.content == "Hello there, world."
    assert msg.tool_calls == []
    req = server.requests[0]
    assert [m["role"] for m in req["messages"]] == ["system", "user"]
    assert req["model"] == "scripted-model"
    assert server.offered_tools() == []
    expected_prompt = math.ceil(len(json.dumps(req["messages"]) + json.dumps([])) / 4)
    assert msg.usage_metadata["input_tokens"] == expected_prompt
    assert msg.usage_metadata["output_tokens"] == math.ceil(len("Hello there, world.") / 4)
    assert server.request_chars(0) > len(json.dumps(req["messages"]))


def test_tool_call_reply_with_bind_tools(server):
    server.reset([tool_call("calculator", {"expression": "37*43"})])
    msg = _model(server).bind_tools([calculator, write_file]).invoke("What is 37*43?")
    assert msg.tool_calls == [
        {"name": "calculator", "args": {"expression": "37*43"}, "id": "call_1_0", "type": "tool_call"}
    ]
    assert server.offered_tools(0) == ["calculator", "write_file"]
    assert server.requests[0]["tools"][0]["function"]["parameters"]["properties"]["expression"]["type"] == "string"
    assert msg.response_metadata["finish_reason"] == "tool_calls"


def test_parallel_tool_calls_ids_unique_and_explicit_ids(server):
    server.reset(
        [
            tool_calls([("calculator", {"expression": "1+1"}), ("calculator", {"expression": "2+2"})]),
            tool_call("calculator", {"expression": "3"}, id="my_id"),
        ]
    )
    model = _model(server).bind_tools([calculator])
    first = model.invoke("x")
    second = model.invoke("y")
    assert [tc["id"] for tc in first.tool_calls] == ["call_1_0", "call_1_1"]
    assert [tc["args"] for tc in first.tool_calls] == [{"expression": "1+1"}, {"expression": "2+2"}]
    assert second.tool_calls[0]["id"] == "my_id"


def test_streaming_text_and_tool_calls_with_usage(server):
    server.reset(
        [
            text("one two three four"),
            tool_calls(
                [("calculator", {"expression": "37*43"}), ("write_file", {"path": "a.txt", "content": "x\n"})],
                content="Let me compute.",
            ),
        ]
    )
    model = _model(server)
    chunks = list(model.stream("hi"))
    assert len([c for c in chunks if c.content]) >= 4  # several content deltas
    agg = aggregate(chunks)
    assert agg.content == "one two three four"
    assert agg.usage_metadata is not None and agg.usage_metadata["output_tokens"] == math.ceil(18 / 4)
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}

    agg = aggregate(model.bind_tools([calculator, write_file]).stream("go"))
    assert agg.content == "Let me compute."
    assert [(tc["name"], tc["args"], tc["id"]) for tc in agg.tool_calls] == [
        ("calculator", {"expression": "37*43"}, "call_2_0"),
        ("write_file", {"path": "a.txt", "content": "x\n"}, "call_2_1"),
    ]
    assert agg.response_metadata["finish_reason"] == "tool_calls"
    assert agg.usage_metadata["input_tokens"] > 0
    assert (
        agg.usage_metadata["total_tokens"] == agg.usage_metadata["input_tokens"] + agg.usage_metadata["output_tokens"]
    )


def test_streaming_without_stream_usage_has_no_usage(server):
    server.reset([text("hi there")])
    model = ChatOpenAI(base_url=server.base_url, api_key=SecretStr("x"), model="scripted-model", max_retries=0)
    agg = aggregate(model.stream("hi"))
    assert agg.content == "hi there"
    assert "stream_options" not in server.requests[0]
    assert not agg.usage_metadata


def test_error_entry_raises_openai_exception(server):
    server.reset([error(401, "bad key"), text("after")])
    model = _model(server)
    with pytest.raises(openai.AuthenticationError) as info:
        model.invoke("hi")
    assert "bad key" in str(info.value)
    assert info.value.status_code == 401
    assert info.value.body["type"] == "invalid_request_error" or info.value.type == "invalid_request_error"
    # The error entry is consumed exactly once, even with the client's default retries.
    assert _model(server, max_retries=2).invoke("again").content == "after"
    assert len(server.requests) == 2


def test_server_error_not_retried_by_default_but_retry_opt_in(server):
    server.reset(
        [
            error(500, "boom"),
            error(503, "busy", retry=True, headers={"retry-after-ms": "10"}),  # client retries after 10 ms
            text("ok"),
        ]
    )
    with pytest.raises(openai.InternalServerError):
        _model(server, max_retries=2).invoke("hi")
    assert len(server.requests) == 1  # x-should-retry: false
    # With "retry": True the client's own retry policy applies and the next entry answers.
    assert _model(server, max_retries=1).invoke("hi").content == "ok"
    assert len(server.requests) == 3


def test_error_entry_while_streaming(server):
    server.reset([error(429, "slow down", type="requests", code="rate_limit_exceeded")])
    with pytest.raises(openai.RateLimitError):
        list(_model(server).stream("hi"))


def test_exhausted_script_fails_loudly(server):
    server.reset([text("only one")])
    model = _model(server, max_retries=2)
    assert model.invoke("1").content == "only one"
    with pytest.raises(openai.APIStatusError) as info:
        model.invoke("2")
    assert info.value.status_code == 500
    assert "script exhausted after 1 requests" in str(info.value)
    assert len(server.requests) == 2  # not retried


def test_delay(server):
    server.reset([text("slow", delay_s=0.3), text("fast")])
    model = _model(server)
    t0 = time.perf_counter()
    assert model.invoke("a").content == "slow"
    assert time.perf_counter() - t0 >= 0.3
    t0 = time.perf_counter()
    assert model.invoke("b").content == "fast"
    assert time.perf_counter() - t0 < 0.3


def test_default_delay_and_client_timeout():
    with ScriptedOpenAIServer([text("late")], default_delay_s=1.0) as srv, pytest.raises(openai.APITimeoutError):
        _model(srv, timeout=0.2).invoke("hi")


def test_callable_entries_and_responder():
    seen = []

    def echo(request):
        seen.append(request)
        return text("echo: " + request["messages"][-1]["content"])

    with ScriptedOpenAIServer([text("first"), echo], responder=lambda r: text(f"n={len(r['messages'])}")) as srv:
        model = _model(srv)
        assert model.invoke("a").content == "first"
        assert model.invoke("ping").content == "echo: ping"
        assert model.invoke([HumanMessage("x"), AIMessage("y"), HumanMessage("z")]).content == "n=3"
        assert len(seen) == 1


def test_broken_callable_entry_reports_500():
    with (
        ScriptedOpenAIServer([lambda r: 1 / 0]) as srv,
        pytest.raises(openai.InternalServerError, match="ZeroDivisionError"),
    ):
        _model(srv).invoke("hi")


def test_loop_mode_repeats_script():
    with ScriptedOpenAIServer([text("a"), text("b")], loop=True) as srv:
        model = _model(srv)
        assert [model.invoke(str(i)).content for i in range(5)] == ["a", "b", "a", "b", "a"]


def test_malformed_json_and_models_endpoint(server):
    status, body = _post(server.base_url + "/chat/completions", b"{not json")
    assert status == 400
    assert "malformed JSON" in body["error"]["message"]
    assert server.requests == []
    with urllib.request.urlopen(server.base_url + "/models", timeout=5) as resp:
        data = json.loads(resp.read())
    assert data["data"][0]["id"] == "scripted-model"
    # The official openai client can list models too.
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    assert [m.id for m in client.models.list()] == ["scripted-model"]


def test_invalid_script_entry_rejected_early():
    with pytest.raises(ValueError):
        ScriptedOpenAIServer([{"nonsense": 1}])


def test_concurrent_requests_are_recorded(server):
    server.reset([text(str(i)) for i in range(8)])
    model = _model(server)
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(model.invoke(f"q{i}").content)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results, key=int) == [str(i) for i in range(8)]
    assert len(server.requests) == 8


async def test_async_client(server):
    server.reset([text("async hi"), tool_call("calculator", {"expression": "2*2"})])
    model = _model(server)
    assert (await model.ainvoke("hi")).content == "async hi"
    agg = None
    async for c in model.bind_tools([calculator]).astream("x"):
        agg = c if agg is None else agg + c
    assert agg.tool_calls[0]["args"] == {"expression": "2*2"}


# --------------------------------------------------------------------------- #
# demo_responder
# --------------------------------------------------------------------------- #
def _run_demo_loop(server: ScriptedOpenAIServer, messages: list) -> list:
    tools = {"calculator": calculator, "write_file": write_file}
    model = _model(server).bind_tools(list(tools.values()))
    for _ in range(6):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return messages
        for tc in reply.tool_calls:
            result = tools[tc["name"]].invoke(tc["args"])
            messages.append(ToolMessage(content=result, tool_call_id=tc["id"]))
    raise AssertionError("demo did not finish")


def test_demo_responder_three_turns():
    with ScriptedOpenAIServer(responder=demo_responder) as srv:
        messages = _run_demo_loop(srv, [HumanMessage(DEMO_TASK)])
        assert len(srv.requests) == 3
    calls = [m.tool_calls[0] for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert calls[0]["name"] == "calculator" and calls[0]["args"] == {"expression": "37*43"}
    assert calls[1]["name"] == "write_file"
    assert calls[1]["args"] == {"path": "answer.txt", "content": "37*43 = 1591\n"}
    assert messages[-1].content == "37 × 43 = 1591. I saved the result to answer.txt."


def test_demo_responder_streaming_loop():
    with ScriptedOpenAIServer(responder=demo_responder) as srv:
        model = _model(srv).bind_tools([calculator, write_file])
        messages = [HumanMessage(DEMO_TASK)]
        for _ in range(3):
            reply = aggregate(model.stream(messages))
            messages.append(AIMessage(content=reply.content, tool_calls=reply.tool_calls))
            for tc in reply.tool_calls:
                tool_fn = {"calculator": calculator, "write_file": write_file}[tc["name"]]
                messages.append(ToolMessage(content=tool_fn.invoke(tc["args"]), tool_call_id=tc["id"]))
        assert messages[-1].content == "37 × 43 = 1591. I saved the result to answer.txt."


# --------------------------------------------------------------------------- #
# ScriptedChatModel
# --------------------------------------------------------------------------- #
