"""Prompt caching and stateful calls (models/prompt_cache.py) through the real clients: the
Responses API chaining of langchain-openai against the scripted server, its prompt_cache_key,
and the cache breakpoints of langchain-anthropic's request (captured by a local HTTP server)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import openai_model, run_graph, run_with_events
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from scripted_support import big_echo_registry

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.history.digest import summary_message
from smart_agent.models.chat import invoke_model
from smart_agent.models.prompt_cache import CACHE_BREAKPOINT, thread_cache_key
from smart_agent.models.usage import Meter, using
from smart_agent.nodes.reasoning import REASONING
from smart_agent.testing.scripted_server import last_tool_message, text, tool_call
from smart_agent.tools.calculator import calculator
from smart_agent.tools.registry import ToolRegistry


def calculator_registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(calculator)
    return reg


def two_phase_script():
    return [
        tool_call(REASONING, {"situation": "I must multiply.", "plan": ["Use calculator on 6*7"], "done": False}),
        tool_call("calculator", {"expression": "6*7"}),
        tool_call(REASONING, {"situation": "The product is 42.", "plan": [], "done": True}),
        text("6*7 = 42"),
    ]


def inputs(request) -> list[str]:
    return [item.get("type") or "message" for item in request["input"]]


async def test_two_phase_on_the_responses_api_chains_each_action_call_to_its_reasoning_response(scripted_server):
    srv = scripted_server(two_phase_script())
    graph = build_agent_graph(model=openai_model(srv, use_responses_api=True), registry=calculator_registry())
    final, events = await run_with_events(graph, "What is 6*7?", Context(memory=False, reasoning="two_phase"))

    assert final["answer"] == "6*7 = 42" and final["tool_calls_made"] == 1
    assert srv.request_paths == ["/responses"] * 4
    reqs, ids = srv.requests, srv.response_ids
    # reasoning calls send the conversation; each action call only the reasoning call's result
    assert [r.get("previous_response_id") for r in reqs] == [None, ids[0], None, ids[2]]
    assert inputs(reqs[1]) == inputs(reqs[3]) == ["function_call_output"]
    result = reqs[1]["input"][0]
    assert result["call_id"] == "call_1_0" and "Situation: I must multiply." in result["output"]
    assert [t["name"] for t in reqs[1]["tools"]] == ["calculator"] and not reqs[3].get("tools")
    assert "The task is done" in reqs[3]["input"][0]["output"]
    # the reasoning calls still never enter the thread's conversation
    calls = [c["name"] for m in final["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls == ["calculator"] and not [e for e in events if e["event"] == "error"]


async def test_two_phase_over_chat_completions_is_unchanged(scripted_server):
    srv = scripted_server(two_phase_script())
    graph = build_agent_graph(model=openai_model(srv), registry=calculator_registry())
    final, _ = await run_with_events(graph, "What is 6*7?", Context(memory=False, reasoning="two_phase"))
    assert final["answer"] == "6*7 = 42" and srv.request_paths == ["/chat/completions"] * 4
    assert "Situation: I must multiply." in srv.requests[1]["messages"][0]["content"]


async def test_loop_turns_chain_until_a_compaction_then_the_whole_history_is_sent(scripted_server):
    turns = 9

    def respond(req):
        reads = sum(1 for m in req["messages"] if m.get("role") == "tool")
        if req["messages"][0]["content"].startswith("You compress"):  # a model-written summary
            return text("Summary: records were fetched.")
        done = sum(1 for r in srv.requests if r.get("tools"))
        return tool_call("fetch", {"key": f"k{done}"}) if done < turns else text(f"fetched ({reads} in view)")

    srv = scripted_server(responder=respond)
    graph = build_agent_graph(model=openai_model(srv, use_responses_api=True), registry=big_echo_registry(1400))
    final, events = await run_with_events(
        graph, "Fetch the records.", Context(memory=False, context_token_limit=3000, max_tool_calls=20)
    )
    assert final["answer"].startswith("fetched") and final.get("compactions", 0) >= 1
    seen = [r for r in srv.requests if r.get("tools")]  # the agent's turns
    chained = [r for r in seen if r.get("previous_response_id")]
    assert len(chained) >= 3 and all(inputs(r) == ["function_call_output"] for r in chained)
    # the first turn after each compaction sends the compacted history whole, with its summary
    after = [r for r in seen if any("Context summary" in json.dumps(i) for i in r["input"])]
    assert after and all("previous_response_id" not in r for r in after)
    assert len(chained) + len(after) + 1 <= len(seen)
    assert not [e for e in events if e["event"] == "error"]


async def test_a_lost_response_is_sent_again_whole_with_no_error_for_the_user(scripted_server):
    @tool
    def forget() -> str:
        """Make the provider lose its stored responses."""
        srv.forget_responses()
        return "forgotten"

    srv = scripted_server([tool_call("forget", {}), text("done after all")])
    reg = ToolRegistry()
    reg.register(forget)
    graph = build_agent_graph(model=openai_model(srv, use_responses_api=True), registry=reg)
    final, events = await run_with_events(graph, "Forget, then answer.", Context(memory=False))

    assert final["answer"] == "done after all" and srv.remaining == 0
    reqs = srv.requests
    assert [r.get("previous_response_id") for r in reqs] == [None, srv.response_ids[0], None]
    assert inputs(reqs[2]) == ["message", "message", "function_call", "function_call_output"]  # all of it
    assert not [e for e in events if e["event"] == "error"]
    assert final["usage"]["model_calls"] == 2  # the refused attempt used no tokens: one call


async def test_every_openai_request_of_a_thread_carries_one_cache_key_per_thread(scripted_server):
    srv = scripted_server(responder=lambda req: text("ok") if last_tool_message(req) else tool_call(
        "calculator", {"expression": "1+1"}))
    graph = build_agent_graph(model=openai_model(srv), registry=calculator_registry())
    for thread in ("thread-one", "thread-two"):
        await run_graph(graph, "Add.", Context(memory=False), thread=thread)
    keys = [r.get("prompt_cache_key") for r in srv.requests]
    assert len(keys) == 4 and keys[0] == keys[1] and keys[2] == keys[3] and keys[0] != keys[2]
    assert keys[0] == thread_cache_key("thread-one") and all(k and "thread" not in k for k in keys)
    srv.reset()
    await run_graph(graph, "Add.", Context(memory=False, prompt_cache=False), thread="thread-one")
    assert [r.get("prompt_cache_key") for r in srv.requests] == [None, None]


# --------------------------------------------------------------------------- Anthropic
class AnthropicCapture(BaseHTTPRequestHandler):
    """Answers ``POST /v1/messages`` as the Messages API does; keeps each request body."""

    bodies: list[dict] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        answer = {
            "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": "All three are done."}], "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 40, "output_tokens": 5, "cache_read_input_tokens": 900,
                      "cache_creation_input_tokens": 60},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def anthropic_url():
    AnthropicCapture.bodies = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), AnthropicCapture)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


async def test_anthropic_requests_carry_breakpoints_on_the_system_prompt_summary_and_conversation_end(anthropic_url):
    from langchain_anthropic import ChatAnthropic

    model = ChatAnthropic(model="claude-haiku-4-5", api_key="fake-key", base_url=anthropic_url, max_retries=0)
    summary = summary_message("- calculator(1+1) -> 2", [HumanMessage("old"), AIMessage("older")], {}, 1)
    assert summary.additional_kwargs[CACHE_BREAKPOINT] is True
    graph = build_agent_graph(model=model, registry=calculator_registry())
    final = await run_graph(
        graph, {"messages": [HumanMessage("Do three things."), summary, HumanMessage("Report.")]},
        Context(memory=False, model="anthropic:claude-haiku-4-5"), thread="a1",
    )
    assert final["answer"] == "All three are done."
    [body] = AnthropicCapture.bodies
    assert body["cache_control"] == {"type": "ephemeral"}  # langchain-anthropic's: the conversation's end
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}  # caches the tools before it too
    assert [t["name"] for t in body["tools"]] == ["calculator"]
    marked = [m for m in body["messages"] if isinstance(m["content"], list)
              and any("cache_control" in b for b in m["content"] if isinstance(b, dict))]
    assert len(marked) == 1 and "Context summary" in json.dumps(marked[0])
    assert "smart_agent" not in json.dumps(body) and "prompt_cache_key" not in body
    # Anthropic's cache reads and writes are counted (input_tokens includes both)
    assert final["usage"]["cache_read_tokens"] == 900 and final["usage"]["cache_write_tokens"] == 60
    assert final["usage"]["input_tokens"] == 1000
    model_off = ChatAnthropic(model="claude-haiku-4-5", api_key="fake-key", base_url=anthropic_url, max_retries=0)
    await run_graph(build_agent_graph(model=model_off), "Hi.", Context(memory=False, prompt_cache=False))
    assert "cache_control" not in json.dumps(AnthropicCapture.bodies[-1])


async def test_invoke_model_leaves_other_models_requests_as_they_are():
    from langchain_core.language_models import FakeListChatModel

    model = FakeListChatModel(responses=["plain"])
    meter = Meter()
    with using(meter):
        reply = await invoke_model(model, [SystemMessage("s"), HumanMessage("h")])
    assert reply.content == "plain" and meter.usage["model_calls"] == 1
