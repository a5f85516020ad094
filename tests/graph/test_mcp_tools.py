"""MCP servers' tools (tools/mcp.py) in the agent loop and the planner: a real FastMCP server
(tests/mcp_server_app.py) over stdio and over streamable HTTP on 127.0.0.1, the model the
scripted server behind the real langchain-openai client."""

from __future__ import annotations

import pytest
from conftest import loop_context, offered, openai_model, run_with_events
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from mcp_support import alive, pid_of, stdio_server
from planner_support import run_graph as run_planner

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.testing.scripted_server import last_tool_message, text, tool_call, tool_messages
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.mcp import mcp_tools
from smart_agent.tools.mcp_config import parse_mcp_servers

ctx = loop_context


def servers(spec: dict):
    return parse_mcp_servers(spec, "test")


def registry():
    return default_registry(entry_points=False)


def echo_last_tool(req):
    return text(f"tool said: {last_tool_message(req)}")


async def test_agent_calls_a_stdio_mcp_tool_and_the_session_ends_with_the_run(scripted_server, workspace, tmp_path):
    srv = scripted_server([tool_call("math__add", {"a": 2, "b": 3}), echo_last_tool])
    async with mcp_tools(servers({"math": stdio_server(tmp_path)}), registry=registry()) as mcp:
        pid = pid_of(tmp_path)
        assert alive(pid)
        graph = build_agent_graph(model=openai_model(srv), registry=mcp.registry)
        final, events = await run_with_events(graph, "2+3?", ctx(workspace), thread=None)
        meta = mcp.registry.meta("math__add")
    assert final["answer"] == "tool said: 5"  # the MCP server's result reached the model's next request
    assert {"math__add", "math__note", "math__crash", "calculator"} <= set(offered(srv.requests[0]))
    assert meta.side_effects and meta.source == "mcp:math" and "mcp" in meta.tags
    assert [e["name"] for e in events if e["event"] == "tool_result" and e["ok"]] == ["math__add"]
    assert not alive(pid)  # the session closed: the stdio server process is gone


async def test_tools_given_as_a_list_keep_their_mcp_metadata(scripted_server, workspace, tmp_path):
    spec = stdio_server(tmp_path, tool_prefix="m", tools={"add": {"side_effects": False, "timeout_s": 9}})
    srv = scripted_server([tool_call("m__add", {"a": 1.5, "b": 1}), echo_last_tool])
    async with mcp_tools(servers({"math": spec}), registry=registry()) as mcp:
        assert [t.name for t in mcp] == ["m__add"]  # the allow-list: only add
        graph = build_agent_graph(model=openai_model(srv), registry=registry(), tools=list(mcp))
        final, _ = await run_with_events(graph, "1.5+1?", ctx(workspace), thread=None)
    assert final["answer"] == "tool said: 2.5"
    assert "m__note" not in offered(srv.requests[0])


async def test_agent_calls_an_http_mcp_tool(scripted_server, workspace, http_mcp):
    srv = scripted_server([tool_call("web__add", {"a": 40, "b": 2}), echo_last_tool])
    async with mcp_tools(servers({"web": {"url": http_mcp.url}}), registry=registry()) as mcp:
        graph = build_agent_graph(model=openai_model(srv), registry=mcp.registry)
        final, _ = await run_with_events(graph, "40+2?", ctx(workspace), thread=None)
    assert final["answer"] == "tool said: 42"


async def test_planner_runs_steps_on_stdio_and_http_mcp_tools(scripted_server, workspace, tmp_path, http_mcp):
    plan = {"steps": [
        {"id": "one", "tool": "math__add", "args": {"a": 2, "b": 3}},
        {"id": "two", "tool": "web__add", "args": {"a": 20, "b": 10}},
    ]}
    srv = scripted_server([{"tool_calls": [{"name": "submit_plan", "arguments": plan}]}, text("5 and 30")])
    spec = {"math": stdio_server(tmp_path), "web": {"url": http_mcp.url}}
    async with mcp_tools(servers(spec), registry=registry()) as mcp:
        graph = build_planner_graph(model=openai_model(srv), registry=mcp.registry)
        final, events = await run_planner(graph, {"task": "add"}, context=ctx(workspace))
    assert final["status"] == "done" and final["answer"] == "5 and 30"
    prompt = srv.requests[0]["messages"][0]["content"]
    assert "math__add" in prompt and "web__add" in prompt  # the plan request described the MCP tools
    results = {e["step"]: e for e in events if e["event"] == "step_result"}
    assert results["one"]["ok"] and results["two"]["ok"]
    synthesis = srv.requests[1]["messages"][-1]["content"]
    assert "5" in synthesis and "30" in synthesis  # the steps' real results reached the synthesis


async def test_a_server_that_does_not_start_is_one_error_event_and_the_run_goes_on(
    scripted_server, workspace, tmp_path
):
    spec = {"ghost": {"command": str(tmp_path / "no-such-server")}, "math": stdio_server(tmp_path)}
    seen: list[dict] = []
    srv = scripted_server([tool_call("math__add", {"a": 1, "b": 1}), echo_last_tool])
    async with mcp_tools(servers(spec), registry=registry(), on_event=seen.append) as mcp:
        graph = build_agent_graph(model=openai_model(srv), registry=mcp.registry)
        final, _ = await run_with_events(graph, "1+1?", ctx(workspace), thread=None)
    assert [(e["event"], e["server"]) for e in seen] == [("error", "ghost")]
    assert "'ghost'" in seen[0]["error"] and "\n" not in seen[0]["error"]
    assert mcp.servers == {"math": ["math__add", "math__note", "math__crash"]}
    assert final["answer"] == "tool said: 2"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_killed_mid_run_gives_error_tool_messages_not_a_crash(
    scripted_server, workspace, tmp_path, http_mcp, transport
):
    name = "math" if transport == "stdio" else "web"
    spec = {"math": stdio_server(tmp_path)} if transport == "stdio" else {"web": {"url": http_mcp.url}}
    srv = scripted_server([
        tool_call(f"{name}__crash", {}),  # the server process ends in the middle of this call
        tool_call(f"{name}__add", {"a": 1, "b": 2}),  # and the next call finds it gone
        lambda req: text(f"{len(tool_messages(req))} tool results, the last: {last_tool_message(req)}"),
    ])
    async with mcp_tools(servers(spec), registry=registry()) as mcp:
        graph = build_agent_graph(model=openai_model(srv), registry=mcp.registry)
        # tool_timeout_s is far above the probe interval: the calls fail because the server is gone
        final, events = await run_with_events(graph, "go", ctx(workspace, tool_timeout_s=600), thread=None)
    results = [e for e in events if e["event"] == "tool_result"]
    assert [(r["name"], r["ok"]) for r in results] == [(f"{name}__crash", False), (f"{name}__add", False)]
    assert final["answer"].startswith("2 tool results, the last: Tool ")
    assert f"MCP server '{name}' is gone" in final["answer"]
    assert all("timed out" not in m.get("content", "") for m in tool_messages(srv.requests[-1]))


async def test_sessions_close_when_the_run_fails(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        async with mcp_tools(servers({"math": stdio_server(tmp_path)}), registry=registry()) as mcp:
            pid = pid_of(tmp_path)
            assert "math__add" in mcp.registry and alive(pid)
            raise RuntimeError("boom")
    assert not alive(pid)


async def test_approve_side_effects_pauses_an_mcp_tool_call(scripted_server, workspace, tmp_path):
    spec = stdio_server(tmp_path, tools={"add": {"side_effects": False}, "note": {}})
    srv = scripted_server([
        tool_call("math__add", {"a": 1, "b": 1}),  # no side effects: runs unasked
        tool_call("math__note", {"text": "hello"}),  # side effects (the MCP default): waits for a person
        echo_last_tool,
    ])
    notes = tmp_path / "notes.txt"
    async with mcp_tools(servers({"math": spec}), registry=registry()) as mcp:
        graph = build_agent_graph(model=openai_model(srv), registry=mcp.registry, checkpointer=InMemorySaver())
        context = ctx(workspace, approve="side-effects")
        config = {"configurable": {"thread_id": "t"}}
        await graph.ainvoke({"task": "note hello"}, config, context=context)
        state = await graph.aget_state(config)
        (value,) = [i.value for task in state.tasks for i in task.interrupts]
        assert [a["name"] for a in value["action_requests"]] == ["math__note"]
        assert not notes.exists()  # nothing ran before the approval
        final = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), config, context=context)
    assert notes.read_text() == "hello\n"
    assert final["answer"] == "tool said: noted: hello"
