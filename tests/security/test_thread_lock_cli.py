"""Attack: two ``smart-agent run --thread SAME`` at once.

Before: both runs read the thread's latest checkpoint when they started and wrote
their own branch after it; both exited 0 and the thread's head was one of them, so
the other run's tool exchange and answer were gone from the thread. Now runs on one
thread hold ``thread_lock`` (a file lock for SQLite, an advisory lock for Postgres):
the second run waits, then starts from the first run's last checkpoint.

The scripted model makes the overlap certain on the old code: each run's first model
request waits (at most ``OVERLAP_WAIT_S``) until the other run's first request has
arrived too, which happens only when both runs are inside the thread at once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import message_text, text, tool_call

pytestmark = pytest.mark.e2e

OVERLAP_WAIT_S = 4.0
TASKS = {"A": ("task A: what is 2+3?", "2+3", "5"), "B": ("task B: what is 7*6?", "7*6", "42")}


class TwoRunModel:
    """Per run: one calculator call, then ``answer <run>: <tool result>``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first_requests: list[dict] = []
        self.waiting = 0
        self.both_in = threading.Event()  # two first requests waiting at once: the runs overlapped

    def __call__(self, req: dict) -> dict:
        msgs = req["messages"]
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        run = "A" if "task A" in message_text(msgs[last_user]["content"]) else "B"
        results = [m for m in msgs[last_user + 1:] if m["role"] == "tool"]
        if results:
            return text(f"answer {run}: {message_text(results[-1]['content'])}", delay_s=0.3)
        with self.lock:
            self.first_requests.append({"run": run, "messages": msgs})
            self.waiting += 1
            if self.waiting == 2:
                self.both_in.set()
        self.both_in.wait(OVERLAP_WAIT_S)
        with self.lock:
            self.waiting -= 1
        return tool_call("calculator", {"expression": TASKS[run][1]})


def _run_both(srv, workspace, thread: str, **env_extra) -> list[subprocess.CompletedProcess]:
    env = cli_env(srv, **env_extra)

    def one(run: str) -> subprocess.CompletedProcess:
        return run_cli(["run", TASKS[run][0], "--thread", thread, "--json", "--workspace", str(workspace)], env=env)

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, ["A", "B"]))


async def _thread_messages(thread: str, url: str | None = None) -> list:
    from smart_agent.graphs import get_builder
    from smart_agent.sessions.store import open_checkpointer

    async with open_checkpointer(url=url) as saver:
        graph = get_builder("agent")(checkpointer=saver)
        state = await graph.aget_state({"configurable": {"thread_id": thread}})
    return list(state.values.get("messages", []))


def _assert_both_turns_kept(procs, model: TwoRunModel, messages: list) -> None:
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
    answers = sorted(json.loads(p.stdout)["answer"] for p in procs)
    assert answers == ["answer A: 5", "answer B: 42"]

    humans = [m.content for m in messages if m.type == "human"]
    tool_results = sorted(m.content for m in messages if m.type == "tool")
    calls = sorted(c["args"]["expression"] for m in messages if m.type == "ai" for c in m.tool_calls)
    finals = sorted(m.content for m in messages if m.type == "ai" and not m.tool_calls)
    assert sorted(humans) == sorted(t for t, _, _ in TASKS.values()), humans
    assert calls == ["2+3", "7*6"] and tool_results == ["42", "5"]
    assert finals == answers

    # Serialized, not merely both present: the second run's first request already
    # carried the whole first turn, answer included.
    assert not model.both_in.is_set()
    first, second = model.first_requests
    seen = [message_text(m.get("content")) for m in second["messages"]]
    assert f"answer {first['run']}: {TASKS[first['run']][2]}" in seen


def test_two_runs_on_one_sqlite_thread_keep_both_turns(scripted_server, workspace):
    model = TwoRunModel()
    srv = scripted_server(responder=model)
    procs = _run_both(srv, workspace, "shared-thread")
    messages = asyncio.run(_thread_messages("shared-thread"))
    _assert_both_turns_kept(procs, model, messages)


def test_two_runs_on_one_postgres_thread_keep_both_turns(scripted_server, workspace, pg_url):
    model = TwoRunModel()
    srv = scripted_server(responder=model)
    procs = _run_both(srv, workspace, "shared-thread-pg", SMART_AGENT_DB=pg_url)
    messages = asyncio.run(_thread_messages("shared-thread-pg", url=pg_url))
    _assert_both_turns_kept(procs, model, messages)
