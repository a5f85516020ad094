"""Sync tool calls run on reused daemon threads (tools/executor.py): one thread per call in flight, not per call."""

from __future__ import annotations

import asyncio
import threading

from langchain_core.tools import tool

from smart_agent.tools.executor import ainvoke_tool, run_in_daemon_thread


async def test_calls_one_after_another_reuse_one_daemon_thread_named_after_the_tool():
    seen: list[tuple[threading.Thread, str, bool]] = []

    @tool
    def where(n: int) -> str:
        """Say which thread runs the call."""
        me = threading.current_thread()
        seen.append((me, me.name, me.daemon))  # the thread objects, kept: idents are reused
        return f"call {n}"

    before = set(threading.enumerate())
    results = [await ainvoke_tool(where, {"n": i}) for i in range(20)]

    assert results == [f"call {i}" for i in range(20)]
    started = {thread for thread, _name, _daemon in seen} - before
    assert len(started) <= 1, "a finished thread takes the next call"
    assert all(name.startswith("smart-agent-tool-where-") and daemon for _ident, name, daemon in seen)


async def test_calls_in_flight_together_each_get_a_thread_of_their_own():
    together = 12
    barrier = threading.Barrier(together, timeout=10)  # breaks unless all 12 run at once
    idents: list[int] = []

    def meet() -> int:
        idents.append(threading.get_ident())
        return barrier.wait()

    positions = await asyncio.gather(*(run_in_daemon_thread(meet) for _ in range(together)))

    assert sorted(positions) == list(range(together))
    assert len(set(idents)) == together


async def test_an_error_reaches_the_caller_and_the_thread_is_reused():
    before = set(threading.enumerate())
    threads: list[threading.Thread] = []

    def fail() -> None:
        threads.append(threading.current_thread())
        raise ValueError("bad input")

    for _ in range(3):
        try:
            await run_in_daemon_thread(fail)
        except ValueError as exc:
            assert str(exc) == "bad input"
        else:
            raise AssertionError("the error was not raised")
    assert len(set(threads) - before) <= 1


async def test_a_timeout_abandons_the_thread_and_a_result_in_time_cancels_the_timer():
    release = threading.Event()

    def stuck() -> str:
        release.wait(10)
        return "late"

    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        await run_in_daemon_thread(stuck, timeout_s=0.05)
    except TimeoutError:
        pass
    else:
        raise AssertionError("no TimeoutError")
    assert loop.time() - start < 5, "the caller does not wait for the thread"
    release.set()  # the abandoned call ends; its result is dropped

    assert await run_in_daemon_thread(lambda: "quick", timeout_s=30) == "quick"
    assert not [h for h in getattr(loop, "_scheduled", []) if not h.cancelled() and h.when() > loop.time() + 20]


async def test_a_sync_tools_result_message_is_built_where_the_tool_ran(monkeypatch):
    from smart_agent.tools import invoke
    from smart_agent.tools.invoke import ToolOutcome, run_tool

    built_on: list[str] = []
    to_message = ToolOutcome.to_message

    def recording(self: ToolOutcome):
        message = to_message(self)
        built_on.append(threading.current_thread().name)
        return message

    monkeypatch.setattr(invoke.ToolOutcome, "to_message", recording)

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    outcome = await run_tool(echo, {"text": "hi"}, call_id="c1")
    assert outcome.ok and outcome.content == "hi" and outcome.duration_s > 0
    assert len(built_on) == 1 and built_on[0].startswith("smart-agent-tool-echo-")  # built in the worker
    message = outcome.to_message()  # the node's call: the message built there, not a new one
    assert message is outcome.message and message.content == "hi" and message.tool_call_id == "c1"
    from smart_agent.models import tokens

    assert id(message) in tokens._message_json.entries  # and measured there, for the next request's size
    outcome.content += " (not retried)"  # a changed outcome gets a message that says what it says
    changed = outcome.to_message()
    assert changed is not message and changed.content == "hi (not retried)"

    @tool
    async def aecho(text: str) -> str:
        """Echo the text."""
        return text

    outcome = await run_tool(aecho, {"text": "yo"}, call_id="c2")  # an async tool: built on the loop
    assert outcome.to_message() is outcome.message and outcome.message.content == "yo"
