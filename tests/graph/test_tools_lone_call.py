"""The tools node's common turn (one valid call that the plan would run as it is, see
nodes/tool_turn.lone_call) runs without the plan: the same events, tool results and state
as the general path, which a patched ``lone_call`` forces here on the same script."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.nodes import tools as tools_node
from smart_agent.testing.fake_models import ScriptedChatModel
from smart_agent.tools.registry import ToolMeta, ToolRegistry


def lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}: " + "x" * 200


def boom() -> str:
    """Fail."""
    raise RuntimeError("it broke")


def big() -> str:
    """A long output (archived)."""
    return "y" * 5000


def script() -> list[AIMessage]:
    turns: list[Any] = [
        ("lookup", {"n": 1}),
        ("lookup", {"n": "not a number"}),  # invalid arguments
        ("boom", {}),  # the tool raises
        ("nope", {}),  # unknown tool
        ("big", {}),  # archived output
        *[("lookup", {"n": 7})] * 3,  # the loop notice at the third
        ("lookup", {"n": 8}),  # the notice cleared
    ]
    calls = [AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"c{i}"}]) for i, (n, a) in enumerate(turns)]
    return [*calls, AIMessage("done", id="answer")]


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    for fn in (lookup, boom, big):
        reg.register(StructuredTool.from_function(func=fn, name=fn.__name__), ToolMeta(source="user"))
    return reg


def dump(message: Any) -> tuple[str, dict]:
    """A message as a dict, without the random id the thread gives a tool result."""
    return type(message).__name__, {k: v for k, v in message.model_dump().items() if k != "id"}


async def run(monkeypatch: pytest.MonkeyPatch, lone: bool) -> tuple[list[dict], list[Any], dict, int]:
    taken: list[Any] = []

    def lone_call(*args: Any) -> Any:
        found = original(*args) if lone else None
        taken.append(found)
        return found

    original = tools_node.lone_call
    monkeypatch.setattr(tools_node, "lone_call", lone_call)
    graph = build_agent_graph(model=ScriptedChatModel(responses=script()), registry=registry())
    events: list[dict] = []
    updates: list[Any] = []
    final: dict = {}
    ctx = Context(memory=False, max_tool_calls=50, loop_limit=3)
    async for mode, chunk in graph.astream({"task": "go"}, context=ctx, stream_mode=["custom", "updates", "values"]):
        if mode == "custom":
            events.append({k: v for k, v in chunk.items() if k not in ("ts", "duration_s")})
        elif mode == "updates" and "tools" in chunk:
            update = dict(chunk["tools"])
            update["messages"] = [dump(m) for m in update["messages"]]
            updates.append(update)
        elif mode == "values":
            final = chunk
    monkeypatch.undo()
    return events, updates, final, sum(found is not None for found in taken)


async def test_the_lone_call_path_gives_what_the_general_path_gives(monkeypatch):
    fast_events, fast_updates, fast_final, fast_turns = await run(monkeypatch, lone=True)
    events, updates, final, lone_turns = await run(monkeypatch, lone=False)

    assert (fast_turns, lone_turns) == (9, 0)  # every turn of the script is a lone call

    assert fast_events == events
    assert fast_updates == updates
    assert [dump(m) for m in fast_final["messages"]] == [dump(m) for m in final["messages"]]
    rest = {k: v for k, v in final.items() if k != "messages"}
    assert {k: v for k, v in fast_final.items() if k != "messages"} == rest
    assert {e["event"] for e in events} >= {"tool_call", "tool_result", "loop_detected", "summarization"}
    assert [e.get("error") for e in events if e["event"] == "tool_result"][:4] == [
        None, "invalid_args", "RuntimeError", "unknown_tool"
    ]
    assert final["tool_calls_made"] == 9 and final["answer"] == "done"
