"""`smart-agent run --max-model-calls / --max-tokens / --max-cost` in a separate process,
against the scripted OpenAI-compatible server (streamed replies carry usage only with
stream_options.include_usage, which the client sends)."""

import json

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call

USAGE = {"prompt_tokens": 100, "completion_tokens": 10}
PRICE = {"scripted-model": {"input": 100, "output": 1000}}  # USD per 1M tokens: $0.02 per call here


def loops_forever(req):
    if req.get("tools"):
        return {**tool_call("calculator", {"expression": "1+1"}), "usage": USAGE}
    return {**text("final: 2"), "usage": USAGE}


def run(srv, workspace, *flags, **env):
    args = ["run", "loop forever", "--json", "--workspace", str(workspace), "--tools", "calculator",
            "--loop-limit", "0", "--max-tool-calls", "100", *flags]
    return run_cli(args, env=cli_env(srv, **env))


def check_stopped(res, srv):
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    n = len(srv.requests)
    assert out["answer"] == "final: 2"
    assert all(srv.requests[i].get("tools") for i in range(n - 1)) and "tools" not in srv.requests[-1]
    # the usage the server reported, added up by the run
    assert out["usage"]["model_calls"] == n
    assert out["usage"]["input_tokens"] == 100 * n and out["usage"]["output_tokens"] == 10 * n
    assert out["usage"]["total_tokens"] == 110 * n
    return out, n


def test_max_model_calls_4_makes_exactly_4_requests_the_last_without_tools(scripted_server, workspace):
    srv = scripted_server(responder=loops_forever)
    res = run(srv, workspace, "--max-model-calls", "4")
    out, n = check_stopped(res, srv)
    assert n == 4 and out["tool_calls_made"] == 3
    assert "! budget: 3 of 4 model calls used: the next model call must answer" in res.stderr


def test_max_tokens_stops_the_loop(scripted_server, workspace):
    srv = scripted_server(responder=loops_forever)
    out, n = check_stopped(run(srv, workspace, "--max-tokens", "4000"), srv)
    assert 2 <= n < 30 and out["usage"]["total_tokens"] <= 4000


def test_max_cost_stops_the_loop_with_a_price_file(scripted_server, workspace, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICE))
    srv = scripted_server(responder=loops_forever)
    out, n = check_stopped(run(srv, workspace, "--max-cost", "1", SMART_AGENT_PRICES=str(prices)), srv)
    assert 2 <= n < 30 and abs(out["usage"]["cost_usd"] - 0.02 * n) < 1e-9 and out["usage"]["cost_usd"] <= 1


def test_max_cost_without_a_price_or_with_a_bad_value_is_one_line_exit_2(scripted_server, workspace, tmp_path):
    srv = scripted_server(responder=loops_forever)
    res = run(srv, workspace, "--max-cost", "1")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "no price for model 'openai:scripted-model'" in res.stderr and "SMART_AGENT_PRICES" in res.stderr
    bad_file = tmp_path / "bad.json"
    bad_file.write_text("{not json")
    res = run(srv, workspace, "--max-cost", "1", SMART_AGENT_PRICES=str(bad_file))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "SMART_AGENT_PRICES" in res.stderr
    for flag, value in (("--max-model-calls", "-1"), ("--max-tokens", "x"), ("--max-cost", "nan")):
        res = run(srv, workspace, flag, value)
        assert res.returncode == 2 and flag in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert srv.requests == []  # nothing reached the model


def test_the_cost_of_a_model_without_a_price_is_unknown_not_zero(scripted_server, workspace, tmp_path):
    srv = scripted_server(responder=loops_forever)
    unpriced = run(srv, workspace, "--max-model-calls", "2")
    assert unpriced.returncode == 0, unpriced.stderr
    assert json.loads(unpriced.stdout)["usage"]["cost_usd"] is None  # null, not a made-up 0.0
    args = ["run", "loop", "--workspace", str(workspace), "--tools", "calculator", "--max-model-calls", "2"]
    text_run = run_cli(args, env=cli_env(srv))
    assert text_run.stderr.strip().splitlines()[-1].endswith(" · 220 tokens · cost unknown)")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICE))
    priced = run_cli(args, env=cli_env(srv, SMART_AGENT_PRICES=str(prices)))
    assert priced.stderr.strip().splitlines()[-1].endswith(" · 220 tokens · $0.0400)")  # 2 calls at $0.02
