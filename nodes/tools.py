"""tools: run the model's tool calls concurrently, within the run's budget.

* up to ``max_parallel_tools`` calls run at once; results keep the calls' order;
* every failure (unknown tool, malformed or invalid arguments, exception, timeout)
  becomes an error ``ToolMessage`` the model can react to — never a crash;
* calls beyond the remaining ``max_tool_calls`` budget are answered with a
  "skipped" tool message and are not executed;
* one turn runs at most ``max_tool_calls_per_turn`` calls: the history keeps those and
  one more, answered "skipped: too many tool calls in one turn" for all the others,
  which are dropped from the AI message (so no later request carries them);
* a call whose arguments exceed ``max_tool_arg_chars`` is refused before it runs, and
  its arguments are replaced by a small placeholder in the history;
* a call the ``human`` node decided (``state["reviews"]``: rejected, refused, or an
  ``ask_user`` answered) is answered from its review without running and without counting
  against ``max_tool_calls``; the node clears ``reviews``. An edited call runs as edited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime

from ..config.context import AgentContext, context_field
from ..history.budget import ContextBudget
from ..models.prompts import SKIPPED_RESULT
from ..models.usage import Meter, metered
from ..runs.events import emit, preview, streaming
from ..state import AgentState, count_of
from ..tools.ask import ASK_TAG, ask_tools
from ..tools.context_tools import CONTEXT_TOOL_NAMES, free_retrievals
from ..tools.invoke import ToolOutcome, run_tool, tool_timeout
from ..tools.registry import ToolMeta, ToolRegistry
from ..tools.retry import BACKOFF_BASE_S, backoff_delay, jittered
from .human import review_context, reviewed_message
from .metering import with_run_usage
from .routes import pending_tool_calls
from .tool_turn import (  # (loop_excess, plan_calls: also imported from here)
    OVERSIZED,
    REPEATED,
    TOO_MANY_IN_TURN,
    bounded_turn,
    effect_signature,
    lone_call,
    loop_excess,
    plan_calls,
    split_free_retrievals,
    track_repeats,
    updates_state,
)


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
            name,
            call_id,
            False,
            f"Invalid tool call to {name!r}: {detail}. Arguments received: {received}",
            error="invalid_json",
        )
    entry = registry.entry(name)
    if entry is None or not allowed.admits(name, entry[1]):
        names = allowed.names()
        return ToolOutcome(
            name,
            call_id,
            False,
            f"Unknown tool {name!r}. Available tools: {', '.join(names) or '(none)'}",
            error="unknown_tool",
        )
    return entry


# Failures another attempt cannot fix, whatever the outcome says.
NOT_RETRIED = {"invalid_json", "unknown_tool", "invalid_args", "args_too_large"}


def call_retries(meta: ToolMeta, ctx: AgentContext) -> int:
    """Extra attempts of a call: the tool's ``ToolMeta.retries`` when set, else the run's ``tool_retries``."""
    return int(meta.retries or context_field(ctx, "tool_retries", 0))


class Retries:
    """The extra attempts of one turn, shared by its calls: each one is a tool call of the run.
    One starts only while the turn's ``spare`` (what this loop's own ``max_tool_calls`` leaves)
    lasts and the run's meter grants it (the budget the run shares with its workers and
    sub-agents, reserved when the attempt starts)."""

    __slots__ = ("made", "meter", "spare")

    def __init__(self, spare: int, meter: Meter) -> None:
        self.spare, self.meter, self.made = spare, meter, 0

    def take(self) -> bool:
        if self.made >= self.spare or self.meter.take_tools(1) < 1:
            return False
        self.made += 1
        return True


async def execute_with_retries(
    call: dict,
    registry: ToolRegistry,
    ctx: AgentContext,
    retries_left: Retries,
    backoff_base_s: float,
    *,
    state: Mapping[str, Any],
    store: Any,
    config: RunnableConfig | None,
    stream_writer: Any,
    allowed: Offered,
) -> ToolOutcome:
    """Run ``call`` (:func:`refused_call` answers one that cannot run), again after a retryable
    failure (``ToolOutcome.retryable``: a timeout, a connection error, a RetryableToolError) up
    to the call's retries, with exponential backoff and jitter, each one granted by ``retries_left``
    (the run's tool budget: when it grants none, the failure says so)."""
    checked = refused_call(call, registry, allowed)
    if isinstance(checked, ToolOutcome):
        return checked
    tool, meta = checked
    name, call_id, args = call.get("name") or "", call.get("id") or "", call.get("args") or {}
    timeout_s = tool_timeout(meta, ctx)
    retries: int | None = None  # looked up at the first retryable failure
    attempt = 1
    while True:
        outcome = await run_tool(
            tool, args, call_id=call_id, context=ctx, state=state, store=store, config=config,
            stream_writer=stream_writer, timeout_s=timeout_s,
        )  # fmt: skip
        if outcome.ok or outcome.error in NOT_RETRIED or not outcome.retryable:
            return outcome
        if retries is None:
            retries = call_retries(meta, ctx)
        if attempt > retries:
            return outcome
        if not retries_left.take():
            outcome.content += f" (not retried: tool budget exhausted, max_tool_calls={ctx.max_tool_calls})"
            return outcome
        delay = jittered(backoff_delay(attempt, backoff_base_s))
        emit(
            "tool_retry", id=call.get("id"), name=name, attempt=attempt + 1, of=retries + 1,
            error=outcome.error, delay_s=round(delay, 3), preview=preview(outcome.content),
        )  # fmt: skip
        await asyncio.sleep(delay)
        attempt += 1


def make_tools_node(
    registry: ToolRegistry, budget: ContextBudget | None = None, *, backoff_base_s: float = BACKOFF_BASE_S
) -> Callable:
    """``budget`` (history/budget.py ContextBudget) archives large outputs; ``backoff_base_s``
    is the first wait before a retry (doubled for each further one, jittered)."""

    async def tools(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        ctx = AgentContext.of(runtime)
        # The run's meter: the model calls of a sub_agent (and its tool calls) count on it, and the
        # tool budget this loop shares with the run it belongs to (a fleet's, a caller's) is on it.
        with metered(state, ctx) as meter:
            update = await turn(state, runtime, ctx, meter)
        if budget is not None and budget.archives(ctx, update):
            update = await budget.after_tools(ctx, state, update, runtime.store)
        return update

    async def turn(
        state: AgentState, runtime: Runtime[AgentContext], ctx: AgentContext, meter: Meter
    ) -> dict[str, Any]:
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        cap, max_chars = ctx.max_tool_calls_per_turn, ctx.max_tool_arg_chars
        made = count_of(state, "tool_calls_made")
        limit = int(state.get("max_tool_calls", ctx.max_tool_calls))
        # What the run's budget leaves: less than this loop's own limit when the loop is a fleet
        # worker or a sub-agent whose run (its other workers, its caller) spent the rest.
        before, left = meter.tool_calls, meter.tools_left()
        run_limit = limit if left is None or made + left >= limit else made + left
        # (ask_user not offered is not run either: it would wait for an answer)
        named = frozenset(ctx.tools) | CONTEXT_TOOL_NAMES if ctx.tools else None
        allowed = Offered(registry, named, review_context(state, ctx).ask_user)
        try:
            config = get_config()
        except Exception:
            config = None
        live = streaming()  # (the events' payloads are built only for a run that streams them)

        async def one(
            call: dict, call_state: Mapping[str, Any], spare: Retries, size: int | None = None
        ) -> ToolOutcome:
            """Run ``call`` with its events (``spare``: the retries the budget leaves), or refuse it
            when ``size`` (its arguments' size, over ``max_tool_arg_chars``) is given."""
            if size is not None:  # refused before it runs; the event shows no arguments
                if live:
                    call_event({**call, "args": {"_truncated": f"{size} chars"}})
                outcome = ToolOutcome(
                    call.get("name") or "", call.get("id") or "", False,
                    OVERSIZED.format(chars=size, limit=max_chars), error="args_too_large",
                )
            else:
                if live:
                    call_event(call)
                outcome = await execute_with_retries(
                    call, registry, ctx, spare, backoff_base_s, state=call_state, store=runtime.store,
                    config=config, stream_writer=runtime.stream_writer, allowed=allowed,
                )  # fmt: skip
            if live:
                result_event(outcome)
            return outcome

        lone = lone_call(last, state, registry, cap, max_chars, made, run_limit)
        if lone is not None:  # the common turn: its one call runs as the plan below would run it
            call, signature = lone
            meter.take_tools(1)  # (granted: run_limit leaves it, and nothing ran since)
            outcome = await one(call, state, Retries(limit - made - 1, meter))
            update: dict[str, Any] = {**(outcome.update or {}), "messages": [outcome.to_message()]}
            update.update(track_repeats(state, [call], [signature]))
            return with_run_usage(spent(update, made, limit, before, meter), meter, state)

        calls = pending_tool_calls(last) if isinstance(last, AIMessage) else []
        replacement, calls, dropped, sizes = (
            bounded_turn(last, cap, max_chars) if isinstance(last, AIMessage) and calls else (None, [], 0, {})
        )
        signatures = [effect_signature(registry, c) for c in calls]  # loop detection's, once per call
        too_many = calls[cap:]  # the one kept to answer for the dropped ones
        retrievals = count_of(state, "retrievals_made")
        reviews: Mapping[str, Mapping[str, Any]] = state.get("reviews") or {}
        reviewed = {id(c): reviews[c.get("id") or ""] for c in calls[:cap] if (c.get("id") or "") in reviews}
        looped = loop_excess(state, calls[:cap], signatures)
        unreviewed = [c for c in calls[:cap] if id(c) not in reviewed and id(c) not in looped]
        free, counted = split_free_retrievals(unreviewed, retrievals, free_retrievals(limit))
        to_run, skipped = plan_calls(counted, made, run_limit)
        meter.take_tools(len(to_run))  # reserved before any runs (granted: run_limit leaves them)
        oversized = {id(c): sizes[id(c)] for c in [*free, *to_run] if sizes[id(c)] > max_chars}
        spare = Retries(limit - made - len(to_run), meter)

        # Results keep the calls' order. Tools that update the state (a Command) run one
        # at a time after the others, each seeing the updates before it.
        position = {id(c): i for i, c in enumerate(calls)}
        runnable = sorted([*free, *to_run], key=lambda c: position[id(c)])
        updating = [updates_state(registry, c) for c in runnable]
        stateful = [c for c, u in zip(runnable, updating, strict=True) if u]
        parallel = [c for c, u in zip(runnable, updating, strict=True) if not u]
        outcomes: dict[int, ToolOutcome] = {}
        state_updates: dict[str, Any] = {}
        if len(parallel) == 1:  # (a call alone needs no task of its own, which gather starts, nor the semaphore)
            results = [await one(parallel[0], state, spare, oversized.get(id(parallel[0])))]
        else:
            sem = asyncio.Semaphore(max(1, ctx.max_parallel_tools))  # at most max_parallel_tools at once

            async def limited(call: dict) -> ToolOutcome:
                async with sem:
                    return await one(call, state, spare, oversized.get(id(call)))

            results = await asyncio.gather(*(limited(c) for c in parallel))
        for call, outcome in zip(parallel, results, strict=True):
            outcomes[position[id(call)]] = outcome
        for i in sorted(outcomes):
            state_updates.update(outcomes[i].update or {})
        for call in stateful:
            outcome = await one(call, {**state, **state_updates}, spare, oversized.get(id(call)))
            outcomes[position[id(call)]] = outcome
            state_updates.update(outcome.update or {})
        out_messages: list[ToolMessage] = []

        def skip(call: dict, content: str, error: str, note: str) -> None:
            """Answer a call that does not run: an error result and its event."""
            out_messages.append(
                ToolMessage(content=content, tool_call_id=call.get("id") or "", name=call.get("name"), status="error")
            )
            emit(
                "tool_result", id=call.get("id"), name=call.get("name"), ok=False,
                error=error, duration_s=0.0, preview=note,
            )  # fmt: skip

        for i, call in enumerate(calls):
            if i in outcomes:
                out_messages.append(outcomes[i].to_message())
            elif id(call) in reviewed:
                message = reviewed_message(call, reviewed[id(call)])
                out_messages.append(message)
                # A call a person answered or rejected is still one of the run's tool calls (its
                # summary and --json list it): ``reviewed`` says it did not run as a tool.
                kind = str(reviewed[id(call)].get("type"))
                emit("tool_call", id=call.get("id"), name=call.get("name"), args=call.get("args"), reviewed=kind)
                emit(
                    "tool_result", id=call.get("id"), name=call.get("name"), ok=message.status != "error",
                    error=None if message.status != "error" else str(reviewed[id(call)].get("type")),
                    duration_s=0.0, preview=preview(str(message.content)),
                )  # fmt: skip
            elif id(call) in looped:
                note = REPEATED.format(tool=call.get("name"), count=looped[id(call)])
                skip(call, note, "skipped_loop", f"skipped: the same call {looped[id(call)]} times in a row")
            elif any(call is c for c in too_many):
                note = TOO_MANY_IN_TURN.format(count=len(calls) + dropped, cap=cap, dropped=dropped)
                skip(call, note, "skipped_turn_limit", f"skipped: {dropped + 1} calls over the per-turn limit")
            else:  # (past the run's shared budget, the limit named is the run's)
                shown = limit if run_limit == limit else (meter.root.tool_limit or limit)
                skip(call, SKIPPED_RESULT.format(limit=shown), "skipped_limit", "skipped: tool-call limit")
        # The bounded AI message replaces the original (same id) before its results.
        head = [replacement] if replacement is not None else []
        update = {**state_updates, "messages": [*head, *out_messages]}
        if free:
            update["retrievals_made"] = retrievals + len(free)
        if reviews:
            update["reviews"] = {}
        update.update(track_repeats(state, calls, signatures))
        return with_run_usage(spent(update, made, limit, before, meter), meter, state)

    return tools


def spent(update: dict[str, Any], made: int, limit: int, before: int, meter: Meter) -> dict[str, Any]:
    """``update`` with the loop's ``tool_calls_made``: ``made`` and what the turn added to the
    meter (its calls, their retries, and every tool call of the sub-agents it ran). Once the
    run's shared budget is spent below the loop's own limit (a fleet worker, a sub-agent), the
    loop's ``max_tool_calls`` becomes what it made, so it finalizes like at its own limit."""
    now = made + meter.tool_calls - before
    update["tool_calls_made"] = now
    if now < limit and meter.tools_left() == 0:
        update["max_tool_calls"] = now
    return update


def call_event(call: Mapping[str, Any]) -> None:
    emit("tool_call", id=call.get("id"), name=call.get("name"), args=call.get("args"))


def result_event(outcome: ToolOutcome) -> None:
    emit(
        "tool_result", id=outcome.call_id, name=outcome.name, ok=outcome.ok, error=outcome.error,
        duration_s=round(outcome.duration_s, 4), preview=preview(outcome.content),
    )  # fmt: skip
