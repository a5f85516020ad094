"""Attack: a model server that accepts the connection and never answers.

Before: no request timeout was set (the OpenAI client waits 600 s per attempt, 3
attempts), so the run hung. Now every request is bounded by ``model_timeout_s``
(``--model-timeout``) and retried at most ``model_max_retries`` times
(``--model-retries``); the CLI then prints one line and exits 1."""

from __future__ import annotations

import subprocess

import pytest
from conftest import cli_env, run_cli

from security.hostile_http import SilentServer
from smart_agent.config.context import Context
from smart_agent.models.chat import load_chat_model, model_options

TIMEOUT_S = 1.0
RETRIES = 1
STARTUP_S = 30  # interpreter, LangChain and LangGraph imports on a loaded 2-core machine


@pytest.mark.e2e
def test_cli_ends_with_one_line_when_the_model_server_never_answers(workspace):
    with SilentServer() as srv:
        env = cli_env(OPENAI_BASE_URL=f"{srv.url}/v1", OPENAI_API_KEY="k", SMART_AGENT_MODEL="openai:silent-model")
        args = ["run", "hello", "--quiet", "--workspace", str(workspace),
                "--model-timeout", str(TIMEOUT_S), "--model-retries", str(RETRIES)]  # fmt: skip
        try:
            res = run_cli(args, env=env, timeout=TIMEOUT_S * (RETRIES + 1) + 3 + STARTUP_S)
        except subprocess.TimeoutExpired:
            raise AssertionError("the run hung on a model server that never answers") from None
        connections = srv.connections
    assert connections == RETRIES + 1  # one request and exactly the configured retries
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("smart-agent: ModelTimeoutError: The model service at ")
    assert "did not answer in time for model 'openai:silent-model'" in line
    assert "--model-timeout" in line


@pytest.mark.unit
def test_run_settings_reach_the_model_client():
    ctx = Context(model="openai:m", model_timeout_s=7.5, model_max_retries=0)
    model = load_chat_model("openai:m", api_key="k", **model_options(ctx))
    assert (model.request_timeout, model.max_retries) == (7.5, 0)
    other = load_chat_model("openai:m", api_key="k", **model_options(Context(model="openai:m")))
    assert other is not model  # the cache key includes the limits
    assert (other.request_timeout, other.max_retries) == (120.0, 2)


@pytest.mark.graph
def test_a_silent_server_gets_one_request_and_max_retries_more():
    """The same through the Python API: a one-line ModelTimeoutError after 3 attempts."""
    import asyncio

    from smart_agent.models.chat import ModelTimeoutError, invoke_model

    with SilentServer() as srv:
        model = load_chat_model("openai:silent", api_key="k", base_url=f"{srv.url}/v1", timeout=0.5, max_retries=2)
        try:
            asyncio.run(asyncio.wait_for(invoke_model(model, [("user", "hi")], spec="openai:silent"), 30))
        except ModelTimeoutError as exc:
            message = str(exc)
        else:
            raise AssertionError("a model server that never answers produced a reply")
        connections = srv.connections
    assert connections == 3
    assert "did not answer in time for model 'openai:silent'" in message
