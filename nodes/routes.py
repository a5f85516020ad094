"""Routing decisions of the agent loop: small pure functions over the state.

Each returns the name of the next node; the graph file only wires them. The
limits they compare against are copied into the state by the resolver, so a
decision never depends on anything but its argument.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage

END = "__end__"


def pending_tool_calls(message: Any) -> list[dict]:
    """Tool calls of an AI message that need a tool result (valid and malformed)."""
    if not isinstance(message, AIMessage):
        return []
    return [*(message.tool_calls or []), *(message.invalid_tool_calls or [])]


def route_after_agent(state: dict) -> Literal["tools", "__end__"]:
    """Run tools when the model asked for them; otherwise the loop is over."""
    messages = state.get("messages") or []
    if messages and not state.get("finalize") and pending_tool_calls(messages[-1]):
        return "tools"
    return END


def tool_limit_reached(state: dict) -> bool:
    limit = state.get("max_tool_calls")
    return limit is not None and int(state.get("tool_calls_made") or 0) >= int(limit)


def route_after_tools(state: dict) -> Literal["toolLimitFinalize", "agent"]:
    """Once the tool-call budget is spent, finalize; otherwise give the model the results."""
    return "toolLimitFinalize" if tool_limit_reached(state) else "agent"
