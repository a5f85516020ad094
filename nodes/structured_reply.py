"""Read a structured value out of a model reply, whatever shape the model chose.

Shared by the fleet's decomposition and the dual agent's decisions: the model is
offered one "submit" tool, but a JSON object or list in the text (fenced, bare, or
with common slips) is accepted too, so the graphs work with providers and local
models that do not call tools reliably.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ..messages import message_text
from .planner.repair import PlanSyntaxError, extract_json


def submit_tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An OpenAI-format function tool (``bind_tools`` accepts it for every provider)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def reply_payload(message: AIMessage, tool_name: str) -> tuple[Any, str | None]:
    """``(value, None)`` from the ``tool_name`` call or the JSON in the text; else ``(None, why)``."""
    for call in message.tool_calls or []:
        if call.get("name") == tool_name:
            return call.get("args") or {}, None
    for bad in message.invalid_tool_calls or []:
        if bad.get("name") == tool_name:
            try:
                return extract_json(str(bad.get("args") or "")), None
            except PlanSyntaxError as exc:
                return None, f"the {tool_name} arguments are not valid JSON ({exc})"
    text = message_text(message).strip()
    if not text:
        called = ", ".join(sorted({c.get("name") or "?" for c in message.tool_calls or []}))
        return None, f"expected a {tool_name} call or JSON, got " + (f"a call to {called}" if called else "an empty reply")
    try:
        return extract_json(text), None
    except PlanSyntaxError as exc:
        return None, f"no JSON found in the reply ({exc})"


def feedback(response: AIMessage, errors: list[str]) -> list[BaseMessage]:
    """The rejected reply and the problems, shaped so every provider accepts the history."""
    text = "Your reply was not accepted:\n- " + "\n- ".join(errors) + "\nAnswer again in the requested format."
    calls = list(response.tool_calls or [])
    if calls:
        out: list[BaseMessage] = [AIMessage(content=message_text(response), tool_calls=calls)]
        out += [
            ToolMessage(content=text if i == 0 else "See the errors above.", tool_call_id=c["id"], name=c.get("name"), status="error")
            for i, c in enumerate(calls)
        ]
        return out
    return [AIMessage(content=message_text(response) or "(empty reply)"), HumanMessage(content=text)]
