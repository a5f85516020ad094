"""Tool concurrency is the run's ``max_parallel_tools`` (``max_workers`` for the fleet's
workers), whatever the machine: sync tools (plugins included) are not capped by Python's
default executor (min(32, cpus + 4) threads, 6 on two cores), and ``browse_url`` (async,
httpx) needs no thread per call. Proved with counters of calls in flight and barriers, over
the real OpenAI client."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import pytest
from conftest import openai_model, run_graph
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from planner_support import SlowPages
from planner_support import run_graph as run_planner

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.fleet import build_fleet_graph
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM, SUBMIT_SUBTASKS
from smart_agent.testing.scripted_server import text, tool_call, tool_calls
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.executor import is_sync_tool
from smart_agent.tools.registry import ToolRegistry


class Meeting:
    """A sync tool ``meet(n)`` whose calls wait in groups of ``group`` at a barrier and
    record how many were in flight at most (a plugin's plain function, run in a thread)."""

    def __init__(self, group: int) -> None:
        self.barrier = threading.Barrier(group, timeout=20)
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def meet(self, n: int) -> str:
        """Meet the other calls."""
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            self.barrier.wait()  # too few at once: BrokenBarrierError, the call fails
        finally:
            with self.lock:
                self.now -= 1
        return f"met {n}"

    def registry(self) -> ToolRegistry:
        reg = ToolRegistry()
        reg.register(StructuredTool.from_function(func=self.meet, name="meet"))
        return reg


@pytest.mark.parametrize("limit", [8, 12])
async def test_the_agent_loop_runs_exactly_max_parallel_tools_sync_calls_at_once(scripted_server, workspace, limit):
    meeting = Meeting(limit)
    calls = 2 * limit  # two full groups; more than ``limit`` at once would let a group pass early
    srv = scripted_server([tool_calls([("meet", {"n": i}) for i in range(calls)]), text("everyone met")])
    graph = build_agent_graph(model=openai_model(srv), registry=meeting.registry())
    ctx = Context(model="openai:scripted-model", workspace=str(workspace), memory=False, max_parallel_tools=limit,
                  max_tool_calls_per_turn=calls, max_tool_calls=calls)
    final = await run_graph(graph, "meet", ctx)

    assert meeting.peak == limit
    assert [m.content for m in final["messages"] if isinstance(m, ToolMessage)] == [f"met {i}" for i in range(calls)]
    assert final["answer"] == "everyone met"


def meet_plan(steps: int) -> dict:
    return {"tool_calls": [{"name": "submit_plan", "arguments": {
        "steps": [{"id": f"m{i}", "tool": "meet", "args": {"n": i}} for i in range(steps)]}}]}  # fmt: skip


@pytest.mark.parametrize(("limit", "steps"), [(16, 16), (8, 16)])
async def test_the_planner_runs_exactly_max_parallel_tools_sync_steps_at_once(scripted_server, limit, steps):
    meeting = Meeting(limit)
    srv = scripted_server([meet_plan(steps), text("everyone met")])
    graph = build_planner_graph(model=openai_model(srv), registry=meeting.registry())
    ctx = Context(model="openai:scripted-model", memory=False, max_parallel_tools=limit)
    final, _events = await run_planner(graph, {"task": "meet"}, context=ctx)

    assert meeting.peak == limit
    assert {r["status"] for r in final["step_results"].values()} == {"ok"}
    assert final["answer"] == "everyone met"


async def test_sixteen_browse_url_steps_fetch_at_once_without_a_thread_each(scripted_server, tmp_path, monkeypatch):
    assert not is_sync_tool(default_registry(entry_points=False).get("browse_url"))
    monkeypatch.setattr(ThreadingHTTPServer, "request_queue_size", 64)  # 16 connects at once
    tool_threads: list[list[str]] = []
    earlier = {t.name for t in threading.enumerate()}  # a tool an earlier test abandoned may still run
    with SlowPages(delay_s=0.0, together=16) as pages:
        original = pages.httpd.RequestHandlerClass.do_GET

        def do_get(handler) -> None:  # the names of the tool threads while every page is requested
            tool_threads.append([t.name for t in threading.enumerate()
                                 if t.name.startswith("smart-agent-tool") and t.name not in earlier])  # fmt: skip
            original(handler)

        monkeypatch.setattr(pages.httpd.RequestHandlerClass, "do_GET", do_get)
        plan = {"steps": [{"id": f"p{i}", "tool": "browse_url", "args": {"url": pages.url(f"/page{i}")}}
                          for i in range(16)]}  # fmt: skip
        srv = scripted_server([{"tool_calls": [{"name": "submit_plan", "arguments": plan}]}, text("sixteen pages")])
        registry = default_registry(plugins_folder=tmp_path / "no-plugins", entry_points=False)
        graph = build_planner_graph(model=openai_model(srv), registry=registry)
        ctx = Context(model="openai:scripted-model", allow_private_network=True, memory=False, max_parallel_tools=16)
        final, _events = await run_planner(graph, {"task": "read the pages"}, context=ctx)

    assert pages.peak == 16, f"{pages.peak} requests in flight at most"
    assert {r["status"] for r in final["step_results"].values()} == {"ok"}
    assert len(tool_threads) == 16 and all(names == [] for names in tool_threads), tool_threads


async def test_eight_fleet_workers_run_their_sync_tool_calls_at_once(scripted_server):
    meeting = Meeting(8)  # more than the default executor's 6 threads

    def respond(req):
        tools = [t["function"]["name"] for t in req.get("tools") or []]
        if SUBMIT_SUBTASKS in tools:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": [f"Meet as number {i}" for i in range(8)]})
        if req["messages"][0]["content"] == AGGREGATE_SYSTEM:
            return text("all eight met")
        if req["messages"][-1]["role"] == "tool":
            return text(req["messages"][-1]["content"])
        task = next(m["content"] for m in req["messages"] if m["role"] == "user")
        return tool_call("meet", {"n": int(task.rsplit(" ", 1)[-1])})

    srv = scripted_server(responder=respond)
    graph = build_fleet_graph(model=openai_model(srv), registry=meeting.registry())
    ctx = Context(model="openai:scripted-model", memory=False, max_workers=8, max_subtasks=8)
    final, _events = await run_planner(graph, {"task": "everyone meets"}, context=ctx)

    assert meeting.peak == 8
    assert sorted(r["answer"] for r in final["results"].values()) == sorted(f"met {i}" for i in range(8))
