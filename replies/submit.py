"""Ask for a structured reply through a "submit" tool, and find it in whatever the model sent.

The model is offered one submit tool (``submit_tool``, bound by ``bind_submit``; a model
that cannot bind tools is asked as it is and answers in text). ``find_submission`` finds
the value in the reply, whatever shape the model chose: the submit call's arguments, the
raw arguments of a malformed call, parsed structured output, or the text.
``reply_payload`` also reads the JSON out of text (fenced, bare, or with common slips), so
the graphs work with providers and local models that do not call tools reliably.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable

from ..models.messages import message_text
from .parse import ReplySyntaxError, extract_json


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


def bind_submit(model: BaseChatModel, tools: Sequence[Any], *, tool_choice: str | None = None) -> Runnable[Any, Any]:
    """``model`` with ``tools`` bound (and ``tool_choice``, e.g. a tool's name to force it,
    when given and the provider accepts it); the model itself when it cannot bind tools,
    so the reply comes as text."""
    try:
        if tool_choice is not None:
            try:
                return model.bind_tools(list(tools), tool_choice=tool_choice)
            except (ValueError, TypeError):  # this provider refuses tool_choice: offer the tools only
                pass
        return model.bind_tools(list(tools))
    except (NotImplementedError, AttributeError):
        return model


@dataclass
class Submission:
    """Where the structured value of a reply is (one of ``value`` or ``text``)."""

    value: Any = None
    """The submit call's arguments, or parsed structured output."""
    text: str | None = None
    """JSON still to be read: a malformed submit call's arguments, or the reply's text."""
    malformed: bool = False
    """``text`` holds the arguments of a submit call that were not valid JSON."""
    called: list[str] = field(default_factory=list)
    """Other tools the model called instead, in a reply without text."""


def find_submission(message: AIMessage, tool_name: str, *, accepts: Callable[[Any], bool] | None = None) -> Submission:
    """The structured value of ``message``: a ``tool_name`` call (or any call whose
    arguments ``accepts``), a malformed ``tool_name`` call, parsed output, or the text."""
    for call in message.tool_calls or []:
        args = call.get("args") or {}
        if call.get("name") == tool_name or (accepts is not None and accepts(args)):
            return Submission(value=args)
    for bad in message.invalid_tool_calls or []:
        if bad.get("name") == tool_name:
            return Submission(text=str(bad.get("args") or ""), malformed=True)
    parsed = (message.additional_kwargs or {}).get("parsed")
    if parsed:
        return Submission(value=parsed)
    text = message_text(message)
    called = sorted({c.get("name") or "?" for c in message.tool_calls or []}) if not text.strip() else []
    return Submission(text=text, called=called)


def reply_payload(message: AIMessage, tool_name: str) -> tuple[Any, str | None]:
    """``(value, None)`` from the ``tool_name`` call or the JSON in the text; else ``(None, why)``."""
    found = find_submission(message, tool_name)
    if found.text is None:
        return found.value, None
    if not found.malformed and not found.text.strip():
        called = ", ".join(found.called)
        return None, f"expected a {tool_name} call or JSON, got " + (
            f"a call to {called}" if called else "an empty reply"
        )
    try:
        return extract_json(found.text), None
    except ReplySyntaxError as exc:
        if found.malformed:
            return None, f"the {tool_name} arguments are not valid JSON ({exc})"
        return None, f"no JSON found in the reply ({exc})"
