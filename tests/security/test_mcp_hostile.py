"""Attack: a hostile MCP server over stdio (tests/mcp_hostile_server.py, JSON-RPC spoken by
hand) against tools/mcp.py and its transport (tools/mcp_stdio.py).

Before: every malformed, deeply nested or lone-surrogate line printed a pydantic traceback;
a malformed reply left its call waiting for the whole tool timeout; a server's JSON-RPC error
-32000 was reported as "server is gone"; a malformed result as "Invalid arguments"; a 50 MB
tool list overran its start timeout; the server's stderr landed among the CLI's event lines.
Now each is one line (a tool error the model reads, or the server's start error), at once;
the server's stderr goes to ``<data folder>/logs/mcp-<server>.log``."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env, run_cli
from mcp_support import alive, pids_of, write_config

from smart_agent.testing.scripted_server import last_tool_message, text, tool_call, tool_messages
from smart_agent.tools.invoke import run_tool
from smart_agent.tools.mcp import mcp_tools
from smart_agent.tools.mcp_config import parse_mcp_servers
from smart_agent.tools.mcp_stdio import LOG_MAX_BYTES
from smart_agent.tools.registry import ToolRegistry

pytestmark = pytest.mark.graph

HOSTILE = Path(__file__).resolve().parents[1] / "mcp_hostile_server.py"
# Far above how long any answer takes: a call that fails by this timeout waited for it.
CALL_TIMEOUT_S = 60


def hostile(tmp_path: Path, mode: str = "", **extra) -> dict:
    args = [str(HOSTILE), mode] if mode else [str(HOSTILE)]
    return {"command": sys.executable, "args": args, "env": {"MCP_PID_FILE": str(tmp_path / "h.pid")},
            "timeout_s": CALL_TIMEOUT_S, **extra}


def servers(spec: dict):
    return parse_mcp_servers(spec, "test")


async def call(mcp, tool: str, args: dict | None = None):
    return await run_tool(mcp.registry.get(f"h__{tool}"), args or {}, call_id="c1", timeout_s=CALL_TIMEOUT_S)


def log_file(home: Path) -> Path:
    return home / "logs" / "mcp-h.log"


def tracebacks(caplog) -> list[str]:
    """Records of the MCP client a user would see as tracebacks or warnings (mcp's parse errors
    were both): its loggers, the root logger it also writes to, smart-agent's."""
    ours = [r for r in caplog.records if r.name.startswith(("mcp", "smart_agent", "langchain_mcp")) or r.name == "root"]
    return [r.getMessage() for r in ours if r.exc_info or r.levelno >= logging.WARNING]


@pytest.mark.parametrize(("tool", "why"), [
    ("truncated", "sent a malformed reply: not valid JSON (Unterminated string"),
    ("bad_jsonrpc", "sent a malformed reply: not a JSON-RPC message ("),
    ("nested", "sent a malformed reply: JSON nested too deeply"),
    ("huge_reply", "sent a malformed reply: a message of 50000"),
])
async def test_a_malformed_reply_fails_its_call_at_once_with_one_line(tmp_path, caplog, tool, why):
    async with mcp_tools(servers({"h": hostile(tmp_path)}), registry=ToolRegistry()) as mcp:
        out = await call(mcp, tool)
        after = await call(mcp, "echo", {"text": "still here"})
    assert not out.ok and out.error == "McpProtocolError"  # not "timeout" after CALL_TIMEOUT_S
    assert out.content.startswith(f"Tool 'h__{tool}' failed: MCP server 'h' {why}") and "\n" not in out.content
    assert after.ok and after.content == "still here"  # the session goes on
    assert tracebacks(caplog) == []


async def test_a_lone_surrogate_in_a_reply_is_replaced(tmp_path, caplog):
    async with mcp_tools(servers({"h": hostile(tmp_path)}), registry=ToolRegistry()) as mcp:
        out = await call(mcp, "surrogate")
    assert out.ok and out.content == "half \ufffd a pair"
    assert tracebacks(caplog) == []


async def test_a_json_rpc_error_is_reported_with_its_code_not_as_a_gone_server(tmp_path):
    async with mcp_tools(servers({"h": hostile(tmp_path)}), registry=ToolRegistry()) as mcp:
        out = await call(mcp, "rpc_error")
        after = await call(mcp, "echo", {"text": "alive"})
    assert out.content == "Tool 'h__rpc_error' failed: MCP server 'h' answered with JSON-RPC error -32000: database " \
                          "unavailable"
    assert after.ok and after.content == "alive"


async def test_a_malformed_result_is_reported_as_such_not_as_invalid_arguments(tmp_path):
    async with mcp_tools(servers({"h": hostile(tmp_path)}), registry=ToolRegistry()) as mcp:
        out = await call(mcp, "bad_result")
    assert out.error == "McpProtocolError" and "Invalid arguments" not in out.content
    assert out.content == "Tool 'h__bad_result' failed: MCP server 'h' sent a malformed result: content: Input " \
                          "should be a valid list"


async def test_stdout_noise_and_stderr_go_to_the_servers_log_not_the_terminal(tmp_path, isolated_home, capfd):
    async with mcp_tools(servers({"h": hostile(tmp_path)}), registry=ToolRegistry()) as mcp:
        noise = await call(mcp, "noise")
        logged = await call(mcp, "stderr")
    assert noise.ok and noise.content == "after the noise"
    assert logged.ok and logged.content == "logged"
    captured = capfd.readouterr()
    assert "hostile server log line" not in captured.err + captured.out
    log = log_file(isolated_home).read_text()
    assert "hostile server log line 0\nhostile server log line 1\nhostile server log line 2\n" in log
    assert "ignored a line that is not a JSON-RPC message: this is not JSON {{{" in log


async def test_a_stderr_flood_is_drained_and_the_log_bounded(tmp_path, isolated_home):
    async with mcp_tools(servers({"h": hostile(tmp_path)}), registry=ToolRegistry()) as mcp:
        out = await call(mcp, "stderr_flood")
    assert out.ok and out.content == "flooded"  # (the server never blocked on a full pipe)
    size = log_file(isolated_home).stat().st_size
    assert LOG_MAX_BYTES <= size < LOG_MAX_BYTES + 1000  # 12 MB written, 10 MB kept


async def test_a_server_that_dies_mid_call_is_gone_at_once(tmp_path):
    async with mcp_tools(servers({"h": hostile(tmp_path)}), registry=ToolRegistry()) as mcp:
        died = await call(mcp, "die")
        after = await call(mcp, "echo", {"text": "x"})
    for out in (died, after):
        assert out.error == "McpServerGone" and "MCP server 'h' is gone" in out.content


@pytest.mark.parametrize(("mode", "why"), [
    ("huge_list", "it sent a malformed reply: a message of 50000"),
    ("endless_pages", "it lists more than 1000 tools"),
    ("garbage_at_start", "it sent a malformed message: not valid JSON ("),
])
async def test_a_hostile_tool_list_or_handshake_is_one_start_error(tmp_path, isolated_home, caplog, mode, why):
    seen: list[dict] = []
    spec = hostile(tmp_path, mode, start_timeout_s=60)
    async with mcp_tools(servers({"h": spec}), registry=ToolRegistry(), on_event=seen.append) as mcp:
        assert not mcp.tools
        [pid] = pids_of(tmp_path, "h")
        assert not alive(pid)  # ended with its start, not at the end of the run
    [event] = seen
    assert event["error"].startswith(f"MCP server 'h' failed to start: {why}") and "\n" not in event["error"]
    assert event["error"].endswith(f"(its log: {log_file(isolated_home)}); its tools are off")
    assert tracebacks(caplog) == []


async def test_the_start_timeout_bounds_a_tool_list_that_never_ends(tmp_path):
    # The tool list trickles in forever. The start timeout must bound the whole start: before,
    # the session was then given CLOSE_TIMEOUT_S (10 s) more to close.
    seen: list[dict] = []
    began = time.monotonic()
    spec = hostile(tmp_path, "slow_list", start_timeout_s=1)
    async with mcp_tools(servers({"h": spec}), registry=ToolRegistry(), on_event=seen.append) as mcp:
        elapsed = time.monotonic() - began
        [pid] = pids_of(tmp_path, "h")
        assert not alive(pid) and not mcp.tools
    assert [e["error"].split(" (its log")[0] for e in seen] == ["MCP server 'h' did not start within 1 s"]
    assert elapsed < 6  # (1 s, the process start and its kill; generous for a loaded machine)


@pytest.mark.e2e
def test_cli_run_with_a_hostile_server_keeps_its_output_off_the_terminal(scripted_server, workspace, tmp_path):
    config = write_config(tmp_path, {"h": hostile(tmp_path)})
    srv = scripted_server([
        tool_call("h__stderr", {}), tool_call("h__nested", {}), tool_call("h__rpc_error", {}),
        lambda req: text(f"{len(tool_messages(req))} results, the last: {last_tool_message(req)}"),
    ])
    env = cli_env(srv)
    res = run_cli(["run", "go", "--json", "--workspace", str(workspace), "--mcp-config", str(config)], env=env)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "hostile server log line" not in res.stderr + res.stdout
    assert "validation error" not in res.stderr
    out = json.loads(res.stdout)
    assert out["answer"] == ("3 results, the last: Tool 'h__rpc_error' failed: MCP server 'h' answered with "
                             "JSON-RPC error -32000: database unavailable")
    nested = tool_messages(srv.requests[3])[1]["content"]
    assert nested == "Tool 'h__nested' failed: MCP server 'h' sent a malformed reply: JSON nested too deeply"
    assert "hostile server log line 2" in (Path(env["SMART_AGENT_HOME"]) / "logs" / "mcp-h.log").read_text()
