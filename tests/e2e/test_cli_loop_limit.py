"""`smart-agent run --loop-limit` in a separate process, against a scripted server."""

import json

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call


def repeats_forever(req):
    return tool_call("calculator", {"expression": "1+1"}) if req.get("tools") else text("final: 2")


def test_run_loop_limit_stops_a_repeating_model_with_an_answer(scripted_server, workspace):
    srv = scripted_server(responder=repeats_forever)
    res = run_cli(["run", "loop forever", "--loop-limit", "2", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert "final: 2" in res.stdout
    lines = [line for line in res.stdout.splitlines() if "loop detected" in line]
    assert lines == [
        "  ! loop detected: calculator called 2 times in a row with the same arguments: the model is told so",
        "  ! loop detected: calculator called 3 times in a row with the same arguments: the next turn must answer",
    ]
    assert len(srv.requests) == 4 and "tools" not in srv.requests[-1]  # 3 calls, then an answer without tools


def test_run_json_loop_limit_counts_and_bad_value(scripted_server, workspace):
    srv = scripted_server(responder=repeats_forever)
    args = ["run", "loop forever", "--json", "--workspace", str(workspace)]
    res = run_cli([*args, "--loop-limit", "1"], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["answer"] == "final: 2" and out["tool_calls_made"] == 2
    bad = run_cli([*args, "--loop-limit", "-1"], env=cli_env(srv))
    assert bad.returncode == 2 and "--loop-limit" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
