"""Small helpers over LangChain messages shared by the nodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ..runs.events import preview

#: The largest token count one reply may report (far beyond any context window); a larger
#: one is invalid usage (:func:`checked_usage`).
MAX_REPORTED_TOKENS = 10**9


def valid_count(value: Any) -> bool:
    """Whether ``value`` is a token count a provider may report: an int from 0 to
    :data:`MAX_REPORTED_TOKENS` (not a bool, a float, a string...)."""
    return type(value) is int and 0 <= value <= MAX_REPORTED_TOKENS


#: Earlier messages of the thread a planning, decomposition or decision prompt shows (Assistant mode).
HISTORY_MESSAGES = 10
#: Characters of one earlier message in that history.
HISTORY_CHARS = 2000


def message_text(message: Any) -> str:
    """The text of a message (or of its ``content``): strings and text blocks, joined."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in ("text", "output_text"):
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def as_ai_message(value: Any) -> AIMessage:
    """``value`` when it is an AIMessage, else an AIMessage holding its text."""
    if isinstance(value, AIMessage):
        return value
    return AIMessage(content=message_text(value))


def usage_of(message: Any) -> dict[str, int]:
    """Input, output and total tokens of a model response (0 when unreported or not a valid
    count: ``usage.valid_count``; ``models.invoke_model`` replaces invalid usage by the estimate),
    and, when the provider reported any, ``cache_read_tokens`` / ``cache_write_tokens``: the input
    tokens read from / written to its prompt cache (``input_token_details`` ``cache_read`` /
    ``cache_creation``, a service tier's ``priority_cache_read``... too)."""
    usage = getattr(message, "usage_metadata", None) or {}
    if not isinstance(usage, Mapping):
        usage = {}
    counts = {k: usage.get(k) or 0 for k in ("input_tokens", "output_tokens", "total_tokens")}
    out = {k: v if valid_count(v) else 0 for k, v in counts.items()}
    details = usage.get("input_token_details")
    if details and isinstance(details, Mapping):
        read, write = _cache_counts(details)
        if read:
            out["cache_read_tokens"] = read
        if write:
            out["cache_write_tokens"] = write
    return out


def _cache_counts(details: Mapping[str, Any]) -> tuple[int, int]:
    """Cached input tokens read and written of ``input_token_details`` (invalid counts: 0)."""
    read = write = 0
    for key, value in details.items():
        if not isinstance(key, str) or not valid_count(value):
            continue
        if key == "cache_read" or key.endswith("_cache_read"):
            read += value
        elif key == "cache_creation" or key.endswith("_cache_creation"):
            write += value
    return min(read, MAX_REPORTED_TOKENS), min(write, MAX_REPORTED_TOKENS)


def pending_tool_calls(message: Any) -> list[dict]:
    """Tool calls of an AI message that need a tool result (valid and malformed)."""
    if not isinstance(message, AIMessage):
        return []
    return cast(list[dict], [*(message.tool_calls or []), *(message.invalid_tool_calls or [])])


def open_tool_calls(messages: Sequence[Any]) -> tuple[AIMessage | None, list[dict]]:
    """The last AI message of a conversation and those of its tool calls that have no result yet
    (a middleware's ``after_model`` may answer some: their results follow the AI message)."""
    if not messages:
        return None, []
    last = messages[-1]
    if isinstance(last, AIMessage):  # (nearly every turn: nothing after the model's reply)
        return last, pending_tool_calls(last)
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message, [c for c in pending_tool_calls(message) if (c.get("id") or "") not in answered]
        if not isinstance(message, ToolMessage):
            return None, []
        answered.add(message.tool_call_id)
    return None, []


def task_text(state: Mapping[str, Any]) -> str:
    """The task of a run: ``task`` if given, else the last human message."""
    task = (state.get("task") or "").strip()
    if task:
        return task
    for message in reversed(state.get("messages") or []):
        if isinstance(message, HumanMessage):
            return message_text(message).strip()
    return ""


def conversation_so_far(state: Mapping[str, Any]) -> str:
    """Earlier turns of the thread (Assistant mode) as ``User: ...`` / ``You: ...`` lines, without
    the current task (a last human message is it): the last :data:`HISTORY_MESSAGES` user and
    assistant messages with text, each cut to :data:`HISTORY_CHARS`. Empty on a new thread."""
    messages = list(state.get("messages") or [])
    if messages and isinstance(messages[-1], HumanMessage):
        messages = messages[:-1]
    lines = []
    for m in messages[-HISTORY_MESSAGES:]:
        if isinstance(m, (HumanMessage, AIMessage)) and message_text(m).strip():
            who = "User" if isinstance(m, HumanMessage) else "You"
            lines.append(f"{who}: {preview(message_text(m), HISTORY_CHARS)}")
    return "\n".join(lines)
