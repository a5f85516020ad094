"""``smart-agent threads list|show|export|delete`` on the threads earlier CLI runs made, on
SQLite and on a real PostgreSQL (pgserver): a deleted thread's history is gone on the next run."""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, fresh_database, run_cli

from smart_agent.testing.scripted_server import message_text, text, tool_call

pytestmark = pytest.mark.e2e


def _user_lines(req: dict) -> list[str]:
    return [message_text(m.get("content")) for m in req["messages"] if m["role"] == "user"]


def _sessions_round_trip(srv, env: dict) -> None:
    srv.reset([tool_call("calculator", {"expression": "6*7"}), text("It is 42.")])
    res = run_cli(["run", "What is 6*7?\nThanks.", "--thread", "t-calc"], env=env)
    assert res.returncode == 0, res.stderr
    srv.reset([text("Hello Ada."), text("You are Ada.")])
    res = run_cli(["chat", "--thread", "t-chat"], env=env, input_text="I am Ada\nWho am I?\n")
    assert res.returncode == 0, res.stderr

    res = run_cli(["threads", "list", "--json"], env=env)
    assert res.returncode == 0, res.stderr
    rows = {r["thread_id"]: r for r in json.loads(res.stdout)}
    assert set(rows) == {"t-calc", "t-chat"}
    assert rows["t-calc"]["graph"] == "agent" and rows["t-chat"]["graph"] == "agent"
    assert rows["t-calc"]["first_user_line"] == "What is 6*7?"  # the first line only
    assert rows["t-chat"]["first_user_line"] == "I am Ada"
    assert rows["t-calc"]["messages"] == 4  # user, tool call, tool result, answer
    assert rows["t-chat"]["messages"] == 4  # two turns
    assert rows["t-calc"]["updated_at"] and rows["t-chat"]["updated_at"] >= rows["t-calc"]["updated_at"]

    res = run_cli(["threads", "list"], env=env)
    assert res.returncode == 0 and "t-calc" in res.stdout and "What is 6*7?" in res.stdout
    assert res.stdout.index("t-chat") < res.stdout.index("t-calc")  # newest first

    res = run_cli(["threads", "show", "t-calc"], env=env)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "user: What is 6*7?" in lines and "assistant: It is 42." in lines
    assert any(line.strip().startswith("→ calculator(") and "6*7" in line for line in lines)
    assert any(line.strip().startswith("← calculator: 42") for line in lines)
    assert "{" not in lines[0]  # readable, not a JSON dump

    res = run_cli(["threads", "export", "t-chat"], env=env)
    assert res.returncode == 0, res.stderr
    exported = json.loads(res.stdout)
    assert exported["thread_id"] == "t-chat" and exported["graph"] == "agent"
    assert [(m["role"], m["content"]) for m in exported["conversation"]] == [
        ("user", "I am Ada"), ("assistant", "Hello Ada."), ("user", "Who am I?"), ("assistant", "You are Ada."),
    ]

    res = run_cli(["threads", "delete", "t-chat"], env=env)
    assert res.returncode == 0, res.stderr
    res = run_cli(["threads", "list", "--json"], env=env)
    assert [r["thread_id"] for r in json.loads(res.stdout)] == ["t-calc"]
    res = run_cli(["threads", "show", "t-chat"], env=env)
    assert res.returncode == 2 and "no thread 't-chat'" in res.stderr and res.stderr.count("\n") == 1
    res = run_cli(["threads", "delete", "t-chat"], env=env)
    assert res.returncode == 2  # bad input, as resume --thread with an unknown id

    srv.reset([text("Hello again.")])  # the next run of the deleted thread starts afresh
    res = run_cli(["run", "Who am I?", "--thread", "t-chat"], env=env)
    assert res.returncode == 0, res.stderr
    assert _user_lines(srv.requests[-1]) == ["Who am I?"]
    srv.reset([text("Still 42.")])  # the other thread kept its history
    res = run_cli(["run", "And again?", "--thread", "t-calc"], env=env)
    assert res.returncode == 0, res.stderr
    assert _user_lines(srv.requests[-1]) == ["What is 6*7?\nThanks.", "And again?"]


def test_threads_on_sqlite(scripted_server, workspace):
    srv = scripted_server()
    env = cli_env(srv, SMART_AGENT_WORKSPACE=str(workspace))
    res = run_cli(["threads", "list"], env=env)
    assert res.returncode == 0 and res.stdout.startswith("no threads yet")
    _sessions_round_trip(srv, env)


def test_threads_on_postgres(scripted_server, workspace, pg_url):
    url = fresh_database(pg_url)
    srv = scripted_server()
    _sessions_round_trip(srv, cli_env(srv, SMART_AGENT_WORKSPACE=str(workspace), SMART_AGENT_DB=url))


def test_demo_thread_is_listed_with_its_graph(tmp_path):
    env = cli_env()
    res = run_cli(["demo", "--thread", "d1", "--workspace", str(tmp_path / "ws")], env=env)
    assert res.returncode == 0, res.stderr
    res = run_cli(["threads", "list", "--json"], env=env)
    (row,) = json.loads(res.stdout)
    assert row["thread_id"] == "d1" and row["graph"] == "agent" and row["messages"] > 2
