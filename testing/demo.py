"""The rule-based scripted model behind the offline ``smart-agent demo``.

``demo_responder`` is a ``ScriptedOpenAIServer`` responder: it looks only at the
chat-completions request it is given and decides the next step:

1. no tool result yet            -> call ``calculator`` with ``{"expression": "37*43"}``
2. last tool result is from the calculator (content X)
                                 -> call ``write_file`` with
                                    ``{"path": "answer.txt", "content": "37*43 = X\\n"}``
3. last tool result is from ``write_file``
                                 -> final answer ``"37 × 43 = X. I saved the result to answer.txt."``
                                    (or, when the write was rejected or failed, that it did
                                    not save it and why)

Which tool produced which tool message is decided by matching ``tool_call_id``
against the assistant messages' ``tool_calls`` (never by position). ``X`` is
always read from the calculator's tool message in the request. The operands are
read from the user's task (``DEMO_TASK`` asks for 37*43), so the rules also work
for a similar task such as "What is 12*7? ...".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .script import message_text, text, tool_call, tool_call_names, tool_messages

__all__ = ["DEMO_TASK", "DEMO_FILE", "demo_responder"]

DEMO_TASK = "What is 37*43? Save the result to answer.txt, then tell me."
DEMO_FILE = "answer.txt"

_PRODUCT = re.compile(r"(-?\d+(?:\.\d+)?)\s*[*x×]\s*(-?\d+(?:\.\d+)?)")


def _operands(request: Mapping[str, Any]) -> tuple[str, str]:
    """The two factors of the user's task (defaults to 37 and 43)."""
    for m in request.get("messages") or []:
        if isinstance(m, Mapping) and m.get("role") == "user":
            found = _PRODUCT.search(message_text(m.get("content")))
            if found:
                return found.group(1), found.group(2)
    return "37", "43"


def _tool_results(request: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """``(tool name or None, content)`` for each tool message, in request order."""
    names = tool_call_names(request)
    out: list[tuple[str | None, str]] = []
    for m in tool_messages(request):
        name = names.get(str(m.get("tool_call_id") or "")) or m.get("name") or None
        out.append((name, message_text(m.get("content")).strip()))
    return out


def demo_responder(request: dict[str, Any]) -> dict[str, Any]:
    """Next script entry for the demo conversation, derived from ``request`` alone."""
    a, b = _operands(request)
    expression = f"{a}*{b}"
    results = _tool_results(request)
    if not results:
        return tool_call("calculator", {"expression": expression})

    last_name, last_content = results[-1]
    calc = [content for name, content in results if name == "calculator"]
    if last_name == "calculator":
        return tool_call("write_file", {"path": DEMO_FILE, "content": f"{expression} = {last_content}\n"})
    if last_name == "write_file":
        if last_content.lower().startswith(("the user rejected", "error", "not run", "refused", "tool ", "invalid ")):
            return text(f"{a} × {b} = {calc[-1] if calc else '?'}. I did not save it: {last_content[:300]}")
        if not calc:
            return text("I saved a file, but I cannot find the calculator's result in this conversation.")
        return text(f"{a} × {b} = {calc[-1]}. I saved the result to {DEMO_FILE}.")
    return text(
        f"I got a result from an unexpected tool ({last_name or 'unknown'}): {last_content[:200]}"
    )
