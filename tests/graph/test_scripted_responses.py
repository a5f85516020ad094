"""The scripted server's Responses API (``/v1/responses`` with ``previous_response_id`` state) and
its OpenAI-style ``cached_tokens``, driven with the real ``langchain_openai.ChatOpenAI`` client."""

from __future__ import annotations

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr
from scripted_support import aggregate, calculator

from smart_agent.testing.scripted_responses import cached_tokens, shared_prefix
from smart_agent.testing.scripted_server import ScriptedOpenAIServer, last_tool_message, text, tool_call

LONG = "the same long instructions " * 400  # ~2700 tokens: over OpenAI's 1024-token minimum


def responses_model(server: ScriptedOpenAIServer, **kw) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=server.base_url, api_key=SecretStr("x"), model="scripted-model", stream_usage=True, max_retries=0,
        timeout=10, use_responses_api=True, **kw,
    )


@pytest.mark.parametrize("stream", [False, True])
def test_responses_answer_with_text_and_tool_calls_and_continue_a_previous_response(stream):
    seen = []

    def second(request):
        seen.append(request)  # the script reads the whole conversation, as chat completions
        return text(f"The result is {last_tool_message(request)}.")

    with ScriptedOpenAIServer([tool_call("calculator", {"expression": "6*7"}, content="Computing."), second]) as srv:
        model = responses_model(srv).bind_tools([calculator])
        call = model.stream if stream else model.invoke
        first = aggregate(call([SystemMessage(LONG), HumanMessage("6*7?")])) if stream else call(
            [SystemMessage(LONG), HumanMessage("6*7?")]
        )
        assert first.tool_calls[0]["name"] == "calculator" and first.tool_calls[0]["args"] == {"expression": "6*7"}
        rid = first.response_metadata["id"]
        assert rid == srv.response_ids[0] and rid.startswith("resp_")
        follow = [ToolMessage("42", tool_call_id=first.tool_calls[0]["id"])]
        answer = aggregate(call(follow, previous_response_id=rid)) if stream else call(follow, previous_response_id=rid)
        assert "The result is 42." in str(answer.content)
        assert srv.request_paths == ["/responses", "/responses"]
        assert srv.requests[1]["previous_response_id"] == rid and len(srv.requests[1]["input"]) == 1
        roles = [m["role"] for m in seen[0]["messages"]]
        assert roles == ["system", "user", "assistant", "tool"]  # the stored conversation, then the new input
        assert seen[0]["messages"][2]["tool_calls"][0]["function"]["name"] == "calculator"
        assert seen[0]["tools"][0]["function"]["name"] == "calculator"
        # the continued request shares the first one's prompt: cached as OpenAI reports it
        assert answer.usage_metadata["input_token_details"]["cache_read"] == srv.reported_usage[1][
            "prompt_tokens_details"]["cached_tokens"] > 1024
        assert first.usage_metadata["input_token_details"]["cache_read"] == 0


def test_an_unknown_previous_response_is_http_404_previous_response_not_found():
    with ScriptedOpenAIServer([text("never")]) as srv:
        model = responses_model(srv)
        with pytest.raises(openai.NotFoundError) as err:
            model.invoke([HumanMessage("hi")], previous_response_id="resp_unknown")
        assert err.value.status_code == 404 and "Previous response with id 'resp_unknown' not found" in str(err.value)
        assert srv.remaining == 1  # no script entry was used
        model.invoke([HumanMessage("hi")])
        first = srv.response_ids[0]
        srv.forget_responses()  # as when OpenAI no longer has it
        srv.reset([text("again")])
        with pytest.raises(openai.NotFoundError):
            model.invoke([HumanMessage("more")], previous_response_id=first)


def test_store_false_keeps_no_conversation():
    with ScriptedOpenAIServer([text("a"), text("b")]) as srv:
        model = responses_model(srv, store=False)
        first = model.invoke([HumanMessage("hi")])
        with pytest.raises(openai.NotFoundError):
            model.invoke([HumanMessage("more")], previous_response_id=first.response_metadata["id"])


def test_cached_tokens_are_the_shared_prefix_per_cache_key_from_1024_tokens_in_steps_of_128():
    with ScriptedOpenAIServer([text("a")] * 5) as srv:
        model = ChatOpenAI(base_url=srv.base_url, api_key="x", model="scripted-model", max_retries=0)
        short = [SystemMessage("short"), HumanMessage("hi")]
        model.invoke(short, prompt_cache_key="k")
        model.invoke(short, prompt_cache_key="k")  # all shared, but under 1024 tokens: nothing cached
        model.invoke([SystemMessage(LONG), HumanMessage("one")], prompt_cache_key="k")
        model.invoke([SystemMessage(LONG), HumanMessage("two")], prompt_cache_key="k")
        model.invoke([SystemMessage(LONG), HumanMessage("two")], prompt_cache_key="other")  # another key: cold
        usage = srv.reported_usage
        cached = [u["prompt_tokens_details"]["cached_tokens"] for u in usage]
        shared = srv.shared_prefix_tokens
        assert cached[:3] == [0, 0, 0] and cached[4] == 0 and shared[1] == usage[1]["prompt_tokens"]
        assert cached[3] == 1024 + (shared[3] - 1024) // 128 * 128 and 0 <= shared[3] - cached[3] < 128
        assert shared[3] < usage[3]["prompt_tokens"]  # the messages differ at the end


@pytest.mark.unit  # no server: the arithmetic
def test_cached_token_steps_and_the_shared_prefix():
    assert cached_tokens(4 * 1023, 5000) == 0 and cached_tokens(4 * 1024, 5000) == 1024
    assert cached_tokens(4 * 1151, 5000) == 1024 and cached_tokens(4 * 1152, 5000) == 1152
    assert cached_tokens(4 * 9000, 2000) == 1920  # never more than the prompt
    assert shared_prefix("abcdef", "abcxyz") == 3 and shared_prefix("", "abc") == 0 and shared_prefix("ab", "ab") == 2


def test_chat_completions_requests_report_cached_tokens_too_and_can_turn_it_off():
    with ScriptedOpenAIServer([text("a"), text("b")], prompt_cache=False) as srv:
        model = ChatOpenAI(base_url=srv.base_url, api_key="x", model="scripted-model", max_retries=0)
        model.invoke([SystemMessage(LONG), HumanMessage("x")])
        model.invoke([SystemMessage(LONG), HumanMessage("x")])
        assert all("prompt_tokens_details" not in u for u in srv.reported_usage) and srv.shared_prefix_tokens == []
