"""`smart-agent run` and the provider's prompt cache, in a separate process against the scripted
server (chat completions and the Responses API with previous_response_id state; cached_tokens as
OpenAI reports them): --responses-api with two-phase reasoning, one prompt_cache_key per thread,
and a long run's cached tokens, cost and prefix reuse (docs/cost.md)."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark_module, cli_env, run_cli

from smart_agent.history.transcript import SUMMARY_SYSTEM_PROMPT
from smart_agent.models.prompt_cache import thread_cache_key
from smart_agent.nodes.reasoning import REASONING
from smart_agent.testing.scripted_server import last_tool_message, text, tool_call

make_workspace = benchmark_module("context_bench").make_workspace


def is_summary_request(req) -> bool:
    first = (req.get("messages") or [{}])[0]
    return str(first.get("content", "")).startswith(SUMMARY_SYSTEM_PROMPT[:40])


def test_two_phase_on_the_responses_api_sends_only_chained_responses_requests(scripted_server, workspace):
    srv = scripted_server([
        tool_call(REASONING, {"situation": "I must multiply.", "plan": ["Use calculator on 6*7"], "done": False}),
        tool_call("calculator", {"expression": "6*7"}),
        tool_call(REASONING, {"situation": "The product is 42.", "plan": [], "done": True}),
        text("6*7 = 42"),
    ])
    res = run_cli(["run", "What is 6*7?", "--json", "--reasoning", "two-phase", "--responses-api", "--workspace",
                   str(workspace), "--tools", "calculator"], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["answer"] == "6*7 = 42" and out["status"] == "completed"
    assert srv.request_paths == ["/responses"] * 4
    previous = [r.get("previous_response_id") for r in srv.requests]
    assert previous == [None, srv.response_ids[0], None, srv.response_ids[2]]
    assert [i["type"] for i in srv.requests[1]["input"]] == ["function_call_output"]
    assert out["usage"]["model_calls"] == 4


def test_two_threads_each_send_one_prompt_cache_key_on_every_request(scripted_server, workspace):
    srv = scripted_server(
        responder=lambda req: text("2") if last_tool_message(req) else tool_call("calculator", {"expression": "1+1"})
    )
    for thread in ("cost-a", "cost-b"):
        res = run_cli(["run", "Add 1 and 1.", "--json", "--thread", thread, "--workspace", str(workspace),
                       "--tools", "calculator"], env=cli_env(srv))
        assert res.returncode == 0, res.stderr
    keys = [r.get("prompt_cache_key") for r in srv.requests]
    assert len(keys) == 4 and all(keys) and set(keys) == {thread_cache_key("cost-a"), thread_cache_key("cost-b")}
    assert keys[0] == keys[1] != keys[2] == keys[3] and not any("cost-" in k for k in keys)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_long_run_of_20kb_reads_counts_the_cached_tokens_prices_them_and_reuses_the_prefix(
    scripted_server, workspace, tmp_path, api
):
    calls = 30
    make_workspace(workspace, calls, 20_000)

    def respond(req):
        if is_summary_request(req):  # (a model-written summary: not expected, the digest suffices)
            return text("Summary: parts read so far.")
        reads = sum(1 for r in srv.requests[:-1] if r.get("tools"))  # every earlier turn read a part
        if reads < calls:
            return tool_call("read_file", {"path": f"part{reads:02d}.txt"}, content=f"Reading part {reads}.")
        return text(f"Read all {calls} parts.")

    srv = scripted_server(responder=respond)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:scripted-model": {"input": 1.0, "output": 1.0, "cached_input": 0.1}}))
    flags = ["--responses-api"] if api == "responses" else []
    res = run_cli(["run", f"Read part00.txt to part{calls - 1:02d}.txt and report.", "--json", "--context-tokens",
                   "8000", "--workspace", str(workspace), "--tools", "read_file", "--max-tool-calls", "40", *flags],
                  env=cli_env(srv, SMART_AGENT_PRICES=str(prices)), timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["answer"].startswith(f"Read all {calls} parts")
    reported = srv.reported_usage
    prompt = sum(u["prompt_tokens"] for u in reported)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in reported)
    completion = sum(u["completion_tokens"] for u in reported)
    usage = out["usage"]
    assert usage["model_calls"] == len(reported) and usage["input_tokens"] == prompt
    assert usage["cache_read_tokens"] == cached > 0 and usage["cache_write_tokens"] == 0
    assert usage["cost_usd"] == pytest.approx(((prompt - cached) * 1.0 + cached * 0.1 + completion * 1.0) / 1e6)
    assert sum(srv.shared_prefix_tokens) / prompt >= 0.90  # prefix reuse
    assert all(u["prompt_tokens"] <= 8000 for u in reported)  # within the budget, every request
    assert set(srv.request_paths) == {"/responses" if api == "responses" else "/chat/completions"}
    assert len({r.get("prompt_cache_key") for r in srv.requests}) == 1
    if api == "responses":  # consecutive turns chain (between compactions)
        assert sum(1 for r in srv.requests if r.get("previous_response_id")) >= calls // 2


def test_a_threads_runs_are_summed_in_thread_usage_and_threads_show(scripted_server, workspace, tmp_path):
    """Per thread: `--json`'s thread_usage holds every run of the thread (the cached tokens the
    server reported too), and `threads show` / `threads export` say the same."""
    srv = scripted_server(  # each run: a calculator call, then the answer
        responder=lambda req: text("2") if req["messages"][-1]["role"] == "tool"
        else tool_call("calculator", {"expression": "1+1"})
    )
    env = cli_env(srv, SMART_AGENT_HOME=str(tmp_path / "home"))
    outs = []
    for task in ("Add 1 and 1.", "Again: add 1 and 1."):
        # (every tool on offer: a prompt past the 1024 tokens a cache starts at)
        res = run_cli(["run", task, "--json", "--thread", "sum-t", "--workspace", str(workspace)], env=env)
        assert res.returncode == 0, res.stderr
        outs.append(json.loads(res.stdout))
    reported = srv.reported_usage
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in reported)
    assert cached > 0 and len(reported) == 4
    first, second = outs
    assert first["thread_usage"] == first["usage"] and second["usage"]["model_calls"] == 2
    total = second["thread_usage"]
    assert total["model_calls"] == 4 and total["input_tokens"] == sum(u["prompt_tokens"] for u in reported)
    assert total["cache_read_tokens"] == cached
    assert total["cache_read_tokens"] == first["usage"]["cache_read_tokens"] + second["usage"]["cache_read_tokens"]
    shown = run_cli(["threads", "show", "sum-t"], env=env)
    assert shown.returncode == 0 and f"used by its runs: 4 model calls · {total['total_tokens']:,} tokens " \
        f"({cached:,} cached)" in shown.stdout, shown.stdout
    exported = json.loads(run_cli(["threads", "export", "sum-t"], env=env).stdout)
    assert exported["usage"]["cache_read_tokens"] == cached and exported["usage"]["model_calls"] == 4
