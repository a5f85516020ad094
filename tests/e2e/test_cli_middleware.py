"""The CLI runs a user's LangChain middleware (``--middleware MODULE:ATTR``) and personal-data rules
(``--pii TYPE:STRATEGY``), and ``langgraph dev`` runs ``SMART_AGENT_MIDDLEWARE``: through the real
OpenAI client against the scripted server, in separate processes."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call

ADDRESS = "carol@example.com"

MODULE = textwrap.dedent('''
    """A user's middleware module: LangChain's own tool-call limit and a hook of the user's."""
    import os

    from langchain.agents.middleware import ToolCallLimitMiddleware, before_model


    @before_model
    def count_requests(state, runtime):
        with open(os.environ["HOOK_LOG"], "a") as log:
            log.write("model\\n")


    MIDDLEWARE = [ToolCallLimitMiddleware(tool_name="calculator", run_limit=1), count_requests]
    NOT_MIDDLEWARE = "a string"
''')


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.fixture
def user_module(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "mymodule.py").write_text(MODULE)
    return folder


def test_run_with_the_users_middleware_module(scripted_server, user_module, tmp_path):
    srv = scripted_server([
        tool_call("calculator", {"expression": "2+2"}),
        tool_call("calculator", {"expression": "3+3"}),
        lambda req: text("results: " + " | ".join(tool_results(req))),
    ])
    log = tmp_path / "hook.log"
    proc = run_cli(
        ["run", "Add things", "--middleware", "mymodule:MIDDLEWARE", "--json"],
        env=cli_env(srv, HOOK_LOG=log), cwd=user_module,
    )
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)["answer"]
    assert answer.startswith("results: 4 | ") and "limit" in answer  # one real result, the second refused
    assert log.read_text().count("model") == len(srv.requests) == 3  # one hook call per model request


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("nosuchmodule:MIDDLEWARE", "--middleware 'nosuchmodule:MIDDLEWARE': cannot import 'nosuchmodule'"),
        ("mymodule:MISSING", "module 'mymodule' has no attribute 'MISSING'"),
        ("mymodule:NOT_MIDDLEWARE", "is str, not a langchain AgentMiddleware"),
        ("mymodule", "expected MODULE:ATTR"),
    ],
)
def test_a_bad_middleware_reference_is_one_line_and_exit_2(scripted_server, user_module, ref, expected):
    srv = scripted_server([text("never")])
    proc = run_cli(["run", "hi", "--middleware", ref], env=cli_env(srv), cwd=user_module)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert srv.requests == []


def test_pii_keeps_the_address_from_the_model_and_the_thread(scripted_server, tmp_path):
    srv = scripted_server([lambda req: text("noted: " + req["messages"][-1]["content"])])
    env = cli_env(srv)
    proc = run_cli(["run", f"Write to {ADDRESS} tomorrow", "--pii", "email:redact", "--thread", "T"], env=env,
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ADDRESS not in json.dumps(srv.requests) and "[REDACTED_EMAIL]" in json.dumps(srv.requests)
    exported = run_cli(["threads", "export", "T"], env=env, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert ADDRESS not in exported.stdout and "[REDACTED_EMAIL]" in exported.stdout


def test_pii_block_refuses_the_input(scripted_server, tmp_path):
    srv = scripted_server([text("never")])
    proc = run_cli(["run", f"Mail {ADDRESS}", "--pii", "email:block"], env=cli_env(srv), cwd=tmp_path)
    assert proc.returncode == 2 and "email" in proc.stderr and srv.requests == []


def test_a_bad_pii_rule_is_one_line(scripted_server, tmp_path):
    srv = scripted_server([text("never")])
    proc = run_cli(["run", "hi", "--pii", "email:shred"], env=cli_env(srv), cwd=tmp_path)
    assert proc.returncode == 2 and "the strategy must be one of redact, mask, hash, block" in proc.stderr


@pytest.fixture
def dev_server_env(user_module, tmp_path):
    """``langgraph dev`` with the user's middleware (tests/langgraph_dev_support.py reads this)."""
    return {
        "SMART_AGENT_MIDDLEWARE": str(user_module / "mymodule.py") + ":MIDDLEWARE",
        "HOOK_LOG": str(tmp_path / "served-hook.log"),
    }


async def test_the_served_graphs_run_smart_agent_middleware(dev_server, tmp_path):
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset([
        tool_call("calculator", {"expression": "2+2"}),
        tool_call("calculator", {"expression": "3+3"}),
        lambda req: text("results: " + " | ".join(tool_results(req))),
    ])
    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "agent", input={"task": "Add"}, context={"model": "openai:scripted-model"}
    )
    assert result["answer"].startswith("results: 4 | ") and "limit" in result["answer"]
    assert (tmp_path / "served-hook.log").read_text().count("model") == len(srv.requests) == 3
