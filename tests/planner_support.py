"""Test tools and helpers for the planner tests (imported by the planner tests in tests/unit and tests/graph)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from smart_agent.tools.registry import ToolMeta, ToolRegistry


class SimulatedCrash(BaseException):
    """Not an ``Exception``: escapes the tool-error handling like a process crash would."""


def steps(*items: dict) -> dict:
    """A plan of ``items`` (copied)."""
    return {"steps": [dict(i) for i in items]}


def echo(sid: str, text: str, **kw: Any) -> dict:
    """A plan step calling the ``echo`` tool of :func:`make_registry`."""
    return {"id": sid, "tool": "echo", "args": {"text": text}, **kw}


def build(model: Any, registry: ToolRegistry, **kw: Any) -> Any:
    """The planner graph with short retry waits."""
    from smart_agent.graphs.planner import build_planner_graph

    return build_planner_graph(model=model, registry=registry, backoff_base_s=0.01, **kw)


def plan_call(plan: dict, *, call_id: str = "p1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "submit_plan", "args": plan, "id": call_id}])


def make_registry(calls: Counter | None = None) -> tuple[ToolRegistry, Counter]:
    """A registry of small deterministic tools that count their invocations."""
    calls = calls if calls is not None else Counter()
    state: dict[str, Any] = {"flaky_failures": 2}

    @tool
    def add(a: int, b: int) -> dict:
        """Add two integers; returns {"sum": a + b}."""
        calls["add"] += 1
        return {"sum": a + b}

    @tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        calls["echo"] += 1
        calls[f"echo:{text}"] += 1
        return text

    @tool
    def upper(text: str) -> str:
        """Upper-case a text."""
        calls["upper"] += 1
        return text.upper()

    @tool
    async def sleep(seconds: float, label: str = "") -> str:
        """Sleep, then return the label."""
        calls["sleep"] += 1
        calls["sleep_in_flight"] += 1
        calls["sleep_peak"] = max(calls["sleep_peak"], calls["sleep_in_flight"])
        try:
            await asyncio.sleep(seconds)
        finally:
            calls["sleep_in_flight"] -= 1
        return label or f"slept {seconds}"

    @tool
    def fail(message: str = "boom") -> str:
        """Always fails."""
        calls["fail"] += 1
        raise RuntimeError(message)

    @tool
    def flaky(text: str) -> str:
        """Fails the first two calls, then returns the text."""
        calls["flaky"] += 1
        if state["flaky_failures"] > 0:
            state["flaky_failures"] -= 1
            raise ConnectionResetError("temporary failure")  # transient: retried
        return text

    @tool
    def crash_once(text: str) -> str:
        """Crashes the process (simulated) on its first call, then works."""
        calls["crash_once"] += 1
        if calls["crash_once"] == 1:
            # Crash after a pause, so the other (instant) steps of its superstep have
            # finished: the crash lands after their results, not in a race with them.
            time.sleep(0.3)
            raise SimulatedCrash("simulated crash between supersteps")
        return text

    @tool
    def search(query: str) -> str:
        """Search; returns JSON text with a list of results."""
        calls["search"] += 1
        return json.dumps({"results": [{"title": f"About {query}", "url": f"https://example.org/{query}"}]})

    reg = ToolRegistry()
    for t in (add, echo, upper, sleep, fail, flaky, crash_once, search):
        reg.register(t, ToolMeta(retries=0))
    return reg, calls


class SlowPages:
    """A stdlib HTTP server on 127.0.0.1 whose pages each take ``delay_s`` to answer.
    ``peak`` is the most requests it ever had in flight at once; with ``together=n`` each
    request also waits (up to ``wait_s``) until n requests are in flight, so a client
    that fetches them one by one gets a 503 instead of a page."""

    def __init__(self, delay_s: float = 1.0, *, together: int = 0, wait_s: float = 10.0):
        delay = delay_s
        hits: list[str] = []
        self.hits = hits
        self.peak = 0
        in_flight = [0]
        lock = threading.Lock()
        barrier = threading.Barrier(together) if together else None
        pages = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hits.append(self.path)
                with lock:
                    in_flight[0] += 1
                    pages.peak = max(pages.peak, in_flight[0])
                try:
                    if barrier is not None:
                        try:
                            barrier.wait(timeout=wait_s)
                        except threading.BrokenBarrierError:
                            self.send_error(503, "the other requests never came in parallel")
                            return
                    time.sleep(delay)
                finally:
                    with lock:
                        in_flight[0] -= 1
                body = (
                    f"<html><head><title>Page {self.path}</title></head><body><p>Content of "
                    f"{self.path}</p></body></html>"
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> SlowPages:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


async def run_graph(graph, inputs, *, context, config=None) -> tuple[dict, list[dict]]:
    """Run a graph to the end; returns (final values, custom events)."""
    events: list[dict] = []
    final: dict = {}
    async for mode, chunk in graph.astream(inputs, config, context=context, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            final = chunk
    return final, events
