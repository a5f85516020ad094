"""Attack: the planner run from the CLI ignored --max-tool-calls (a 200-step plan ran,
retries were free) and `--json` said `tool_calls_made: 0`.

Real CLI processes, the real OpenAI client against the scripted server, plugin tools
that write one line per execution to a marker file (the count is taken from the file).
"""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from security.planner_budget_support import executions, plugin_env, submit

pytestmark = pytest.mark.e2e


def test_a_plan_larger_than_the_budget_is_refused_and_never_more_than_the_budget_runs(
    scripted_server, tmp_path, isolated_home
):
    huge = {"steps": [{"id": f"s{i}", "tool": "count", "args": {"label": f"s{i}"}} for i in range(200)]}
    small = {"steps": [{"id": f"t{i}", "tool": "count", "args": {"label": f"t{i}"}} for i in range(3)]}
    server = scripted_server([submit(huge), submit(small), "three counted"])
    env, log = plugin_env(server, tmp_path, isolated_home)

    proc = run_cli(["run", "--graph", "planner", "--max-tool-calls", "3", "--json", "count things"], env=env)

    assert proc.returncode == 0, proc.stderr
    assert sorted(executions(log)) == ["count:t0", "count:t1", "count:t2"]  # in parallel; none of the 200 ran
    out = json.loads(proc.stdout)
    assert out["tool_calls_made"] == 3 and out["answer"] == "three counted"
    refusal = server.requests[1]["messages"][-1]["content"]
    assert "budget: the plan has 200 steps but this run may make only 3 more tool call(s)" in refusal
    assert "every retry counts too" in refusal


def test_retries_count_against_the_budget_and_an_unpaid_step_does_not_run(scripted_server, tmp_path, isolated_home):
    plan = {"steps": [
        {"id": "flaky", "tool": "net", "args": {"label": "n"}, "retries": 5, "on_fail": "continue"},
        {"id": "after", "tool": "count", "args": {"label": "after"}, "on_fail": "continue"},
    ]}
    server = scripted_server([submit(plan), "reported"])
    env, log = plugin_env(server, tmp_path, isolated_home)

    # One step at a time: the retryable step takes the whole budget, the next has none left.
    proc = run_cli(
        ["run", "--graph", "planner", "--max-tool-calls", "3", "--max-parallel-tools", "1", "--json", "t"], env=env
    )

    assert proc.returncode == 0, proc.stderr
    assert executions(log) == ["net:n", "net:n", "net:n"]  # 1 attempt + 2 of its 5 retries; "after" never ran
    out = json.loads(proc.stdout)
    assert out["tool_calls_made"] == 3
    synthesis = server.requests[-1]["messages"][-1]["content"]
    assert "tool budget exhausted" in synthesis
