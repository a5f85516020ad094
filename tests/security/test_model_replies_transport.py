"""Attack: replies that are not chat completions at all (no ``choices``, a null message,
HTML, invalid UTF-8, truncated JSON, JSON nested 200,000 levels deep) sent to the real
langchain-openai client. The CLI prints one line and exits 1 (no traceback, no codec,
IndexError or RecursionError text) whatever the graph; the dual and fleet graphs raise the
same one-line ModelReplyError. Lone surrogates in an otherwise
valid reply are replaced, so the answer still prints."""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, run_cli, run_graph
from langchain_openai import ChatOpenAI

from security.bad_openai import BODIES, BadOpenAIServer, completion
from smart_agent.config.context import Context
from smart_agent.graphs.dual import build_dual_graph
from smart_agent.graphs.fleet import build_fleet_graph
from smart_agent.models.chat import ModelReplyError
from smart_agent.tools.registry import ToolRegistry

EXPECTED = {
    "no choices": "no usable 'choices'",
    "empty choices": "no usable 'choices'",
    "null choices": "no usable 'choices'",
    "null message": "no usable message",
    "html body": "not JSON",
    "html as json": "not JSON",
    "invalid utf-8": "not valid UTF-8",
    "truncated json": "not JSON",
    "nested 200k": "JSON nested too deeply",
}


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(BODIES))
def test_cli_garbage_reply_is_one_line_and_exit_1(workspace, name):
    with BadOpenAIServer([BODIES[name]]) as srv:
        res = run_cli(["run", "hello", "--quiet", "--workspace", str(workspace)], env=cli_env(srv))
    assert len(srv.requests) == 1  # answered once, not retried
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("smart-agent: ModelReplyError: Unusable reply from model 'openai:scripted-model'")
    assert EXPECTED[name] in line


@pytest.mark.e2e
@pytest.mark.parametrize("graph", ["agent", "planner", "dual", "fleet"])
def test_cli_reply_nested_200k_deep_is_one_line_in_every_graph(workspace, graph):
    # The OpenAI SDK's json.loads of the body raised a RecursionError that ended every graph raw.
    with BadOpenAIServer([BODIES["nested 200k"]]) as srv:
        res = run_cli(["run", "hello", "--graph", graph, "--quiet", "--workspace", str(workspace)], env=cli_env(srv))
    assert len(srv.requests) == 1
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and "RecursionError" not in res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(
        "smart-agent: ModelReplyError: Unusable reply from model 'openai:scripted-model': the response is JSON nested "
        "too deeply to be read."
    )


@pytest.mark.e2e
def test_cli_lone_surrogates_are_replaced_not_a_codec_crash(workspace):
    # Valid JSON escapes of lone surrogates, in the text and in a tool call's arguments.
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "calculator", "arguments": json.dumps({"expression": "1+1\ud800"})},
    }
    bodies = [
        ("application/json", completion({"role": "assistant", "content": "", "tool_calls": [call]}, "tool_calls")),
        ("application/json", completion({"role": "assistant", "content": "caf\udce9 ok"})),
    ]
    with BadOpenAIServer(bodies) as srv:
        res = run_cli(["run", "hello", "--json", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["answer"] == "caf\ufffd ok"
    assert out["tool_calls"][0]["name"] == "calculator"
    second = json.loads(srv.requests[1])  # the sanitized call went back to the model
    sent = next(m for m in second["messages"] if m["role"] == "assistant")
    assert json.loads(sent["tool_calls"][0]["function"]["arguments"]) == {"expression": "1+1\ufffd"}


def model_for(srv):
    return ChatOpenAI(base_url=srv.base_url, api_key="x", model="bad-model", max_retries=0)


@pytest.mark.graph
@pytest.mark.parametrize("name", ["null message", "html body", "nested 200k"])
async def test_dual_garbage_reply_is_a_model_reply_error(name):
    with BadOpenAIServer([BODIES[name]]) as srv:
        graph = build_dual_graph(model=model_for(srv), registry=ToolRegistry())
        with pytest.raises(ModelReplyError, match=EXPECTED[name]):
            await run_graph(graph, "goal", Context(model="openai:bad-model", memory=False))


@pytest.mark.graph
@pytest.mark.parametrize("name", ["no choices", "invalid utf-8", "nested 200k"])
async def test_fleet_garbage_reply_is_a_model_reply_error(name):
    with BadOpenAIServer([BODIES[name]]) as srv:
        graph = build_fleet_graph(model=model_for(srv), registry=ToolRegistry())
        with pytest.raises(ModelReplyError, match=EXPECTED[name]):
            await run_graph(graph, "goal", Context(model="openai:bad-model", memory=False))
