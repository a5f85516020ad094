"""Routing decisions of the agent loop: small pure functions over the state.

Each returns the name of the next node; the graph file only wires them. The
limits they compare against are copied into the state by the resolver, so a
decision never depends on anything but its argument.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage

from ..tokens import usable_tokens
from ..state import count_of

END = "__end__"

# Tools named transfer_to_<agent> hand the thread to another agent (tools/agents.py as_handoff).
HANDOFF_PREFIX = "transfer_to_"


def pending_tool_calls(message: Any) -> list[dict]:
    """Tool calls of an AI message that need a tool result (valid and malformed)."""
    if not isinstance(message, AIMessage):
        return []
    return [*(message.tool_calls or []), *(message.invalid_tool_calls or [])]


def route_after_agent(state: dict) -> Literal["tools", "structuredOutput", "__end__"]:
    """Run tools when the model asked for them; otherwise the loop is over (after the
    answer is validated, when the run has an output schema)."""
    messages = state.get("messages") or []
    if messages and not state.get("finalize") and pending_tool_calls(messages[-1]):
        return "tools"
    if state.get("output_schema") and messages and isinstance(messages[-1], AIMessage):
        return "structuredOutput"
    return END


def tool_limit_reached(state: dict) -> bool:
    limit = state.get("max_tool_calls")
    return limit is not None and count_of(state, "tool_calls_made") >= int(limit)


def last_ai_message(messages: list[Any]) -> AIMessage | None:
    for message in reversed(messages or []):
        if isinstance(message, AIMessage):
            return message
    return None


def handoff_requested(state: dict) -> bool:
    """The last model turn asked to transfer the thread (only in a team: ``active_agent`` is set)."""
    if not state.get("active_agent"):
        return False
    ai = last_ai_message(state.get("messages") or [])
    return any((c.get("name") or "").startswith(HANDOFF_PREFIX) for c in pending_tool_calls(ai))


def route_after_tools(state: dict) -> Literal["handoff", "toolLimitFinalize", "summarize", "agent"]:
    """Transfers first; once the tool-call budget is spent, finalize; otherwise give the
    model the results."""
    if handoff_requested(state):
        return "handoff"
    return "toolLimitFinalize" if tool_limit_reached(state) else route_before_agent(state)


def route_after_handoff(state: dict) -> Literal["toolLimitFinalize", "summarize", "agent"]:
    """The new agent takes the next turn (unless the tool budget is spent)."""
    return "toolLimitFinalize" if tool_limit_reached(state) else route_before_agent(state)


def route_before_agent(state: dict) -> Literal["summarize", "agent"]:
    """Compact the history first when the predicted next request is over the budget.

    ``request_tokens`` (system prompt + messages + tool schemas, as the agent will send
    them) is written by every node that changes them; ``context_token_limit`` is copied
    from the context by the resolver.
    """
    limit = state.get("context_token_limit")
    if not limit:
        return "agent"
    return "summarize" if count_of(state, "request_tokens") > usable_tokens(int(limit)) else "agent"


def route_after_structured_output(state: dict) -> Literal["summarize", "agent", "__end__"]:
    """A validated answer ends the run; an invalid one (answered by a feedback message
    carrying the validation errors) goes back to the model."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    mark = (getattr(last, "additional_kwargs", None) or {}).get("smart_agent") or {}
    if isinstance(mark, dict) and mark.get("kind") == "output_feedback":
        return route_before_agent(state)
    return END
