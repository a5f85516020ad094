"""models/prompt_cache.py without a server: when a request may chain to an earlier response (and
every way it must not), the cache key, the lost-response test and Anthropic's breakpoints."""

from __future__ import annotations

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from smart_agent.models.prompt_cache import (
    CACHE_BREAKPOINT,
    Chains,
    Continuation,
    anthropic_breakpoints,
    continuing,
    is_lost_response,
    thread_cache_key,
)

HERE = ("http://provider/v1", "model-a")


def reply(rid: str, call: str = "c1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": call}], id=rid,
                     response_metadata={"id": rid})


def exchange() -> tuple[Chains, list, AIMessage]:
    chains = Chains()
    request = [SystemMessage("sys"), HumanMessage("task")]
    answer = reply("resp_1")
    chains.remember(HERE, request, answer)
    return chains, request, answer


def test_a_request_continuing_an_exchange_exactly_chains_with_only_the_new_messages():
    chains, request, answer = exchange()
    result = ToolMessage("found", tool_call_id="c1")
    # equal messages, not the same objects (a thread's state read back)
    planned = chains.plan(HERE, [SystemMessage("sys"), HumanMessage("task"), answer.model_copy(), result])
    assert planned is not None and planned[0] == "resp_1" and planned[1] == [result] and len(planned[2]) == 4


@pytest.mark.parametrize("change", ["system", "edited", "compacted", "reply", "endpoint", "nothing new", "unknown"])
def test_a_history_that_is_not_the_providers_is_sent_whole(change):
    chains, request, answer = exchange()
    result = ToolMessage("found", tool_call_id="c1")
    messages = [*request, answer, result]
    endpoint = HERE
    if change == "system":  # another system prompt (a notice, a recalled memory...)
        messages[0] = SystemMessage("sys, with a budget notice")
    elif change == "edited":  # an earlier message changed (update_state, a clipped text)
        messages[1] = HumanMessage("task, edited")
    elif change == "compacted":  # a summary in place of the history before the reply
        messages = [SystemMessage("sys"), HumanMessage("[Context summary #1: ...]"), answer, result]
    elif change == "reply":  # the reply as kept differs from the provider's (its calls dropped)
        messages[2] = AIMessage("", id="resp_1", response_metadata={"id": "resp_1"})
    elif change == "endpoint":  # another model or service (a fallback model)
        endpoint = ("http://provider/v1", "model-b")
    elif change == "nothing new":
        messages = [*request, answer]
    elif change == "unknown":  # a reply this process never saw (an earlier process's)
        messages[2] = reply("resp_other")
    assert chains.plan(endpoint, messages) is None


def test_a_continuation_chains_the_next_call_with_its_messages_only_while_set():
    chains, request, answer = exchange()
    then = [ToolMessage("noted; act now", tool_call_id="c1")]
    action = [SystemMessage("sys + note"), HumanMessage("task")]  # the same conversation, another system prompt
    with continuing(Continuation(request, answer, then)):
        planned = chains.plan(HERE, action)
        assert planned is not None and planned[0] == "resp_1" and planned[1] == then
        assert planned[2] == [*request, answer, *then]
        assert chains.plan(HERE, [SystemMessage("sys"), HumanMessage("other task")]) is None  # another cut
    assert chains.plan(HERE, action) is None


def test_the_cache_key_is_a_stable_hash_of_the_thread_and_never_the_thread_id():
    key = thread_cache_key("thread-42")
    assert key == thread_cache_key("thread-42") != thread_cache_key("thread-43")
    assert "thread-42" not in key and len(key) < 64  # (OpenAI limits its length)
    assert thread_cache_key(None) is None and thread_cache_key("") is None


def test_only_a_lost_previous_response_is_sent_again():
    def not_found(message, code=None):
        import httpx

        response = httpx.Response(404, request=httpx.Request("POST", "http://x/v1/responses"))
        return openai.NotFoundError(message, response=response, body={"error": {"message": message, "code": code}})

    assert is_lost_response(not_found("Previous response with id 'resp_1' not found.", "previous_response_not_found"))
    assert not is_lost_response(not_found("The model 'gpt-x' does not exist"))  # stays a configuration error
    assert not is_lost_response(ValueError("previous response not found"))  # not an HTTP 404


def test_anthropic_breakpoints_mark_copies_of_the_system_prompt_and_the_last_summary():
    summary = HumanMessage("[Context summary #2: ...]", additional_kwargs={CACHE_BREAKPOINT: True})
    older = HumanMessage("[Context summary #1: ...]", additional_kwargs={CACHE_BREAKPOINT: True})
    messages = [SystemMessage("sys"), older, HumanMessage("task"), summary, AIMessage("ok")]
    marked = anthropic_breakpoints(messages)
    assert marked[0].content == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert marked[3].content[-1]["cache_control"] == {"type": "ephemeral"} and marked[1] is older
    assert messages[0].content == "sys" and messages[3].content == "[Context summary #2: ...]"  # untouched
    assert anthropic_breakpoints([HumanMessage("no system prompt")])[0].content == "no system prompt"
