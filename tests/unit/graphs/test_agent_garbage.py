"""A run leaves nothing of its own to the garbage collector, and keeps nothing alive after it.

Objects in reference cycles are freed only by CPython's cycle collector, which then runs more
often inside later runs; an object kept alive keeps everything it refers to (a tool call's
config refers to the run that made it: its state, its graph)."""

from __future__ import annotations

import asyncio
import functools
import gc
import weakref

from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.usage import Meter
from smart_agent.testing.fake_models import ScriptedChatModel
from smart_agent.tools.executor import run_in_daemon_thread
from smart_agent.tools.registry import ToolMeta, ToolRegistry


def lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}"


def graph_and_script() -> tuple:
    registry = ToolRegistry()
    registry.register(StructuredTool.from_function(func=lookup, name="lookup"), ToolMeta(source="user"))
    script = [AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": i}, "id": f"c{i}"}]) for i in range(3)]
    graph = build_agent_graph(model=ScriptedChatModel(responses=[*script, "done"]), registry=registry)
    return graph, Context(memory=False)


def own(obj: object) -> bool:
    """Whether ``obj`` is one of smart-agent's objects (an instance of its classes, or its function)."""
    module = getattr(obj, "__module__", None) if callable(obj) and not isinstance(obj, type) else None
    return (module or type(obj).__module__ or "").startswith("smart_agent")


async def test_a_run_leaves_none_of_its_objects_to_the_garbage_collector():
    graph, ctx = graph_and_script()
    assert (await graph.ainvoke({"task": "go"}, context=ctx))["answer"] == "done"  # (imports, first-run caches)
    graph, ctx = graph_and_script()
    gc.collect()
    gc.disable()
    try:
        result = await graph.ainvoke({"task": "go"}, context=ctx)
        assert result["answer"] == "done"
        del result
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [type(o).__qualname__ for o in gc.garbage if own(o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []


def test_a_meter_is_freed_when_its_last_reference_goes():
    gc.disable()
    try:
        root = Meter()
        child = Meter(parent=root)
        assert child.root is root and root.root is root
        refs = [weakref.ref(root), weakref.ref(child)]
        del root, child
        assert [r() for r in refs] == [None, None]  # (freed without the cycle collector)
    finally:
        gc.enable()


async def test_an_idle_worker_keeps_nothing_of_its_last_call():
    class Payload:
        pass

    payload = Payload()
    ref = weakref.ref(payload)
    job = functools.partial(lambda p: type(p).__name__, payload)  # (the job holds the payload)
    assert await run_in_daemon_thread(job) == "Payload"
    del payload, job
    for _ in range(500):  # (the worker lets go of its job right after handing back the result)
        if ref() is None:
            break
        await asyncio.sleep(0.01)
    assert ref() is None
