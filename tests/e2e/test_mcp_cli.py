"""MCP tools through the CLI (--mcp-config, cli/mcp.py): separate CLI processes, a real
FastMCP server over stdio (tests/mcp_server_app.py), the scripted OpenAI-compatible server."""

from __future__ import annotations

import json

from conftest import cli_env, run_cli
from mcp_support import alive, pid_of, pids_of, stdio_server, write_config

from smart_agent.testing.scripted_server import last_tool_message, text, tool_call


def echo_last_tool(req):
    return text(f"tool said: {last_tool_message(req)}")


def test_tools_lists_the_mcp_tools_and_a_server_that_does_not_start(tmp_path):
    config = write_config(tmp_path, {"math": stdio_server(tmp_path, tools={"add": {"side_effects": False}, "note": {}}),
                                     "ghost": {"command": str(tmp_path / "no-such-server")}})
    listed = run_cli(["tools", "--mcp-config", str(config)], env=cli_env())
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "(mcp:math)" in lines["math__add"] and "side effects" not in lines["math__add"]
    assert "(side effects, mcp:math)" in lines["math__note"] and "math__crash" not in lines
    assert "calculator" in lines
    errors = [line for line in listed.stderr.splitlines() if "ghost" in line]
    assert len(errors) == 1 and "MCP server 'ghost' failed to start" in errors[0]
    rows = json.loads(run_cli(["tools", "--json", "--mcp-config", str(config)], env=cli_env()).stdout)
    assert {r["name"]: r["meta"]["source"] for r in rows}["math__add"] == "mcp:math"


def test_run_calls_an_mcp_tool_and_ends_its_server(scripted_server, workspace, tmp_path):
    config = write_config(tmp_path, {"math": stdio_server(tmp_path),
                                     "ghost": {"command": str(tmp_path / "no-such-server")}})
    srv = scripted_server([tool_call("math__add", {"a": 20, "b": 22}), echo_last_tool])
    done = run_cli(["run", "20+22?", "--json", "--workspace", str(workspace), "--mcp-config", str(config)],
                   env=cli_env(srv))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["answer"] == "tool said: 42" and [c["name"] for c in out["tool_calls"]] == ["math__add"]
    assert "MCP server 'ghost' failed to start" in done.stderr  # one error event; the run went on
    assert not alive(pid_of(tmp_path))


def test_approve_an_mcp_tool_by_name_then_resume_reopens_the_servers(scripted_server, workspace, tmp_path):
    config = write_config(tmp_path, {"math": stdio_server(tmp_path)})
    srv = scripted_server([tool_call("math__note", {"text": "from the cli"}), echo_last_tool])
    env = cli_env(srv, SMART_AGENT_MCP_CONFIG=config)  # the variable stands for --mcp-config
    paused = run_cli(["run", "note it", "--json", "--thread", "m1", "--approve", "math__note"], env=env)
    assert paused.returncode == 3, paused.stderr
    [pending] = json.loads(paused.stdout)["interrupts"]
    assert [a["name"] for a in pending["value"]["action_requests"]] == ["math__note"]
    assert not (tmp_path / "notes.txt").exists()
    resumed = run_cli(["resume", "--thread", "m1", "--approve"], env=cli_env(srv))  # the file is recorded
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "notes.txt").read_text() == "from the cli\n"
    assert "tool said: noted: from the cli" in resumed.stdout


def test_a_bad_config_or_tool_name_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"math": {"command": "x", "url": "http://y"}}}))
    refused = run_cli(["run", "hi", "--mcp-config", str(bad)], env=cli_env())
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0
    assert "bad.json: mcpServers.math: give exactly one of" in refused.stderr
    config = write_config(tmp_path, {"math": stdio_server(tmp_path, tools=["add"])})
    unknown = run_cli(["run", "hi", "--mcp-config", str(config), "--tools", "math__add,math__note"], env=cli_env())
    assert unknown.returncode == 2 and "--tools: unknown tool(s) 'math__note'" in unknown.stderr


def test_plan_then_execute_a_plan_of_mcp_tools(scripted_server, workspace, tmp_path):
    config = write_config(tmp_path, {"math": stdio_server(tmp_path)})
    plan = {"steps": [{"id": "sum", "tool": "math__add", "args": {"a": 4, "b": 5}},
                      {"id": "keep", "tool": "math__note", "args": {"text": "sum is ${sum}"}}]}
    srv = scripted_server([{"tool_calls": [{"name": "submit_plan", "arguments": plan}]}])
    saved = tmp_path / "plan.json"
    planned = run_cli(["plan", "add and note", "--mcp-config", str(config), "--save", str(saved), "--json"],
                      env=cli_env(srv))
    assert planned.returncode == 0, planned.stderr
    assert "math__add" in srv.requests[0]["messages"][0]["content"]  # the planner was told about the MCP tools
    executed = run_cli(["execute", str(saved), "--mcp-config", str(config), "--json"], env=cli_env())
    assert executed.returncode == 0, executed.stderr
    trace = json.loads(executed.stdout)["trace"]
    assert [(t["id"], t["status"]) for t in trace] == [("sum", "ok"), ("keep", "ok")]
    assert (tmp_path / "notes.txt").read_text() == "sum is 9\n"


def test_chat_offers_the_mcp_tools_on_every_turn(scripted_server, workspace, tmp_path):
    config = write_config(tmp_path, {"math": stdio_server(tmp_path)})
    srv = scripted_server([tool_call("math__add", {"a": 1, "b": 1}), echo_last_tool,
                           tool_call("math__add", {"a": 2, "b": 2}), echo_last_tool])
    chat = run_cli(["chat", "--mcp-config", str(config), "--workspace", str(workspace)], env=cli_env(srv),
                   input_text="1+1?\n2+2?\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.splitlines() == ["tool said: 2", "tool said: 4"]
    assert len(pids_of(tmp_path)) == 1  # one session (one server process) served both turns
