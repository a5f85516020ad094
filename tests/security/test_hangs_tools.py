"""Attack: a sync tool that never returns, and more parallel sync tools than the
default executor has threads.

Before: sync tools ran on the event loop's default executor. A timed-out call
kept its thread, and ``asyncio.run`` waits for that executor at shutdown, so the
CLI printed the answer and never exited; and the pool had min(32, cpus + 4) = 6
threads, so a 7th parallel call waited. Now each sync call runs in its own daemon
thread (tools/executor.py), for the agent loop and the planner alike."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading

import pytest
from conftest import cli_env, run_cli
from langchain_core.tools import tool

from smart_agent.testing.scripted_server import text, tool_call
from smart_agent.tools.invoke import run_tool

SLEEPY_PLUGIN = '''
import time
from langchain_core.tools import tool

@tool
def sleepy(seconds: int) -> str:
    """Sleep for the given number of seconds."""
    time.sleep(seconds)
    return "woke up"

TOOLS = [sleepy]
'''


@pytest.mark.e2e
def test_cli_exits_after_a_sync_tool_times_out(scripted_server, workspace, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "sleepy.py").write_text(SLEEPY_PLUGIN)
    srv = scripted_server([tool_call("sleepy", {"seconds": 3600}), text("gave up on sleepy")])
    env = cli_env(srv, SMART_AGENT_PLUGINS=plugins, SMART_AGENT_TOOL_TIMEOUT_S=1)
    try:
        # The tool sleeps an hour: the process must not wait for its thread.
        res = run_cli(["run", "nap", "--json", "--workspace", str(workspace)], env=env, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("the CLI did not exit after the tool timed out") from None
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["answer"] == "gave up on sleepy"
    assert out["tool_calls"][0]["name"] == "sleepy" and out["tool_calls"][0]["ok"] is False
    second = srv.requests[1]  # what the model was told
    (result,) = [m for m in second["messages"] if m["role"] == "tool"]
    assert result["content"] == "Tool 'sleepy' timed out after 1 s"


@pytest.mark.unit
def test_more_parallel_sync_tools_than_the_default_pool_run_at_once():
    parties = 8  # the default executor here has 6 threads
    barrier = threading.Barrier(parties, timeout=20)

    @tool
    def meet(n: int) -> str:
        """Wait until every parallel call has started."""
        barrier.wait()
        return f"met {n}"

    async def all_calls():
        calls = [run_tool(meet, {"n": i}, call_id=f"c{i}", timeout_s=30) for i in range(parties)]
        return await asyncio.gather(*calls)

    outcomes = asyncio.run(all_calls())
    assert [o.content for o in outcomes] == [f"met {i}" for i in range(parties)]
    assert all(o.ok for o in outcomes)


@pytest.mark.unit
def test_a_timed_out_sync_tool_leaves_only_a_daemon_thread():
    release = threading.Event()
    started = threading.Event()

    @tool
    def stuck() -> str:
        """Block until released."""
        started.set()
        release.wait(60)
        return "late"

    async def call():
        return await run_tool(stuck, {}, call_id="c1", timeout_s=0.5)

    try:
        outcome = asyncio.run(call())  # returns: asyncio.run no longer waits for the thread
        assert started.is_set()
        assert (outcome.ok, outcome.error) == (False, "timeout")
        (worker,) = [t for t in threading.enumerate() if t.name.startswith("smart-agent-tool-stuck")]
        assert worker.daemon and worker.is_alive()
    finally:
        release.set()
