"""The planner graph's plan approval (``approve_plan``): the run pauses with the plan before any
step runs; approve, edit (validated again), reject, or an unreadable answer (asked again)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from planner_support import build, echo, make_registry, plan_call, steps

from smart_agent.config.context import Context
from smart_agent.testing.fake_models import ScriptedChatModel

APPROVE_CTX = Context(model="scripted:model", approve_plan=True)


class Paused:
    """A planner run that planned one ``echo`` step and waits for its approval; ``answers``: the
    model's replies after the plan (the synthesis). ``calls`` counts the tools' runs."""

    calls: Counter
    model: ScriptedChatModel
    graph: Any
    config: dict[str, Any]

    async def start(self, thread: str, *answers: str) -> dict[str, Any]:
        registry, self.calls = make_registry()
        self.model = ScriptedChatModel(responses=[plan_call(steps(echo("s1", "x"))), *answers])
        self.graph = build(self.model, registry, checkpointer=InMemorySaver())
        self.config = {"configurable": {"thread_id": thread}}
        await self.graph.ainvoke({"task": "t"}, self.config, context=APPROVE_CTX)
        return await self.request()

    async def request(self) -> dict[str, Any]:
        """What the run waits on now."""
        (intr,) = (await self.graph.aget_state(self.config)).interrupts
        return intr.value

    async def resume(self, answer: Any) -> dict[str, Any]:
        return await self.graph.ainvoke(Command(resume=answer), self.config, context=APPROVE_CTX)


async def test_approval_interrupt_then_approve():
    run = Paused()
    request = await run.start("approve", "approved run")
    assert request["type"] == "plan_approval" and request["plan"]["steps"][0]["id"] == "s1"
    assert run.calls["echo"] == 0  # nothing ran before approval
    final = await run.resume({"action": "approve"})
    assert final["answer"] == "approved run" and run.calls["echo"] == 1


async def test_approval_edit_is_revalidated():
    run = Paused()
    await run.start("edit", "edited run")
    await run.resume({"action": "edit", "plan": steps({"id": "s1", "tool": "nope", "args": {}})})
    again = await run.request()
    assert any("unknown_tool" in e for e in again["errors"]) and run.calls["echo"] == 0
    final = await run.resume({"action": "edit", "plan": steps(echo("e1", "edited"))})
    assert final["answer"] == "edited run" and run.calls["echo:edited"] == 1 and run.calls["echo:x"] == 0
    assert final["plan"]["steps"][0]["id"] == "e1"


async def test_approval_reject():
    run = Paused()
    await run.start("reject")
    final = await run.resume({"action": "reject", "reason": "too risky"})
    assert final["status"] == "rejected" and "too risky" in final["answer"] and sum(run.calls.values()) == 0
    assert len(run.model.calls) == 1


async def test_unreadable_approval_asks_again():
    run = Paused()
    await run.start("garbage", "ok")
    await run.resume({"action": "maybe"})
    assert "unrecognised approval response" in (await run.request())["errors"][0]
    final = await run.resume("yes")
    assert final["answer"] == "ok"
