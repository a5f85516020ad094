"""Small helpers over LangChain messages shared by the nodes."""

from __future__ import annotations

from typing import Any


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
