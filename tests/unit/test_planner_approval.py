"""The planner graph's plan approval (``approve_plan``): the run pauses with the plan before any
step runs; approve, edit (validated again), reject, or an unreadable answer (asked again)."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from planner_support import build, echo, make_registry, plan_call, steps

from smart_agent.context import Context
from smart_agent.testing.fake_models import ScriptedChatModel


@pytest.fixture
def tools():
    return make_registry()


APPROVE_CTX = Context(model="scripted:model", approve_plan=True)


async def _interrupted(graph, config):
    await graph.ainvoke({"task": "t"}, config, context=APPROVE_CTX)
    snapshot = await graph.aget_state(config)
    (intr,) = snapshot.interrupts
    return intr.value


async def test_approval_interrupt_then_approve(tools):
    registry, calls = tools
    model = ScriptedChatModel(responses=[plan_call(steps(echo("s1", "x"))), "approved run"])
    graph = build(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "approve"}}
    request = await _interrupted(graph, config)
    assert request["type"] == "plan_approval" and request["plan"]["steps"][0]["id"] == "s1"
    assert calls["echo"] == 0  # nothing ran before approval
    final = await graph.ainvoke(Command(resume={"action": "approve"}), config, context=APPROVE_CTX)
    assert final["answer"] == "approved run" and calls["echo"] == 1


async def test_approval_edit_is_revalidated(tools):
    registry, calls = tools
    model = ScriptedChatModel(responses=[plan_call(steps(echo("s1", "x"))), "edited run"])
    graph = build(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "edit"}}
    await _interrupted(graph, config)
    await graph.ainvoke(
        Command(resume={"action": "edit", "plan": steps({"id": "s1", "tool": "nope", "args": {}})}),
        config,
        context=APPROVE_CTX,
    )
    (again,) = (await graph.aget_state(config)).interrupts
    assert any("unknown_tool" in e for e in again.value["errors"]) and calls["echo"] == 0
    final = await graph.ainvoke(
        Command(resume={"action": "edit", "plan": steps(echo("e1", "edited"))}), config, context=APPROVE_CTX
    )
    assert final["answer"] == "edited run" and calls["echo:edited"] == 1 and calls["echo:x"] == 0
    assert final["plan"]["steps"][0]["id"] == "e1"


async def test_approval_reject(tools):
    registry, calls = tools
    model = ScriptedChatModel(responses=[plan_call(steps(echo("s1", "x")))])
    graph = build(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "reject"}}
    await _interrupted(graph, config)
    final = await graph.ainvoke(
        Command(resume={"action": "reject", "reason": "too risky"}), config, context=APPROVE_CTX
    )
    assert final["status"] == "rejected" and "too risky" in final["answer"] and sum(calls.values()) == 0
    assert len(model.calls) == 1


async def test_unreadable_approval_asks_again(tools):
    registry, calls = tools
    model = ScriptedChatModel(responses=[plan_call(steps(echo("s1", "x"))), "ok"])
    graph = build(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "garbage"}}
    await _interrupted(graph, config)
    await graph.ainvoke(Command(resume={"action": "maybe"}), config, context=APPROVE_CTX)
    (again,) = (await graph.aget_state(config)).interrupts
    assert "unrecognised approval response" in again.value["errors"][0]
    final = await graph.ainvoke(Command(resume="yes"), config, context=APPROVE_CTX)
    assert final["answer"] == "ok"
