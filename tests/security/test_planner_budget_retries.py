"""Attack: a step with many retries re-ran deterministic failures (the calculator's 1/0
ran 11 times) and a step that kept timing out ran for retries x timeout.

The planner graph over the real OpenAI client against the scripted server; every tool
counts its real executions.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest
from conftest import openai_model, run_graph
from langchain_core.tools import tool

from smart_agent.config.context import Context
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.registry import ToolMeta, ToolRegistry
from smart_agent.tools.retry import RetryableToolError

pytestmark = pytest.mark.graph


def submit(plan):
    return {"tool_calls": [{"name": "submit_plan", "arguments": plan}]}


def counting_registry(calls: Counter) -> ToolRegistry:
    builtin = default_registry(entry_points=False).get("calculator")

    @tool
    async def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression (the built-in calculator, counted)."""
        calls["calculator"] += 1
        return await builtin.ainvoke({"expression": expression})

    @tool
    def busy(label: str) -> str:
        """Fails like a rate-limited service."""
        calls["busy"] += 1
        raise RetryableToolError("429 too many requests")

    @tool
    def refused(label: str) -> str:
        """Fails like a refused connection."""
        calls["refused"] += 1
        raise ConnectionRefusedError("connection refused")

    @tool
    async def hang(label: str) -> str:
        """Never answers in time."""
        calls["hang"] += 1
        await asyncio.sleep(60)
        return label

    registry = ToolRegistry()
    for t in (calculator, busy, refused, hang):
        registry.register(t, ToolMeta(retries=0))
    return registry


def steps(*items):
    return {"steps": [{"on_fail": "continue", **s} for s in items]}


async def test_deterministic_failures_run_once_transient_ones_are_retried(scripted_server):
    calls: Counter = Counter()
    plan = steps(
        {"id": "div", "tool": "calculator", "args": {"expression": "1/0"}, "retries": 10},
        {"id": "rate", "tool": "busy", "args": {"label": "x"}, "retries": 3},
        {"id": "conn", "tool": "refused", "args": {"label": "x"}, "retries": 2},
    )
    server = scripted_server([submit(plan), "report"])
    graph = build_planner_graph(model=openai_model(server), registry=counting_registry(calls), backoff_base_s=0.01)

    final = await run_graph(graph, "t", Context(model="openai:scripted", max_tool_calls=20))

    assert calls == Counter(calculator=1, busy=4, refused=3)
    results = final["step_results"]
    assert results["div"]["status"] == "failed" and "division by zero" in results["div"]["error"].lower()
    assert final["tool_calls_made"] == 8


async def test_a_step_that_keeps_timing_out_stops_at_its_time_cap(scripted_server):
    calls: Counter = Counter()
    plan = steps({"id": "stuck", "tool": "hang", "args": {"label": "x"}, "retries": 10, "timeout_s": 1})
    server = scripted_server([submit(plan), "report"])
    graph = build_planner_graph(model=openai_model(server), registry=counting_registry(calls), backoff_base_s=0.01)
    cap_s = 2.5

    started = time.monotonic()
    final = await run_graph(graph, "t", Context(model="openai:scripted", step_time_cap_s=cap_s))
    elapsed = time.monotonic() - started

    stuck = final["step_results"]["stuck"]
    assert stuck["status"] == "failed" and stuck["kind"] == "timeout"
    assert "time cap step_time_cap_s=2.5 s" in stuck["error"]
    assert calls["hang"] == stuck["attempts"] and 2 <= calls["hang"] <= 3  # not 11
    assert elapsed < cap_s + 10
