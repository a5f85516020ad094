"""Todo planning (the todo tool, its events, the final state) and structured output (a JSON Schema
or a pydantic model, retries on invalid answers, the CLI's --output-schema), over the real
langchain-openai client (issue 4)."""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, loop_context, openai_model, run_cli, run_graph
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, field_validator

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.replies.structured import StructuredOutputError
from smart_agent.testing.scripted_server import text, tool_call, tool_calls

ctx = loop_context
run = run_graph


# --------------------------------------------------------------------------- todo planning
async def test_todo_list_events_and_final_state(scripted_server, workspace):
    srv = scripted_server(
        [
            tool_call("manage_todo_list", {"add": ["collect data", "compute total", "write report"]}),
            tool_calls(
                [
                    {
                        "name": "manage_todo_list",
                        "arguments": {"update": [{"id": 1, "status": "done"}, {"id": 2, "status": "in_progress"}]},
                    },
                    {"name": "calculator", "arguments": {"expression": "2+3"}},
                    {"name": "manage_todo_list", "arguments": {"remove": [3], "update": [{"id": 2, "status": "done"}]}},
                ]
            ),
            tool_call("manage_todo_list", {"update": [{"id": 42, "status": "done"}]}),
            text("Total is 5."),
        ]
    )
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    events = []
    final = await run(graph, "Plan and compute.", ctx(workspace, use_todo_list=True), thread="todo", events=events)
    assert final["answer"] == "Total is 5."
    assert final["todos"] == [
        {"id": 1, "content": "collect data", "status": "done"},
        {"id": 2, "content": "compute total", "status": "done"},
    ]
    plans = [e for e in events if e["event"] == "plan"]
    assert [len(p["added"]) for p in plans] == [3, 0, 0]
    assert plans[1]["updated"][1] == {
        "id": 2,
        "before": {"id": 2, "content": "compute total", "status": "pending"},
        "after": {"id": 2, "content": "compute total", "status": "in_progress"},
    }
    assert plans[2]["removed"] == [
        {"id": 3, "content": "write report", "status": "pending"}
    ]  # saw the previous call's update
    # the model is offered the tool and sees the rules and the current list in the system prompt
    assert "manage_todo_list" in srv.offered_tools(0)
    system = srv.requests[3]["messages"][0]["content"]
    assert "PLANNING:" in system and "[x] 2. compute total (done)" in system
    # a bad id is an error the model can read; nothing changes
    bad = [m for m in final["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(bad) == 1 and "No todo item with id 42" in bad[0].content
    kinds = [e["event"] for e in events]
    assert kinds.count("plan") == 3


async def test_todo_tool_is_not_offered_without_planning_mode(scripted_server, workspace):
    srv = scripted_server([text("hi")])
    graph = build_agent_graph(model=openai_model(srv))
    await run(graph, "hello", ctx(workspace))
    assert "manage_todo_list" not in srv.offered_tools(0) and "get_tool_response" not in srv.offered_tools(0)
    assert "PLANNING:" not in srv.requests[0]["messages"][0]["content"]


# --------------------------------------------------------------------------- structured output
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
    "required": ["city", "population"],
    "additionalProperties": False,
}


async def test_structured_output_valid_first_time(scripted_server, workspace):
    srv = scripted_server(
        [tool_call("calculator", {"expression": "1000*3"}), text('```json\n{"city": "Oslo", "population": 3000}\n```')]
    )
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run(graph, "Give me the city.", ctx(workspace, output_schema=SCHEMA), events=events)
    assert final["structured_response"] == {"city": "Oslo", "population": 3000}
    assert json.loads(final["answer"]) == final["structured_response"]
    assert (
        "OUTPUT FORMAT" in srv.requests[0]["messages"][0]["content"]
        and '"population"' in srv.requests[0]["messages"][0]["content"]
    )
    finals = [e for e in events if e["event"] == "final_answer"]
    assert len(finals) == 1 and finals[0]["structured_response"] == final["structured_response"]


async def test_structured_output_retries_on_invalid_json_then_succeeds(scripted_server, workspace):
    srv = scripted_server(
        [
            text("The city is Oslo."),
            text('{"city": "Oslo", "population": -5}'),
            text('{"city": "Oslo", "population": 700000}'),
        ]
    )
    graph = build_agent_graph(model=openai_model(srv))
    final = await run(graph, "city?", ctx(workspace, output_schema=SCHEMA))
    assert final["structured_response"] == {"city": "Oslo", "population": 700000}
    assert final["bookkeeping"]["output_retries"] == 2
    feedback1 = srv.requests[1]["messages"][-1]["content"]
    assert "not valid JSON" in feedback1
    feedback2 = srv.requests[2]["messages"][-1]["content"]
    assert "$.population" in feedback2 and "minimum" in feedback2


async def test_structured_output_fails_cleanly_after_the_retry_bound(scripted_server, workspace):
    srv = scripted_server(responder=lambda req: text("no JSON here"))
    graph = build_agent_graph(model=openai_model(srv))
    with pytest.raises(StructuredOutputError, match="not valid for the output schema after 2 attempt"):
        await run(graph, "city?", ctx(workspace, output_schema=SCHEMA, max_output_retries=1))
    assert len(srv.requests) == 2


async def test_structured_output_with_a_pydantic_model(scripted_server, workspace):
    class City(BaseModel):
        city: str
        population: int

        @field_validator("city")
        @classmethod
        def upper(cls, v: str) -> str:
            return v.upper()

    srv = scripted_server([text('{"city": "Oslo"}'), text('{"city": "Oslo", "population": 12}')])
    graph = build_agent_graph(model=openai_model(srv), output_schema=City)
    final = await run(graph, "city?", ctx(workspace))
    assert final["structured_response"] == {"city": "OSLO", "population": 12}  # the model's own validators ran
    assert "'population' is a required property" in srv.requests[1]["messages"][-1]["content"]


@pytest.mark.e2e
def test_cli_output_schema_and_failure_exit_code(scripted_server, workspace, tmp_path):
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    srv = scripted_server([text('{"city": "Rome", "population": 2800000}')])
    env = cli_env(srv, SMART_AGENT_MEMORY="0")
    res = run_cli(
        ["run", "city?", "--output-schema", str(schema_file), "--json", "--workspace", str(workspace)], env=env
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["structured_response"] == {"city": "Rome", "population": 2800000}

    srv.reset([text("nope"), text("still nope"), text("never")])
    res = run_cli(["run", "city?", "--output-schema", str(schema_file), "--workspace", str(workspace)], env=env)
    assert res.returncode == 1
    assert "structured output failed" in res.stderr and "not valid JSON" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.e2e
def test_cli_todo_flag_and_bad_schema_file(scripted_server, workspace, tmp_path):
    srv = scripted_server([tool_call("manage_todo_list", {"add": ["one"]}), text("planned")])
    env = cli_env(srv, SMART_AGENT_MEMORY="0")
    res = run_cli(["run", "plan", "--todo", "--json", "--workspace", str(workspace)], env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["todos"] == [{"id": 1, "content": "one", "status": "pending"}]
    assert "☰ todo list: 0/1 done (1 added)" in res.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "no-such-type"}')
    res = run_cli(["run", "x", "--output-schema", str(bad)], env=env)
    assert res.returncode == 2 and "output_schema is not a valid JSON Schema" in res.stderr
