"""Graphs built with MCP servers open them around each run (graphs/run_scope.py): an agents
file's ``mcp_servers`` and ``mcp_config=`` of ``build_agent_graph`` / ``build_planner_graph``,
with no ``async with mcp_tools`` around the run. A real FastMCP server over stdio
(tests/mcp_server_app.py), the model the scripted server behind the real langchain-openai client."""

from __future__ import annotations

import json

import pytest
from conftest import offered, openai_model, run_with_events
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from mcp_support import alive, pids_of, stdio_server, write_config
from planner_support import run_graph as run_planner

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.nodes.resolver import InputError
from smart_agent.runs.run_tools import current_run_tools
from smart_agent.testing.scripted_server import last_tool_message, text, tool_call, tool_messages


def ctx(workspace, **kw):
    return Context(model="openai:scripted-model", workspace=str(workspace), memory=False, **kw)


def echo_last_tool(req):
    return text(f"tool said: {last_tool_message(req)}")


def team_file(tmp_path, servers: dict) -> str:
    """triage hands off to math, whose tools name one MCP tool; checker (triage's sub-agent) has ``math__*``."""
    path = tmp_path / "team.json"
    path.write_text(json.dumps({
        "default": "triage",
        "mcp_servers": servers,
        "agents": {
            "triage": {"description": "Routes.", "prompt": "You are the triage agent.", "tools": [],
                       "handoffs": ["math"], "sub_agents": ["checker"]},
            "math": {"description": "Does arithmetic.", "prompt": "You are the math agent.",
                     "tools": ["calculator", "math__add"]},
            "checker": {"description": "Checks a sum.", "prompt": "You are the checker.", "tools": ["math__*"]},
        },
    }))
    return str(path)


async def test_an_agents_files_mcp_server_opens_for_each_run_and_its_tool_reaches_the_model(
    scripted_server, workspace, tmp_path
):
    srv = scripted_server([
        tool_call("transfer_to_math", {"reason": "sum"}),
        tool_call("math__add", {"a": 2, "b": 3}),
        echo_last_tool,
    ])
    graph = build_agent_graph(agents_file=team_file(tmp_path, {"math": stdio_server(tmp_path)}),
                              model=openai_model(srv))
    final, events = await run_with_events(graph, "2+3?", ctx(workspace), thread=None)
    assert final["answer"] == "tool said: 5"  # the MCP tool's result reached the model's next request
    assert offered(srv.requests[0]) == ["checker", "transfer_to_math"]  # triage: no MCP tool
    assert offered(srv.requests[1]) == ["calculator", "math__add"]  # math: the one it names, not note/crash
    assert [e["name"] for e in events if e["event"] == "tool_result" and e["ok"]] == ["transfer_to_math", "math__add"]
    (pid,) = pids_of(tmp_path)  # one session for the run
    assert not alive(pid)  # closed at its end
    assert current_run_tools() is None  # nothing left behind in the caller's context

    srv.reset([text("no tools needed")])
    await run_with_events(graph, "hi", ctx(workspace), thread=None)
    assert len(pids_of(tmp_path)) == 2 and not any(alive(p) for p in pids_of(tmp_path))  # a session per run


async def test_a_named_sub_agent_uses_its_callers_session(scripted_server, workspace, tmp_path):
    srv = scripted_server([
        tool_call("checker", {"task": "is 2+2 4?"}),  # triage calls the checker sub-agent
        tool_call("math__add", {"a": 2, "b": 2}),  # the checker's own turn: the run's MCP tool
        echo_last_tool,  # the checker's answer
        lambda req: text(f"checked: {last_tool_message(req)}"),  # triage's answer
    ])
    graph = build_agent_graph(agents_file=team_file(tmp_path, {"math": stdio_server(tmp_path)}),
                              model=openai_model(srv))
    final, _ = await run_with_events(graph, "check", ctx(workspace), thread=None)
    assert offered(srv.requests[1]) == ["math__add", "math__note", "math__crash"]  # the checker's math__*
    assert final["answer"] == "checked: tool said: 4"
    assert len(pids_of(tmp_path)) == 1  # the child graph opened no session of its own


async def test_a_server_that_does_not_start_is_one_error_event_on_the_runs_stream(scripted_server, workspace, tmp_path):
    config = write_config(tmp_path, {"ghost": {"command": str(tmp_path / "no-such-server")},
                                     "math": stdio_server(tmp_path)})
    srv = scripted_server([tool_call("math__add", {"a": 1, "b": 1}), echo_last_tool])
    graph = build_agent_graph(mcp_config=config, model=openai_model(srv))
    final, events = await run_with_events(graph, "1+1?", ctx(workspace), thread=None)
    errors = [e for e in events if e["event"] == "error"]
    assert [(e["source"], e["server"]) for e in errors] == [("mcp", "ghost")]
    assert "'ghost'" in errors[0]["error"] and "\n" not in errors[0]["error"]
    assert final["answer"] == "tool said: 2"  # the run went on with the other server's tools
    assert "math__add" in offered(srv.requests[0]) and "calculator" in offered(srv.requests[0])


async def test_sessions_close_when_the_run_fails(scripted_server, workspace, tmp_path):
    graph = build_agent_graph(mcp_config=write_config(tmp_path, {"math": stdio_server(tmp_path)}),
                              model=openai_model(scripted_server([])))
    with pytest.raises(InputError):
        await graph.ainvoke({"task": 5}, context=ctx(workspace))  # fails in the resolver, sessions open
    (pid,) = pids_of(tmp_path)
    assert not alive(pid)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_planner_built_with_mcp_config_plans_and_runs_an_mcp_step_then_survives_a_killed_server(
    scripted_server, workspace, tmp_path, request, transport
):
    name = "math" if transport == "stdio" else "web"
    spec = stdio_server(tmp_path) if transport == "stdio" else {"url": request.getfixturevalue("http_mcp").url}
    plan = {"steps": [
        {"id": "one", "tool": f"{name}__add", "args": {"a": 2, "b": 3}},
        {"id": "boom", "tool": f"{name}__crash", "args": {}, "depends_on": ["one"], "on_fail": "continue"},
    ]}
    srv = scripted_server([{"tool_calls": [{"name": "submit_plan", "arguments": plan}]}, text("done")])
    graph = build_planner_graph(model=openai_model(srv), mcp_config=write_config(tmp_path, {name: spec}))
    final, events = await run_planner(graph, {"task": "add"}, context=ctx(workspace, tool_timeout_s=600))
    assert f"{name}__add" in srv.requests[0]["messages"][0]["content"]  # the plan request described the MCP tool
    results = {e["step"]: e for e in events if e["event"] == "step_result"}
    assert results["one"]["ok"] and not results["boom"]["ok"]  # the server died in the middle of "boom"
    assert final["status"] == "done" and final["answer"] == "done"  # an error, not a crashed run
    synthesis = srv.requests[1]["messages"][-1]["content"]
    assert "5" in synthesis and f"MCP server '{name}' is gone" in synthesis
    if transport == "stdio":
        assert not any(alive(p) for p in pids_of(tmp_path))


async def test_a_served_style_agent_loop_survives_a_killed_server(scripted_server, workspace, tmp_path):
    srv = scripted_server([
        tool_call("math__crash", {}),
        tool_call("math__add", {"a": 1, "b": 2}),
        lambda req: text(f"{len(tool_messages(req))} results, the last: {last_tool_message(req)}"),
    ])
    graph = build_agent_graph(mcp_config=write_config(tmp_path, {"math": stdio_server(tmp_path)}),
                              model=openai_model(srv))
    final, events = await run_with_events(graph, "go", ctx(workspace, tool_timeout_s=600), thread=None)
    assert [(e["name"], e["ok"]) for e in events if e["event"] == "tool_result"] == [
        ("math__crash", False), ("math__add", False)]
    assert "MCP server 'math' is gone" in final["answer"]


async def test_approve_side_effects_holds_a_run_tool_and_the_resumed_run_opens_the_server_again(
    scripted_server, workspace, tmp_path
):
    srv = scripted_server([tool_call("math__note", {"text": "hello"}), echo_last_tool])
    graph = build_agent_graph(mcp_config=write_config(tmp_path, {"math": stdio_server(tmp_path)}),
                              model=openai_model(srv), checkpointer=InMemorySaver())
    context, config = ctx(workspace, approve="side-effects"), {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"task": "note hello"}, config, context=context)
    state = await graph.aget_state(config)
    (value,) = [i.value for task in state.tasks for i in task.interrupts]
    assert [a["name"] for a in value["action_requests"]] == ["math__note"]  # an MCP tool: side effects by default
    assert not (tmp_path / "notes.txt").exists()
    final = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), config, context=context)
    assert final["answer"] == "tool said: noted: hello"
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    assert len(pids_of(tmp_path)) == 2 and not any(alive(p) for p in pids_of(tmp_path))  # one session per run
