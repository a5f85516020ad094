"""Attack: malformed model replies in the agent loop, through the real langchain-openai
client over HTTP. Each one is corrected by a message the model sees, or ends the run
with one line and exit 1 — never a crash, never an empty answer with exit 0."""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, openai_model, run_cli, run_graph
from langchain_core.messages import AIMessage

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.chat import ModelReplyError
from smart_agent.testing.scripted_server import text, tool_call, tool_calls


def ctx(workspace, **kw):
    return Context(workspace=str(workspace), memory=False, **kw)


def tool_results(request) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.graph
@pytest.mark.parametrize("args", ["[1, 2, 3]", '"37*43"', "42", "true"])
async def test_non_object_arguments_get_a_corrective_tool_message(scripted_server, workspace, args):
    # Valid JSON that is not an object: langchain-openai used to build an AIMessage that
    # pydantic rejected, and the whole run died with a multi-line ValidationError.
    srv = scripted_server([tool_call("calculator", args, id="bad"), text("Sorry; 37*43 = 1591.")])
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "37*43?", ctx(workspace))

    assert final["answer"] == "Sorry; 37*43 = 1591."
    (result,) = tool_results(srv.requests[1])
    assert result["tool_call_id"] == "bad" and "arguments must be a JSON object" in result["content"]
    # the history stays valid for the provider: the call went back with its answer
    sent = next(m for m in srv.requests[1]["messages"] if m["role"] == "assistant")
    assert [c["id"] for c in sent["tool_calls"]] == ["bad"]


@pytest.mark.graph
async def test_a_thousand_calls_in_one_turn_run_only_the_per_turn_cap(scripted_server, workspace):
    many = tool_calls(
        [{"name": "calculator", "arguments": {"expression": f"{i}+1"}, "id": f"c{i}"} for i in range(1000)]
    )
    srv = scripted_server([many, text("done with what ran")])
    events: list = []
    final = await run_graph(
        build_agent_graph(model=openai_model(srv)),
        "many",
        ctx(workspace, max_tool_calls=5000, max_tool_calls_per_turn=32),
        events=events,
    )

    assert final["answer"] == "done with what ran"  # no ContextBudgetError
    assert final["tool_calls_made"] == 32
    assert len([e for e in events if e["event"] == "tool_result" and e["ok"]]) == 32
    # the next request carries the 32 calls that ran and one answered "too many" for the rest
    sent = next(m for m in srv.requests[1]["messages"] if m["role"] == "assistant")
    assert [c["id"] for c in sent["tool_calls"]] == [f"c{i}" for i in range(33)]
    results = tool_results(srv.requests[1])
    assert [r["tool_call_id"] for r in results] == [f"c{i}" for i in range(33)]
    assert results[-1]["content"].startswith("skipped: too many tool calls in one turn (1000 calls; at most 32")
    assert "967 after it" in results[-1]["content"]
    # the checkpointed history holds 33 calls, not 1000
    ai = [m for m in final["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert len(ai) == 1 and len(ai[0].tool_calls) == 33


@pytest.mark.graph
async def test_a_10_mb_argument_is_refused_before_it_runs_and_shrunk_in_history(scripted_server, workspace):
    huge = "x" * 10_000_000
    srv = scripted_server(
        [tool_call("write_file", {"path": "big.txt", "content": huge}, id="w"), text("I could not write it.")]
    )
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "write", ctx(workspace))

    assert final["answer"] == "I could not write it."
    assert not (workspace / "big.txt").exists()  # the tool never ran
    (result,) = tool_results(srv.requests[1])
    assert (
        result["content"].startswith("Refused: the arguments are 10000") and "max_tool_arg_chars" in result["content"]
    )
    sent = next(m for m in srv.requests[1]["messages"] if m["role"] == "assistant")
    assert json.loads(sent["tool_calls"][0]["function"]["arguments"]) == {
        "_truncated": f"{len(json.dumps({'path': 'big.txt', 'content': huge}))} chars"
    }
    assert srv.request_chars(1) < 100_000  # the next request does not carry the 10 MB
    ai = next(m for m in final["messages"] if isinstance(m, AIMessage) and (m.tool_calls or m.invalid_tool_calls))
    (call,) = ai.tool_calls + ai.invalid_tool_calls  # (too long to be parsed at all: an invalid call)
    args = call["args"] if isinstance(call["args"], dict) else json.loads(call["args"])
    assert set(args) == {"_truncated"}  # nor does the checkpoint


@pytest.mark.graph
async def test_an_empty_reply_is_asked_again_once(scripted_server, workspace):
    srv = scripted_server([text(""), text("Here is the answer.")])
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "hello", ctx(workspace))
    assert final["answer"] == "Here is the answer."
    assert "Your previous reply was empty" in srv.requests[1]["messages"][-1]["content"]
    assert len(final["messages"]) == 2  # the empty reply and the note are not in the history


@pytest.mark.graph
@pytest.mark.parametrize("finish", ["stop", "content_filter"])
async def test_two_empty_replies_fail_the_run(scripted_server, workspace, finish):
    srv = scripted_server([text("", finish_reason=finish), text("", finish_reason=finish)])
    with pytest.raises(ModelReplyError, match="empty reply twice"):
        await run_graph(build_agent_graph(model=openai_model(srv)), "hello", ctx(workspace))
    assert len(srv.requests) == 2


@pytest.mark.e2e
def test_cli_content_filtered_replies_exit_1_with_one_line(scripted_server, workspace):
    srv = scripted_server([text("", finish_reason="content_filter")] * 2)
    res = run_cli(["run", "hello", "--json", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 1, res.stderr
    assert json.loads(res.stdout)["error"]["type"] == "ModelReplyError"  # not an empty "answer"
    errors = [line for line in res.stderr.splitlines() if line.startswith("smart-agent:")]
    assert len(errors) == 1 and "empty reply twice (finish_reason 'content_filter')" in errors[0]
    assert "Traceback" not in res.stderr


@pytest.mark.e2e
def test_cli_non_object_arguments_end_with_the_answer(scripted_server, workspace):
    srv = scripted_server([tool_call("calculator", "[1, 2, 3]"), text("recovered")])
    res = run_cli(["run", "x", "--json", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["answer"] == "recovered"


@pytest.mark.graph
async def test_an_empty_reply_at_the_tool_limit_is_asked_again_before_the_fallback(scripted_server, workspace):
    srv = scripted_server([tool_call("calculator", {"expression": "2+2"}), text(""), text("2+2 = 4")])
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "2+2?", ctx(workspace, max_tool_calls=1))
    assert final["answer"] == "2+2 = 4"  # not the fixed "I reached the tool-call limit..." text
    assert (
        "tools" not in srv.requests[2] and "Your previous reply was empty" in srv.requests[2]["messages"][-1]["content"]
    )


@pytest.mark.e2e
def test_cli_planner_that_never_plans_validly_exits_1_with_one_line(scripted_server, workspace):
    srv = scripted_server(responder=lambda _req: tool_call("submit_plan", "[1, 2, 3]"))  # never an object
    args = ["run", "plan it", "--graph", "planner", "--max-plan-attempts", "2", "--workspace", str(workspace)]
    res = run_cli([*args, "--thread", "p1"], env=cli_env(srv))
    assert res.returncode == 1, res.stdout + res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("smart-agent:")]
    assert errors == [
        "smart-agent: Planning failed: the model did not produce a valid plan in 2 attempts, so nothing was"
        " executed. Problems with the last plan (thread p1; details: --json)"
    ]
    assert "Traceback" not in res.stderr
    as_json = run_cli([*args, "--json"], env=cli_env(srv))
    assert as_json.returncode == 1
    out = json.loads(as_json.stdout)
    assert out["status"] == "failed" and out["graph_status"] == "planning_failed"
    assert out["error"].startswith("Planning failed") and out["answer"]


LONG_NAME = "x" * 100_000
CLIPPED = "x" * 40 + "__clipped_100000"


@pytest.mark.graph
async def test_a_100k_character_tool_name_is_an_unknown_tool_with_the_name_clipped(scripted_server, workspace):
    # The name went back to the model whole (in the call and in the "Unknown tool" answer): the next
    # request could not be cut to the context budget and the run ended blaming --context-tokens.
    calls = tool_calls([
        {"name": LONG_NAME, "arguments": {"expression": "1+1"}, "id": "long"},
        {"name": LONG_NAME + "y", "arguments": "{not json", "id": "bad"},  # malformed as well
    ])
    srv = scripted_server([calls, text("I have no such tool.")])
    events: list = []
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "hi", ctx(workspace), events=events)

    assert final["answer"] == "I have no such tool."
    sent = next(m for m in srv.requests[1]["messages"] if m["role"] == "assistant")
    assert [c["function"]["name"] for c in sent["tool_calls"]] == [CLIPPED, "x" * 40 + "__clipped_100001"]
    first, second = tool_results(srv.requests[1])
    assert first["content"].startswith(f"Unknown tool '{CLIPPED}'. Available tools: ")
    assert second["content"].startswith(f"Invalid tool call to '{'x' * 40}__clipped_100001'")
    assert srv.request_chars(1) < 20_000  # no 100k name anywhere in the next request
    named = [e["name"] for e in events if e["event"] in ("tool_call", "tool_result")]
    assert named and all(len(n) < 64 for n in named)
    ai = next(m for m in final["messages"] if isinstance(m, AIMessage) and (m.tool_calls or m.invalid_tool_calls))
    assert [c["name"] for c in [*ai.tool_calls, *ai.invalid_tool_calls]] == [CLIPPED, "x" * 40 + "__clipped_100001"]


@pytest.mark.e2e
def test_cli_a_100k_character_tool_name_is_not_a_configuration_error(scripted_server, workspace):
    srv = scripted_server([tool_call(LONG_NAME, {"a": 1}), text("no such tool")])
    res = run_cli(["run", "x", "--json", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr  # was exit 2: "Raise --context-tokens (context_token_limit)"
    assert json.loads(res.stdout)["answer"] == "no such tool"
    assert "--context-tokens" not in res.stderr and LONG_NAME not in res.stdout + res.stderr
