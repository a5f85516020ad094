"""The checks every model reply passes before the graphs use it (transport level).

* ``guard_openai_tool_args`` makes ``langchain-openai`` treat tool arguments that are
  valid JSON but not an object (``[1, 2]``, ``"x"``, ``42``) as an invalid tool call (it
  otherwise builds an AIMessage that pydantic rejects, and the whole run crashes);
* ``sanitize_reply`` replaces lone surrogates (unencodable text) in content and
  arguments, so saving or printing the reply cannot fail later, and clips a tool name
  longer than ``MAX_TOOL_NAME_CHARS`` (``clip_tool_name``: no tool has it, so the call
  is answered "Unknown tool", and the history and events never carry the long name);
* ``reply_problem`` maps what a garbage HTTP body raises inside the client (no
  ``choices``, a null message, HTML, invalid UTF-8, JSON nested deeper than the parser's
  recursion limit...) to one line;

The size and nesting limits of JSON read out of model text are in ``replies.parse``.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from typing import Any

from .parse import JSONLimitError, json_depth_problem

NOT_AN_OBJECT = "arguments must be a JSON object"
#: The longest tool name a reply keeps (providers accept 64 or 128 characters).
MAX_TOOL_NAME_CHARS = 128
_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_guard_lock = threading.Lock()
_guarded = False


def clean_text(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _clean(value: Any) -> Any:
    """``value`` with :func:`clean_text` applied to every string in it, dict keys included: a
    copy of its dicts and lists, however deep (a loop, not a recursion: a hostile reply may nest)."""
    if isinstance(value, str):
        return clean_text(value)
    if not isinstance(value, (dict, list)):
        return value
    top: Any = {} if isinstance(value, dict) else []
    stack = [(value, top)]
    while stack:
        source, copy = stack.pop()
        for key, item in source.items() if isinstance(source, dict) else enumerate(source):
            if isinstance(item, str):
                new: Any = clean_text(item)
            elif isinstance(item, (dict, list)):
                new = {} if isinstance(item, dict) else []
                stack.append((item, new))  # (filled later: this copy holds it already)
            else:
                new = item
            if isinstance(copy, dict):
                copy[clean_text(key) if isinstance(key, str) else key] = new
            else:
                copy.append(new)
    return top


def clean_value(value: Any) -> Any:
    """``value`` (parsed JSON) with lone surrogates replaced in every string, dict keys included:
    itself when it has none, else a copy (for JSON from other untrusted sources, e.g. MCP servers)."""
    return _clean(value) if _has_surrogate(value) else value


def _has_surrogate(*values: Any) -> bool:
    """Whether ``_clean`` would change one of ``values``: one walk over their strings, dicts and
    lists (however deep; no call per item: every reply's content and tool calls pass here).

    First one ``repr`` of them all, in C: it writes a lone surrogate (not printable) as an escape
    ``\\udXXX``, so a text without ``\\ud`` has none (nearly every reply); one with it (a
    surrogate, or a backslash the text itself holds) is walked."""
    try:
        if "\\ud" not in repr(values):
            return False
    except Exception:  # (an object whose repr fails: walked)
        pass
    stack = list(values)
    pop, push = stack.pop, stack.extend
    while stack:
        value = pop()
        if isinstance(value, str):
            if not value.isascii() and _SURROGATE.search(value) is not None:
                return True
        elif isinstance(value, dict):
            push(value.keys())
            push(value.values())
        elif isinstance(value, list):
            push(value)
    return False


def clip_tool_name(name: str) -> str:
    """``name``, or for one longer than :data:`MAX_TOOL_NAME_CHARS` a short name no tool has
    (its start in tool-name characters, ``__clipped_`` and its length), valid for providers."""
    if len(name) <= MAX_TOOL_NAME_CHARS:
        return name
    return f"{_NOT_NAME_CHARS.sub('_', name[:40])}__clipped_{len(name)}"


def _long_name(calls: list) -> bool:
    return any(len(c.get("name") or "") > MAX_TOOL_NAME_CHARS for c in calls)


def _clip_names(calls: list) -> list:
    """``calls`` with long names clipped, also where a malformed call's ``error`` quotes the name."""
    out = []
    for call in calls:
        name = call.get("name") or ""
        if len(name) > MAX_TOOL_NAME_CHARS:
            call = {**call, "name": clip_tool_name(name)}
            if isinstance(call.get("error"), str):
                call["error"] = call["error"].replace(name, call["name"])
        out.append(call)
    return out


def sanitize_reply(message: Any) -> Any:
    """``message`` with lone surrogates replaced in its content and tool calls, and tool names
    longer than :data:`MAX_TOOL_NAME_CHARS` clipped (:func:`clip_tool_name`)."""
    from langchain_core.messages import AIMessage

    if not isinstance(message, AIMessage):
        return message
    calls, invalid = list(message.tool_calls or []), list(message.invalid_tool_calls or [])
    long_names = _long_name(calls) or _long_name(invalid)
    if not long_names and not _has_surrogate(message.content, calls, invalid):  # (nearly every reply)
        return message
    if long_names:
        calls, invalid = _clip_names(calls), _clip_names(invalid)
    fields = {"content": _clean(message.content), "tool_calls": _clean(calls), "invalid_tool_calls": _clean(invalid)}
    return message.model_copy(update=fields)


def guard_openai_tool_args() -> None:
    """Make langchain-openai's reply parser turn non-object arguments into an invalid
    tool call (with ``NOT_AN_OBJECT`` as its error). Idempotent; no-op without the package."""
    global _guarded
    if _guarded:  # (every model call asks)
        return
    with _guard_lock:
        if _guarded:
            return
        _guarded = True
        try:
            from langchain_openai.chat_models import base
        except ImportError:
            return
        original = base.parse_tool_call

        @functools.wraps(original)
        def parse_tool_call(raw_tool_call: dict, *args: Any, **kwargs: Any) -> Any:
            raw_args = ((raw_tool_call or {}).get("function") or {}).get("arguments") or ""
            problem = json_depth_problem(raw_args) if isinstance(raw_args, str) else None
            if problem:
                raise JSONLimitError(f"arguments not read: {problem}")
            parsed = original(raw_tool_call, *args, **kwargs)
            if isinstance(parsed, dict) and not isinstance(parsed.get("args"), dict):
                raise ValueError(f"{NOT_AN_OBJECT} (got {type(parsed.get('args')).__name__})")
            return parsed

        base.parse_tool_call = parse_tool_call


# Exceptions a garbage reply raises inside a client while it decodes and converts the body.
_REPLY_ERRORS = (KeyError, IndexError, TypeError, AttributeError, ValueError, UnicodeError)


def reply_problem(exc: BaseException) -> str | None:
    """One line saying why the model's reply was unusable, or None for other errors."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "APIResponseValidationError" in names:
        return "the response does not have the chat-completions shape"
    if isinstance(exc, RecursionError):  # the client's json.loads of a body nested 200k deep
        return "the response is JSON nested too deeply to be read"
    if not isinstance(exc, _REPLY_ERRORS):
        return None
    text = " ".join(str(exc).split())
    if isinstance(exc, UnicodeError):
        return "the response is not valid UTF-8 text"
    if isinstance(exc, json.JSONDecodeError) or "Unexpected response type" in text:
        return "the response is not JSON (an HTML page or other text?)"
    if "choices" in text or isinstance(exc, (IndexError, KeyError)):
        return "the response has no usable 'choices'"
    if isinstance(exc, (TypeError, AttributeError)) or "NoneType" in text:
        return "the response has no usable message"
    if "validation error" in text:
        return "the response does not have the chat-completions shape"
    return f"the response could not be read ({text[:200]})"
