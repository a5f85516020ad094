"""`--tool-call-limit` (ToolCallLimitMiddleware's semantics as a setting) through the CLI, the real
OpenAI client and the scripted server: a run limit, a thread limit across two runs of a thread,
``exit=end`` and a bad limit."""

from __future__ import annotations

import json

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def calculating(*expressions):
    """A model that calls the calculator once per expression, a turn each, then says what it read."""
    return [*(tool_call("calculator", {"expression": e}) for e in expressions),
            lambda req: text("results: " + " | ".join(tool_results(req)))]  # fmt: skip


def test_a_run_limit_refuses_the_second_call(scripted_server):
    srv = scripted_server(calculating("2+2", "3+3"))
    proc = run_cli(["run", "add", "--tool-call-limit", "calculator:run=1", "--json"], env=cli_env(srv))
    assert proc.returncode == 0, proc.stderr
    results = tool_results(srv.requests[-1])
    assert results == ["4", "Tool call limit exceeded. Do not call 'calculator' again."]
    assert json.loads(proc.stdout)["answer"].startswith("results: 4 | Tool call limit")


def test_a_thread_limit_holds_across_the_threads_runs(scripted_server):
    srv = scripted_server([*calculating("1+1")[:1], text("two"), tool_call("calculator", {"expression": "2+2"}),
                           lambda req: text("then " + tool_results(req)[-1])])  # fmt: skip
    env = cli_env(srv)
    flags = ["--tool-call-limit", "thread=1", "--thread", "t-limit", "--json"]
    first = run_cli(["run", "one", *flags], env=env)
    assert first.returncode == 0 and json.loads(first.stdout)["answer"] == "two", first.stderr
    second = run_cli(["run", "another", *flags], env=env)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["answer"] == "then Tool call limit exceeded. Do not make additional tool calls."


def test_exit_end_stops_the_run_with_the_reason(scripted_server):
    srv = scripted_server(calculating("2+2", "3+3"))
    proc = run_cli(["run", "add", "--tool-call-limit", "calculator:run=1/exit=end"], env=cli_env(srv))
    assert proc.returncode == 0, proc.stderr
    assert len(srv.requests) == 2  # no model call after the limit
    assert "⊘ tool-call limit of calculator: 1 call(s) not run; the run stops" in proc.stdout
    assert "'calculator' tool call limit reached: run limit exceeded (2/1 calls)." in proc.stdout


def test_a_bad_limit_is_one_line_and_exit_2(scripted_server):
    proc = run_cli(["run", "add", "--tool-call-limit", "calculator:run=0"], env=cli_env(scripted_server([])))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "run must be a whole number of at least 1" in proc.stderr
