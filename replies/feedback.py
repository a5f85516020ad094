"""Send a rejected structured reply back to the model with the reasons.

Every tool call in the history needs its tool result before the next model turn, so
a rejected reply that called tools is answered with one error ``ToolMessage`` per call
(the first one carries the errors); a reply without calls is followed by a user
message with the errors.
"""

from __future__ import annotations

from collections.abc import Iterable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ..models.messages import message_text

NOT_ACCEPTED = "Your reply was not accepted:\n{errors}\nAnswer again in the requested format."
SEE_ABOVE = "See the errors above."


def error_list(errors: Iterable[str]) -> str:
    """One ``- error`` line per error."""
    return "\n".join(f"- {e}" for e in errors)


def feedback(
    response: AIMessage, errors: list[str], *, text: str | None = None, empty: str = "(empty reply)"
) -> list[BaseMessage]:
    """The rejected reply and ``text`` (default: ``NOT_ACCEPTED`` with the errors), shaped
    so every provider accepts the history; ``empty`` stands for a reply without text."""
    text = NOT_ACCEPTED.format(errors=error_list(errors)) if text is None else text
    calls = list(response.tool_calls or [])
    if calls:
        out: list[BaseMessage] = [AIMessage(content=message_text(response), tool_calls=calls)]
        out += [
            ToolMessage(content=text if i == 0 else SEE_ABOVE, tool_call_id=c["id"], name=c.get("name"), status="error")
            for i, c in enumerate(calls)
        ]
        return out
    return [AIMessage(content=message_text(response) or empty), HumanMessage(content=text)]
