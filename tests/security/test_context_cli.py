"""Attack: bad command-line input. Each one ends the process with exit code 2 and one
line on stderr naming the flag, field or variable - no traceback, and no model request
(the scripted server records every request it gets)."""

from __future__ import annotations

import pytest
from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text

pytestmark = pytest.mark.e2e


def assert_usage_error(res, srv, *needles: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert srv.requests == [], "nothing may run on bad input"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            ["--max-tool-calls", "1" + "0" * 30],
            ["--max-tool-calls", "max_tool_calls must be an integer from 0 to 10000"],
        ),
        (["--max-tool-calls", "1" + "0" * 5000], ["--max-tool-calls", "must be an integer"]),
        (["--max-tool-calls", "10**30"], ["--max-tool-calls", "must be an integer (got '10**30')"]),
        (["--max-tool-calls", "-1"], ["max_tool_calls must be an integer from 0 to 10000"]),
        (["--max-parallel-tools", "0"], ["max_parallel_tools must be an integer from 1 to 64"]),
        (
            ["--context-tokens", "99999999999"],
            ["--context-tokens", "context_token_limit must be an integer from 1000 to 10000000"],
        ),
        (["--archive-chars", "-1"], ["--archive-chars", "archive_threshold_chars"]),
        (["--max-output-retries", "1000"], ["--max-output-retries", "max_output_retries"]),
    ],
)
def test_numbers_out_of_bounds_are_one_line_usage_errors(scripted_server, workspace, args, needles):
    srv = scripted_server([text("ran anyway")])
    res = run_cli(["run", "task", "--workspace", str(workspace), *args], env=cli_env(srv))
    assert_usage_error(res, srv, *needles)


def test_a_workspace_that_does_not_exist_is_refused(scripted_server, tmp_path):
    srv = scripted_server([text("ran anyway")])
    missing = tmp_path / "no" / "such"
    res = run_cli(["run", "task", "--workspace", str(missing)], env=cli_env(srv))
    assert_usage_error(res, srv, "--workspace", "does not exist")
    assert not missing.exists()


def test_a_workspace_that_is_a_file_is_refused(scripted_server, tmp_path):
    srv = scripted_server([text("ran anyway")])
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    res = run_cli(["run", "task", "--workspace", str(a_file)], env=cli_env(srv))
    assert_usage_error(res, srv, "--workspace", "is not a directory")


def test_unknown_tools_are_listed_with_the_known_ones(scripted_server, workspace):
    srv = scripted_server([text("ran anyway")])
    res = run_cli(["run", "task", "--workspace", str(workspace), "--tools", "calculator,nosuch"], env=cli_env(srv))
    assert_usage_error(res, srv, "unknown tool(s) 'nosuch'", "Known tools:", "calculator", "read_file")


def test_a_task_that_is_not_utf8_is_refused_not_replaced(scripted_server, workspace):
    srv = scripted_server([text("ran anyway")])
    # argv is bytes on POSIX: b"\xff" reaches Python as a lone surrogate.
    res = run_cli(["run", b"what is caf\xe9 \xff?", "--workspace", str(workspace)], env=cli_env(srv))
    assert_usage_error(res, srv, "the task is not valid UTF-8")


def test_text_flags_with_undecodable_bytes_are_refused(scripted_server, workspace):
    srv = scripted_server([text("ran anyway")])
    res = run_cli(["run", "task", "--workspace", str(workspace), "--system-prompt", b"be \xff"], env=cli_env(srv))
    assert_usage_error(res, srv, "system_prompt is not valid UTF-8")


@pytest.mark.parametrize(
    ("variable", "raw", "needle"),
    [
        ("SMART_AGENT_TOOL_TIMEOUT_S", "nan", "SMART_AGENT_TOOL_TIMEOUT_S must be a finite number (got 'nan')"),
        (
            "SMART_AGENT_MAX_TOOL_CALLS",
            "1" + "0" * 30,
            "SMART_AGENT_MAX_TOOL_CALLS: max_tool_calls must be an integer from 0 to 10000",
        ),
        ("SMART_AGENT_ALLOW_PRIVATE_NETWORK", "maybe", "SMART_AGENT_ALLOW_PRIVATE_NETWORK must be true or false"),
        ("SMART_AGENT_CONTEXT_TOKEN_LIMIT", "lots", "SMART_AGENT_CONTEXT_TOKEN_LIMIT must be an integer"),
    ],
)
def test_bad_environment_values_name_the_variable(scripted_server, workspace, variable, raw, needle):
    srv = scripted_server([text("ran anyway")])
    res = run_cli(["run", "task", "--workspace", str(workspace)], env=cli_env(srv, **{variable: raw}))
    assert_usage_error(res, srv, needle)


def test_good_input_still_runs(scripted_server, workspace):
    srv = scripted_server([text("fine")])
    res = run_cli(
        [
            "run",
            "café ☕",
            "--workspace",
            str(workspace),
            "--max-tool-calls",
            "10000",
            "--tools",
            "calculator",
            "--quiet",
        ],
        env=cli_env(srv, SMART_AGENT_TOOL_TIMEOUT_S="2.5", SMART_AGENT_ALLOW_PRIVATE_NETWORK="OFF"),
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "fine"
    assert len(srv.requests) == 1 and srv.requests[0]["messages"][-1]["content"] == "café ☕"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["plan", b"caf\xe9"], ["the task is not valid UTF-8"]),
        (["plan", "task", "--tools", "nosuch"], ["unknown tool(s) 'nosuch'", "Known tools:", "calculator"]),
        (
            ["plan", "task", "--max-plan-attempts", "1" + "0" * 30],
            ["max_plan_attempts must be an integer from 1 to 100"],
        ),
        (["execute", "-", "--workspace", "/no/such/folder"], ["--workspace", "does not exist"]),
        (["execute", "-", "--max-tool-calls", "1" + "0" * 30], ["max_tool_calls must be an integer from 0 to 10000"]),
    ],
)
def test_plan_and_execute_refuse_the_same_bad_input(scripted_server, args, needles):
    srv = scripted_server([text("ran anyway")])
    plan = '{"steps": [{"id": "s1", "tool": "calculator", "args": {"expression": "1+1"}}]}'
    res = run_cli(args, env=cli_env(srv), input_text=plan)
    assert_usage_error(res, srv, *needles)
