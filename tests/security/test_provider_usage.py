"""Attack: a provider that lies about token usage, through the real langchain-openai client.

Negative counts were clamped to 0, so ``--max-tokens`` / ``--max-cost`` never tripped; a count
of ``10**30`` ended the run with a raw ``TypeError`` when the checkpoint was written (msgpack
takes 64-bit integers); a string ended it with a ``ValueError``. Now a count that is not a whole
number from 0 to ``MAX_REPORTED_TOKENS`` makes the reply's usage invalid: the estimate is counted
(and stored) instead, with one ``error`` event, so the budgets trip and the run finishes."""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, offered, openai_model, run_cli, run_graph
from langchain_openai import ChatOpenAI

from security.bad_openai import BadOpenAIServer
from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.nodes.dual import DECIDE
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM
from smart_agent.testing.scripted_server import text, tool_call

NEGATIVE = {"prompt_tokens": -1_000_000, "completion_tokens": -1_000_000}
ONE_SUM = {"steps": [{"id": "s", "tool": "calculator", "args": {"expression": "6*7"}}]}


def ctx(workspace, **kw):
    return Context(workspace=str(workspace), memory=False, loop_limit=0, tools=["calculator"], **kw)


def loops_forever(usage):
    """A calculator call whenever tools are offered, an answer when none are; every reply with ``usage``."""

    def model(req):
        reply = tool_call("calculator", {"expression": "2+2"}) if req.get("tools") else text("It is 4.")
        return {**reply, "usage": usage}

    return model


def invalid_usage_events(events):
    return [e for e in events if e["event"] == "error" and "invalid token usage" in e.get("error", "")]


@pytest.mark.graph
async def test_negative_usage_does_not_keep_max_tokens_from_tripping(scripted_server, workspace):
    srv = scripted_server(responder=loops_forever(NEGATIVE))
    events: list = []
    # (max_tool_calls: a hang guard; before the fix the loop ran until it, uncounted)
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "loop",
                            ctx(workspace, max_tokens=6000, max_tool_calls=40), events=events)
    n = len(srv.requests)
    assert final["answer"] == "It is 4." and n < 20 and "tools" not in srv.requests[-1]
    assert [e["reason"] for e in events if e["event"] == "budget" and e["action"] == "finalize"] == ["tokens"]
    assert final["usage"]["input_tokens"] > 100 * n  # the estimate of each request, not 0
    bad = invalid_usage_events(events)
    assert len(bad) == n and "(input_tokens=-1000000)" in bad[0]["error"]


@pytest.mark.graph
async def test_negative_usage_does_not_keep_max_cost_from_tripping(scripted_server, workspace, monkeypatch):
    monkeypatch.setenv("SMART_AGENT_PRICES", '{"scripted-model": {"input": 100, "output": 1000}}')
    srv = scripted_server(responder=loops_forever(NEGATIVE))
    events: list = []
    context = ctx(workspace, model="openai:scripted-model", max_cost_usd=1.0, max_tool_calls=40)
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "loop", context, events=events)
    assert final["answer"] == "It is 4." and len(srv.requests) < 20
    assert [e["reason"] for e in events if e["event"] == "budget" and e["action"] == "finalize"] == ["cost"]
    assert 0 < final["usage"]["cost_usd"] <= 1.0


def any_graph(usage):
    """A model for every graph (agent, planner, dual, fleet) whose every reply reports ``usage``."""

    def model(req):
        names = offered(req)
        if "submit_plan" in names:
            reply = tool_call("submit_plan", ONE_SUM)
        elif names == [DECIDE]:
            done = "Assets" in req["messages"][-1]["content"]
            reply = tool_call(DECIDE, {"action": "final", "answer": "It is 42."} if done else
                              {"action": "execute", "objective": "compute 6*7"})
        elif req["messages"][0]["content"] == AGGREGATE_SYSTEM:
            reply = text("It is 42.")
        elif "submit_subtasks" in names:
            reply = tool_call("submit_subtasks", {"subtasks": ["compute 6*7"]})
        else:
            reply = text("It is 42.")
        return {**reply, "usage": usage}

    return model


@pytest.mark.e2e
@pytest.mark.parametrize("graph", ["agent", "planner", "dual", "fleet"])
def test_cli_usage_of_10_to_the_30_is_counted_as_the_estimate_in_every_graph(scripted_server, workspace, graph):
    srv = scripted_server(responder=any_graph({"prompt_tokens": 10**30, "completion_tokens": 5}))
    res = run_cli(["run", "what is 6*7", "--graph", graph, "--json", "--thread", "u1", "--max-tokens", "10000000",
                   "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr  # was a raw TypeError from msgpack writing the checkpoint
    assert "Traceback" not in res.stderr and "TypeError" not in res.stderr
    out = json.loads(res.stdout)
    assert out["answer"] == "It is 42."
    assert 0 < out["usage"]["input_tokens"] < 100_000 and out["usage"]["model_calls"] == len(srv.requests)
    assert "the provider reported invalid token usage (input_tokens=1000000000000000000000000000000)" in res.stderr
    saved = run_cli(["threads", "export", "u1"], env=cli_env(srv))  # the checkpoint holds bounded counts
    assert saved.returncode == 0, saved.stderr
    assert "It is 42." in saved.stdout and "1000000000000000000000000000000" not in saved.stdout


@pytest.mark.graph
# (10**9: usage.MAX_REPORTED_TOKENS)
@pytest.mark.parametrize("count", ["abc", 1.5, [1], {"a": 1}, True, -1, 10**9 + 1])
async def test_garbage_usage_counts_are_the_estimate(workspace, count):
    body = json.dumps({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10,
                  "completion_tokens_details": {"reasoning_tokens": count}},
    }).encode()
    with BadOpenAIServer([("application/json", body)]) as srv:
        events: list = []
        model = ChatOpenAI(base_url=srv.base_url, api_key="x", model="m", max_retries=0)
        final = await run_graph(build_agent_graph(model=model), "hi", ctx(workspace, max_tokens=100_000),
                                events=events)
    assert final["answer"] == "hi"
    if count is True:  # (a bool is read as 1 by the client: valid)
        assert final["usage"]["input_tokens"] == 7 and not invalid_usage_events(events)
        return
    assert final["usage"]["input_tokens"] > 7  # the estimate, not the reported 7
    [bad] = invalid_usage_events(events)
    assert "reasoning" in bad["error"]
