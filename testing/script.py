"""Script entries for the scripted OpenAI-compatible server (``scripted_server.py``) and
readers of the chat-completions requests it receives: what a script or a rule-based
responder (``demo.py``) is written with, and the checks of a script's entries. Stdlib only."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "ScriptEntry", "check_entry", "error", "last_tool_message", "message_text", "text", "tool_call",
    "tool_call_names", "tool_calls", "tool_messages", "validate_script",
]

ScriptEntry = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]] | str


# --------------------------------------------------------------------------- #
# Script-entry constructors
# --------------------------------------------------------------------------- #
def text(content: str, **kw: Any) -> dict[str, Any]:
    """A plain assistant reply. ``kw`` are entry options (``delay_s`` ...)."""
    return {"content": content, **kw}


def tool_call(
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    id: str | None = None,
    content: str = "",
    **kw: Any,
) -> dict[str, Any]:
    """A reply with a single tool call. ``kw`` are entry options (``delay_s`` ...)."""
    args: Any = arguments if isinstance(arguments, str) else dict(arguments or {})
    call: dict[str, Any] = {"name": name, "arguments": args}
    if id is not None:
        call["id"] = id
    return {"tool_calls": [call], "content": content, **kw}


def tool_calls(
    calls: Iterable[Mapping[str, Any] | tuple[str, Any]],
    *,
    content: str = "",
    **kw: Any,
) -> dict[str, Any]:
    """A reply with several (parallel) tool calls.

    Each call is ``{"name": ..., "arguments": {...}, "id": optional}`` or a
    ``(name, arguments)`` tuple.
    """
    out = []
    for c in calls:
        if isinstance(c, tuple):
            name, args = c
            out.append({"name": name, "arguments": args if args is not None else {}})
        else:
            out.append(dict(c))
    return {"tool_calls": out, "content": content, **kw}


def error(
    status: int,
    message: str,
    *,
    type: str | None = None,
    code: str | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """An HTTP error answer with an OpenAI-shaped error body."""
    err: dict[str, Any] = {"status": status, "message": message}
    if type is not None:
        err["type"] = type
    if code is not None:
        err["code"] = code
    return {"error": err, **kw}


# --------------------------------------------------------------------------- #
# Request readers
# --------------------------------------------------------------------------- #
def message_text(content: Any) -> str:
    """Flatten an OpenAI message ``content`` (str, list of parts, None) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, Mapping) and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "".join(parts)
    return str(content)


def tool_messages(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """All ``role == "tool"`` messages of a chat-completions request, in order."""
    return [m for m in request.get("messages") or [] if isinstance(m, Mapping) and m.get("role") == "tool"]


def last_tool_message(request: Mapping[str, Any]) -> str | None:
    """Text content of the last tool message in the request, or ``None``."""
    msgs = tool_messages(request)
    return message_text(msgs[-1].get("content")) if msgs else None


def tool_call_names(request: Mapping[str, Any]) -> dict[str, str]:
    """Map ``tool_call_id -> tool name`` from the assistant messages' ``tool_calls``."""
    names: dict[str, str] = {}
    for m in request.get("messages") or []:
        if not isinstance(m, Mapping) or m.get("role") != "assistant":
            continue
        for tc in m.get("tool_calls") or []:
            if isinstance(tc, Mapping) and tc.get("id"):
                fn = tc.get("function") or {}
                names[str(tc["id"])] = str(fn.get("name", ""))
    return names


# --------------------------------------------------------------------------- #
# Checks
# --------------------------------------------------------------------------- #
def check_entry(e: Any, where: str) -> dict[str, Any]:
    """A script entry (dict or string shorthand) as a dict, or a one-line error naming ``where``."""
    if isinstance(e, str):
        return {"content": e}
    if not isinstance(e, Mapping):
        raise TypeError(f"scripted server: {where} must be a dict, got {type(e).__name__}")
    if not ({"content", "tool_calls", "error"} & set(e)):
        raise ValueError(f"scripted server: {where} needs 'content', 'tool_calls' or 'error': {e!r}")
    if "error" in e and not isinstance(e["error"], Mapping):
        raise ValueError(f"scripted server: {where}: 'error' must be a dict")
    for k, tc in enumerate(e.get("tool_calls") or []):
        if not isinstance(tc, Mapping) or not tc.get("name"):
            raise ValueError(f"scripted server: {where}: tool call {k} needs a 'name': {tc!r}")
    return dict(e)


def validate_script(script: Iterable[ScriptEntry] | None) -> list[ScriptEntry]:
    """The script as a list, its dict entries checked (callables and strings pass as they are)."""
    entries = list(script or [])
    for i, e in enumerate(entries):
        if callable(e) or isinstance(e, str):
            continue
        check_entry(e, f"script entry {i}")
    return entries
