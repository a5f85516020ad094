"""tools: run the model's tool calls, as the loop's policies plan them.

The node is a short runner of the tool policies (``policies/``, in the order of
``policies.tool_policies``): each plans the turn before anything runs (the per-turn cap and the
argument size, a person's decisions, loop detection, the free archive reads, the run's tool
budget), wraps each call that runs (a retry), and writes its state after the turn. What the
runner itself guarantees:

* up to ``max_parallel_tools`` calls run at once; results keep the calls' order; calls to tools
  that update the state (a ``Command``) run one at a time after the others, each seeing the
  updates before it;
* every failure (unknown tool, malformed or invalid arguments, exception, timeout) becomes an
  error ``ToolMessage`` the model can react to — never a crash;
* a call a middleware's ``after_model`` already answered (a ``ToolMessage`` for it follows the
  AI message) does not run;
* a user's LangChain middleware (``policies/hooks.py``) wraps each call's execution with its
  ``wrap_tool_call`` layers, outside the policies' own; a layer that calls its handler again
  spends the tool budget like a retry;
* every call is a ``tool_call`` and a ``tool_result`` event; the turn's model calls (a
  sub-agent's) count in the run's usage.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime

from ..config.context import AgentContext
from ..models.messages import pending_tool_calls
from ..models.usage import metered
from ..policies.archive import Archive
from ..policies.base import Policy, Run, ToolTurn, TurnCall, last_ai_message, policy_hooks
from ..policies.hooks import Hooks
from ..policies.review import review_context
from ..runs.events import emit, preview, streaming
from ..state import AgentState, joined_update
from ..tools.ask import ASK_TAG, ask_tools
from ..tools.context_tools import CONTEXT_TOOL_NAMES, STATE_TAG
from ..tools.invoke import ToolOutcome, outcome_through, run_tool, tool_timeout
from ..tools.registry import ToolMeta, ToolRegistry
from .metering import with_run_usage

__all__ = ["Offered", "make_tools_node", "refused_call"]


@dataclass(frozen=True)
class Offered:
    """The tools a turn may run: the run's ``tools`` (every tool when it names none; the context
    tools always), less the ask_user tools while the run does not offer ``ask_user``. Asked per
    call (``name in offered``, for a tool of the registry), so a turn does not list every tool."""

    registry: ToolRegistry
    tools: frozenset[str] | None  # the run's ``tools`` and the context tools; None: every tool
    ask_user: bool

    def __contains__(self, name: object) -> bool:
        return self.admits(str(name), self.registry.meta(str(name)))

    def admits(self, name: str, meta: ToolMeta) -> bool:
        """``name in self`` for a tool of the registry whose ``meta`` the caller has."""
        if self.tools is not None and name not in self.tools:
            return False
        return self.ask_user or ASK_TAG not in meta.tags

    def names(self) -> list[str]:
        """The offered tools' names, for the "unknown tool" answer."""
        if self.tools is None and self.ask_user:
            return self.registry.names()
        allowed = set(self.tools) if self.tools is not None else set(self.registry.names())
        return sorted(allowed if self.ask_user else allowed - ask_tools(self.registry))


def refused_call(call: dict, registry: ToolRegistry, allowed: Offered) -> ToolOutcome | tuple[BaseTool, ToolMeta]:
    """The answer to a call that cannot run (malformed, or a tool not on offer), else its
    ``(tool, meta)``."""
    name = call.get("name") or ""
    call_id = call.get("id") or ""
    if call.get("type") == "invalid_tool_call":
        detail = preview(call.get("error") or "arguments are not valid JSON", 1000)  # (it may quote the arguments)
        received = preview(repr(call.get("args")), 500)  # never echo a huge argument back
        return ToolOutcome(
            name, call_id, False, f"Invalid tool call to {name!r}: {detail}. Arguments received: {received}",
            error="invalid_json",
        )  # fmt: skip
    entry = registry.entry(name)
    if entry is None or not allowed.admits(name, entry[1]):
        names = allowed.names()
        return ToolOutcome(
            name, call_id, False, f"Unknown tool {name!r}. Available tools: {', '.join(names) or '(none)'}",
            error="unknown_tool",
        )  # fmt: skip
    return entry


def make_tools_node(
    registry: ToolRegistry, policies: list[Policy] | None = None, hooks: Hooks | None = None
) -> Callable:
    """The tools node of ``registry``'s tools, run by ``policies`` (default: the loop's own,
    ``policies.tool_policies()``) and wrapped by the middleware ``hooks``."""
    from ..policies import tool_policies

    policies = tool_policies() if policies is None else policies
    planners, wrappers, finishers = (policy_hooks(policies, h) for h in ("plan", "call", "after"))
    archive = next((p for p in policies if isinstance(p, Archive)), None)
    hooks = hooks or Hooks()

    async def tools(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        ctx = AgentContext.of(runtime)
        # The run's meter: the model calls of a sub_agent (and its tool calls) count on it, and the
        # tool budget this loop shares with the run it belongs to (a fleet's, a caller's) is on it.
        with metered(state, ctx) as meter:
            turn = new_turn(state, ctx, meter)
            for policy in planners:
                policy.plan(turn)
            await run_calls(turn, runtime)
            for policy in finishers:
                await policy.after(turn)
            update = with_run_usage(turn_update(turn), meter, state)
        return await archive.archive(turn, update, runtime.store) if archive is not None else update

    def new_turn(state: Mapping[str, Any], ctx: AgentContext, meter: Any) -> ToolTurn:
        messages = state.get("messages") or []
        message, answered = last_ai_message(messages) if messages else (None, set())
        calls = [
            turn_call(c) for c in pending_tool_calls(message) if not answered or (c.get("id") or "") not in answered
        ] if message is not None else []
        return ToolTurn(state=state, ctx=ctx, meter=meter, message=message, calls=calls)

    def turn_call(call: dict[str, Any]) -> TurnCall:
        entry = None if call.get("type") == "invalid_tool_call" else registry.entry(call.get("name") or "")
        meta = entry[1] if entry is not None else None
        return TurnCall(dict(call), meta=meta, updates_state=meta is not None and STATE_TAG in meta.tags)

    async def run_calls(turn: ToolTurn, runtime: Runtime[AgentContext]) -> None:
        """Run the turn's open calls: parallel ones at most ``max_parallel_tools`` at once, then
        those that update the state one at a time, each seeing the updates before it."""
        ctx = turn.ctx
        # (ask_user not offered is not run either: it would wait for an answer)
        named = frozenset(ctx.tools) | CONTEXT_TOOL_NAMES if ctx.tools else None
        allowed = Offered(registry, named, review_context(turn.state, ctx).ask_user)
        try:
            config: RunnableConfig | None = get_config()
        except RuntimeError:
            config = None
        live = streaming()  # (the events' payloads are built only for a run that streams them)

        async def one(call: TurnCall, call_state: Mapping[str, Any]) -> None:
            if call.refusal is not None:  # refused before it runs; the event shows what the policy shows
                content, error, shown = call.refusal
                if live:
                    call_event({**call.call, "args": shown})
                call.outcome = ToolOutcome(call.name, call.id, False, content, error=error)
            else:
                if live:
                    call_event(call.call)
                call.outcome = await execute(turn, call, call_state, allowed, runtime, config)
            if live:
                result_event(call.outcome)

        runnable = turn.open_calls()
        parallel = [c for c in runnable if not c.updates_state]
        if len(parallel) == 1:  # (a call alone needs no task of its own, nor the semaphore)
            await one(parallel[0], turn.state)
        elif parallel:
            sem = asyncio.Semaphore(max(1, ctx.max_parallel_tools))

            async def limited(call: TurnCall) -> None:
                async with sem:
                    await one(call, turn.state)

            await asyncio.gather(*(limited(c) for c in parallel))
        updates: dict[str, Any] = {}
        for call in parallel:
            updates.update(call.outcome.update or {})
        for call in (c for c in runnable if c.updates_state):
            await one(call, {**turn.state, **updates})
            updates.update(call.outcome.update or {})
        turn.update = joined_update(updates, turn.update)

    async def execute(
        turn: ToolTurn, call: TurnCall, state: Mapping[str, Any], allowed: Offered, runtime: Runtime[AgentContext],
        config: Any,
    ) -> ToolOutcome:
        """One call through the middleware's ``wrap_tool_call`` layers and the policies' ``call``
        hooks to :func:`run_tool` (a call that cannot run: its answer, with no hook)."""
        checked = refused_call(call.call, registry, allowed)
        if isinstance(checked, ToolOutcome):
            return checked
        tool, meta = checked
        timeout_s = tool_timeout(meta, turn.ctx)

        async def attempt(tool_call: Mapping[str, Any] = call.call) -> ToolOutcome:
            return await run_tool(
                tool, tool_call.get("args") or {}, call_id=call.id, context=turn.ctx, state=state, store=runtime.store,
                config=config, stream_writer=runtime.stream_writer, timeout_s=timeout_s,
            )  # fmt: skip

        def wrapped(tool_call: Mapping[str, Any]) -> Run:
            """The call's execution wrapped by the policies' ``call`` hooks (the first outermost)."""
            run: Run = functools.partial(attempt, tool_call)
            for policy in reversed(wrappers):
                run = functools.partial(policy.call, turn, call, run)
            return run

        if not hooks.tool_layers:
            return await wrapped(call.call)()
        tool_runtime = ToolRuntime(
            state=state, context=turn.ctx, config=config or RunnableConfig(), stream_writer=runtime.stream_writer,
            tool_call_id=call.id, store=runtime.store,
        )  # fmt: skip
        request = ToolCallRequest(tool_call=call.call, tool=tool, state=state, runtime=tool_runtime)  # type: ignore[arg-type]
        return await outcome_through(
            hooks, request, lambda tool_call: wrapped(tool_call)(), again=turn.extra_attempt,
            budget_note=f" (max_tool_calls={turn.ctx.max_tool_calls})",
        )

    return tools


def turn_update(turn: ToolTurn) -> dict[str, Any]:
    """The turn's state update: the kept AI message (when a policy changed it: same id, it
    replaces the model's) and one result per call, in the calls' order; then the answered calls'
    events, in that order; and what the policies wrote."""
    messages: list[Any] = [turn.replacement] if turn.replacement is not None else []
    for call in turn.calls:
        if call.answer is not None:
            messages.append(call.answer)
            for event, payload in call.events:
                emit(event, **payload)
        else:
            messages.append(call.outcome.to_message())
    return {**turn.update, "messages": messages}


def call_event(call: Mapping[str, Any]) -> None:
    emit("tool_call", id=call.get("id"), name=call.get("name"), args=call.get("args"))


def result_event(outcome: ToolOutcome) -> None:
    emit(
        "tool_result", id=outcome.call_id, name=outcome.name, ok=outcome.ok, error=outcome.error,
        duration_s=round(outcome.duration_s, 4), preview=preview(outcome.content),
    )  # fmt: skip

