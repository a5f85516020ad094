"""Attack: a planner run killed mid-plan and run again with the same CLI command on the
same thread repeated the steps that had finished (Python's ``ainvoke(None)`` and
``smart-agent execute --thread`` did not).

A real CLI process is SIGKILLed while its second step runs; plugin tools write one line
per execution to a marker file, which is all the test counts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

from security.planner_budget_support import executions, plugin_env

pytestmark = pytest.mark.e2e

STARTUP_S = 60  # interpreter and LangGraph imports on a loaded 2-core machine

PLAN = {"steps": [
    {"id": "first", "tool": "count", "args": {"label": "first"}},
    {"id": "second", "tool": "slow", "args": {"label": "second", "seconds": 2}, "depends_on": ["first"]},
    {"id": "third", "tool": "count", "args": {"label": "third"}, "depends_on": ["second"]},
]}


def answer_every_request(request):
    """A planning request (submit_plan offered) gets the plan; a synthesis gets text."""
    if any(t["function"]["name"] == "submit_plan" for t in request.get("tools") or []):
        return {"tool_calls": [{"name": "submit_plan", "arguments": PLAN}]}
    return {"content": "all three done"}


def cli_command() -> list[str]:
    exe = Path(sys.executable).with_name("smart-agent")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "smart_agent.cli"]


def test_a_killed_planner_run_resumes_without_repeating_finished_steps(scripted_server, tmp_path, isolated_home):
    server = scripted_server(responder=answer_every_request)
    env, log = plugin_env(server, tmp_path, isolated_home)
    command = ["run", "--graph", "planner", "--thread", "T1", "--json", "count slowly"]

    proc = subprocess.Popen(cli_command() + command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + STARTUP_S
        while "slow:second" not in executions(log):  # "first" finished and was checkpointed
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before its second step started"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert executions(log) == ["count:first", "slow:second"]

    other = run_cli(["run", "--graph", "planner", "--thread", "T1", "something else"], env=env)
    assert other.returncode == 2
    assert "unfinished planner run for another task ('count slowly')" in other.stderr
    assert executions(log) == ["count:first", "slow:second"]  # the refusal ran nothing

    again = run_cli(command, env=env)

    assert again.returncode == 0, again.stderr
    assert "resuming the unfinished planner run on thread T1 (1 finished step(s)" in again.stderr
    # "first" ran once; only the step that was cut off runs again, then the rest.
    assert executions(log) == ["count:first", "slow:second", "slow:second", "count:third"]
    out = json.loads(again.stdout)
    assert out["answer"] == "all three done" and out["tool_calls_made"] == 3
    planning = [r for r in server.requests if any(t["function"]["name"] == "submit_plan" for t in r.get("tools") or [])]
    assert len(planning) == 1  # the resumed run did not plan again
