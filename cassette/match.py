"""Which recorded request answers a new one: normalization and the two match keys.

Pure functions over request bodies (parsed JSON), no I/O.

* :func:`endpoint` - the URL path without its API prefix (``/v1/chat/completions`` ->
  ``chat/completions``), so a cassette recorded against one base URL replays against another.
* :func:`normalize_request` - the body without volatile fields (:data:`VOLATILE_FIELDS`), its
  messages' ids (``id``, ``tool_call_id``, ``tool_use_id``) renamed ``id-1``, ``id-2``... in order
  of first appearance (a tool call and its result stay paired), tool-call argument strings that
  hold JSON re-serialized canonically.
* :func:`canonical` - sorted keys, no spaces, UTF-8 text: one string per value.
* :func:`exact_key` - hash of endpoint + canonical normalized body.
* :func:`tolerant_key` - hash of what decides a conversation's next turn but not of the text
  that changes between runs of the same work: endpoint, ``model``, ``stream``, the names of the
  tools offered, ``tool_choice``, ``response_format``, and every message's role, user and assistant
  text and tool calls (names and arguments). System and developer messages' text (prompts, recalled
  memories, dates) and tool results' text (paths, archive ids) are left out.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: Top-level request fields that change between runs of the same work, or only tune the
#: transport: dropped before matching.
VOLATILE_FIELDS = frozenset(
    {"stream_options", "user", "metadata", "prompt_cache_key", "safety_identifier", "store", "service_tier"}
)
#: Keys, inside ``messages``, whose string values are ids chosen by a client or a provider.
ID_FIELDS = frozenset({"id", "tool_call_id", "tool_use_id"})
#: Roles whose text the tolerant match ignores (system prompts; tool results).
_SILENT_ROLES = frozenset({"system", "developer", "tool"})
#: Fields of the request the tolerant match keeps besides the messages.
_TOLERANT_FIELDS = ("model", "stream", "tool_choice", "response_format")


def endpoint(path: str) -> str:
    """``path`` without a leading ``.../v1/`` prefix and surrounding slashes."""
    path = path.split("?", 1)[0]
    if "/v1/" in path:
        path = path.split("/v1/", 1)[1]
    return path.strip("/")


def canonical(value: Any) -> str:
    """Canonical JSON: sorted keys, compact separators, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _canonical_arguments(text: str) -> str:
    try:
        return canonical(json.loads(text))
    except (ValueError, RecursionError):
        return text


def _rename_ids(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, list):
        return [_rename_ids(v, ids) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in ID_FIELDS and isinstance(item, str):
            out[key] = ids.setdefault(item, f"id-{len(ids) + 1}")
        elif key == "arguments" and isinstance(item, str):
            out[key] = _canonical_arguments(item)
        else:
            out[key] = _rename_ids(item, ids)
    return out


def normalize_request(body: Any) -> Any:
    """``body`` as the exact match compares it (a body that is not a JSON object: unchanged)."""
    if not isinstance(body, dict):
        return body
    out = {k: v for k, v in body.items() if k not in VOLATILE_FIELDS}
    if isinstance(out.get("messages"), list):
        out["messages"] = _rename_ids(out["messages"], {})
    return out


def _digest(path: str, value: Any) -> str:
    return hashlib.sha256(f"{endpoint(path)}\n{canonical(value)}".encode()).hexdigest()


def exact_key(path: str, body: Any) -> str:
    """The exact-match key of a request to ``path`` with JSON ``body``."""
    return _digest(path, normalize_request(body))


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            fn = tool.get("function")
            names.append(str(fn.get("name") if isinstance(fn, dict) else tool.get("name")))
    return sorted(names)


def _tolerant_content(content: Any) -> Any:
    """A message's content without tool results' text (Anthropic ``tool_result`` blocks)."""
    if not isinstance(content, list):
        return content
    return [
        {k: v for k, v in block.items() if k != "content"}
        if isinstance(block, dict) and block.get("type") == "tool_result" else block
        for block in content
    ]


def tolerant_view(body: Any) -> Any:
    """What the tolerant match compares (see the module docstring)."""
    body = normalize_request(body)
    if not isinstance(body, dict):
        return body
    view: dict[str, Any] = {k: body[k] for k in _TOLERANT_FIELDS if k in body}
    view["tools"] = _tool_names(body.get("tools"))
    messages = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            messages.append(message)
            continue
        role = message.get("role")
        kept: dict[str, Any] = {"role": role}
        if role not in _SILENT_ROLES:
            kept["content"] = _tolerant_content(message.get("content"))
        if message.get("tool_calls"):
            kept["tool_calls"] = [
                call.get("function", call) if isinstance(call, dict) else call for call in message["tool_calls"]
            ]
        messages.append(kept)
    view["messages"] = messages
    return view


def tolerant_key(path: str, body: Any) -> str:
    """The tolerant-match key of a request to ``path`` with JSON ``body``."""
    return _digest(path, tolerant_view(body))


def describe_request(path: str, body: Any) -> str:
    """One line naming a request: endpoint, model, message count and the last user text."""
    if not isinstance(body, dict):
        return f"{endpoint(path)} (a body that is not a JSON object)"
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last_user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
    if isinstance(last_user, list):  # content blocks: their text
        last_user = " ".join(str(b.get("text", "")) for b in last_user if isinstance(b, dict))
    text = " ".join(str(last_user or "").split())
    text = text if len(text) <= 60 else text[:57] + "..."
    stream = ", streamed" if body.get("stream") else ""
    model = body.get("model")
    return f"{endpoint(path)} model={model!s} with {len(messages)} messages{stream}, last user message {text!r}"
