"""Grouping messages into units that are never split, and planning what to keep.

A *unit* is an AI message with tool calls together with all of its tool results,
or any other message alone. Compaction and the agent guard only ever keep or drop
whole units, so a provider never sees a tool call without its results or a result
without its call.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from ..models.messages import pending_tool_calls
from ..models.tokens import TokenCounter, count_messages, has_orphan_results
from .markers import OMITTED_KIND, is_kind, marker, task_index


def group_units(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """``[start, end)`` slices that compaction never splits: an AI message with tool
    calls plus its tool results; any other message alone."""
    units: list[tuple[int, int]] = []
    i, n = 0, len(messages)
    while i < n:
        calls = pending_tool_calls(messages[i])
        if calls:
            ids = {c.get("id") for c in calls}
            j = i + 1
            while j < n:
                result = messages[j]
                if not (isinstance(result, ToolMessage) and result.tool_call_id in ids):
                    break
                j += 1
            units.append((i, j))
            i = j
        else:
            units.append((i, i + 1))
            i += 1
    return units


def pairing_problems(messages: Sequence[BaseMessage]) -> list[str]:
    """Tool results without their AI tool call and tool calls without results (empty: fine)."""
    problems: list[str] = []
    open_calls: dict[str, str] = {}
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls:
                problems.append(f"tool result {m.tool_call_id!r} without its tool call")
            open_calls.pop(m.tool_call_id, None)
            continue
        if open_calls:
            problems.extend(f"tool call {cid!r} without a result" for cid in open_calls)
            open_calls = {}
        for c in pending_tool_calls(m):
            open_calls[c.get("id") or ""] = c.get("name") or ""
    problems.extend(f"tool call {cid!r} without a result" for cid in open_calls)
    return problems


def drop_orphan_results(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Remove tool results whose AI tool call is not right before them (never sendable)."""
    if not has_orphan_results(messages):
        return list(messages)
    out: list[BaseMessage] = []
    open_ids: set[str | None] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id in open_ids:
                out.append(m)
            continue
        open_ids = {c.get("id") for c in pending_tool_calls(m)}
        out.append(m)
    return out


def plan_compaction(messages: Sequence[BaseMessage], counter: TokenCounter, keep_tokens: int) -> tuple[int, int | None]:
    """``(kept_from, task)``: messages from ``kept_from`` on (and the task) stay verbatim."""
    units = group_units(messages)
    t = task_index(messages)
    kept_from = len(messages)
    used = 0
    last = units[-1] if units else None
    for a, b in reversed(units):
        if t is not None and a <= t < b:
            continue
        size = count_messages(counter, messages[a:b])
        most_recent_turn = (a, b) == last and (t is None or a > t)  # the results the model is waiting for
        if most_recent_turn or used + size <= keep_tokens:
            used += size
            kept_from = a
        else:
            break
    return kept_from, t


def rebuild(messages: Sequence[BaseMessage], kept_from: int, t: int | None, summary: BaseMessage) -> list[BaseMessage]:
    """The task (when it is older than what is kept), the summary, then the kept messages."""
    if t is None or t >= kept_from:
        return [summary, *messages[kept_from:]]
    return [messages[t], summary, *messages[kept_from:]]


def drop_old_units(
    messages: Sequence[BaseMessage], fixed: int, target: int, counter: TokenCounter
) -> list[BaseMessage]:
    """Drop the oldest units (never the task or the last unit) until the messages fit."""
    out = list(messages)
    dropped = 0
    while fixed + count_messages(counter, out) > target:
        t = task_index(out)
        units = [u for u in group_units(out)[:-1] if not (t is not None and u[0] <= t < u[1])]
        units = [u for u in units if not (isinstance(out[u[0]], HumanMessage) and is_kind(out[u[0]], OMITTED_KIND))]
        if not units:
            break
        a, b = units[0]
        dropped += b - a
        out = out[:a] + out[b:]
    if dropped:
        note = HumanMessage(
            content=f"[{dropped} earlier messages omitted to fit the context budget.]",
            additional_kwargs=marker(OMITTED_KIND),
        )
        out = [note, *out]
    return out
