"""`langgraph dev` serving graphs with MCP servers: SMART_AGENT_AGENTS names an agents file with
an `mcp_servers` section (a real stdio MCP server, tests/mcp_server_app.py) and
SMART_AGENT_MCP_CONFIG a servers file (one that starts, one that cannot). Each run through
langgraph_sdk opens the sessions, the served agent calls the MCP tool and its result reaches the
model's next request, the server that cannot start is one error event naming it, and the
sessions are closed when the run ends; the served planner plans and runs a step on an MCP tool."""

import json

import pytest
from mcp_support import alive, pids_of, stdio_server, write_config

from smart_agent.testing.scripted_server import last_tool_message, text, tool_call


@pytest.fixture
def dev_server_env(tmp_path):
    team = {
        "default": "triage",
        "mcp_servers": {"math": stdio_server(tmp_path, "math")},
        "agents": {
            "triage": {"description": "Routes.", "prompt": "You are the triage agent.", "tools": [],
                       "handoffs": ["math"]},
            "math": {"description": "Does arithmetic.", "prompt": "You are the math agent.",
                     "tools": ["math__add"]},
        },
    }
    (tmp_path / "team.json").write_text(json.dumps(team))
    config = write_config(tmp_path, {"ghost": {"command": str(tmp_path / "no-such-server")},
                                     "calc": stdio_server(tmp_path, "calc")})
    return {"SMART_AGENT_AGENTS": str(tmp_path / "team.json"), "SMART_AGENT_MCP_CONFIG": str(config)}


async def test_served_agent_calls_an_mcp_tool_of_its_agents_file(dev_server, tmp_path):
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset([
        tool_call("transfer_to_math", {"reason": "sum"}),
        tool_call("math__add", {"a": 20, "b": 22}),
        lambda req: text(f"tool said: {last_tool_message(req)}"),
    ])
    client = get_client(url=url)
    thread = await client.threads.create()
    events, values = [], {}
    async for part in client.runs.stream(thread["thread_id"], "agent", input={"task": "20+22?"},
                                         context={"model": "openai:scripted-model"},
                                         stream_mode=["custom", "values"]):
        if part.event == "custom":
            events.append(part.data)
        elif part.event == "values":
            values = part.data
    assert values["answer"] == "tool said: 42"
    second, third = srv.requests[1], srv.requests[2]
    assert second["messages"][0]["content"].startswith("You are the math agent.")
    assert [t["function"]["name"] for t in second["tools"]] == ["math__add"]
    assert third["messages"][-1] == {"role": "tool", "tool_call_id": third["messages"][-1]["tool_call_id"],
                                     "content": "42"}  # the MCP server's result reached the next request
    errors = [e for e in events if e["event"] == "error"]
    assert [(e["source"], e["server"]) for e in errors] == [("mcp", "ghost")]  # once, naming it
    (math_pid,) = pids_of(tmp_path, "math")  # one session per run, closed at its end
    (calc_pid,) = pids_of(tmp_path, "calc")
    assert not alive(math_pid) and not alive(calc_pid)


async def test_served_planner_runs_a_step_on_an_mcp_tool(dev_server, tmp_path):
    from langgraph_sdk import get_client

    url, srv = dev_server
    plan = {"steps": [{"id": "one", "tool": "calc__add", "args": {"a": 2, "b": 3}}]}
    srv.reset([{"tool_calls": [{"name": "submit_plan", "arguments": plan}]},
               lambda req: text(f"synthesis saw: {req['messages'][-1]['content']}")])
    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(thread["thread_id"], "planner", input={"task": "add"},
                                    context={"model": "openai:scripted-model"})
    assert result["status"] == "done"
    assert "calc__add" in srv.requests[0]["messages"][0]["content"]  # the plan request described it
    assert "5" in srv.requests[1]["messages"][-1]["content"]  # the step's real result reached the synthesis
    (calc_pid,) = pids_of(tmp_path, "calc")
    assert not alive(calc_pid)
