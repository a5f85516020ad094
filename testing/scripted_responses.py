"""The scripted server's OpenAI Responses API (``POST /v1/responses``, ``scripted_openai.py``) and
its prompt cache, stdlib only.

* :func:`chat_view`: a Responses request as the chat-completions request a script reads
  (``messages`` with the conversation a ``previous_response_id`` continues, ``tools`` in the
  chat format), so every script and responder answers both APIs.
* :func:`response_body` / :func:`stream_response`: the answer as a Response object, or as its
  server-sent events (``response.created`` ... ``response.completed``).
* :class:`PrefixCache`: OpenAI-style ``cached_tokens``: the longest prefix a request shares with an
  earlier request of the same ``prompt_cache_key`` (tools first, then the messages, as JSON; 4
  characters a token), counted from 1024 tokens on, in steps of 128.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .script import message_text

__all__ = [
    "CACHE_MIN_TOKENS", "CACHE_STEP_TOKENS", "PrefixCache", "ResponseNotFound", "chat_tools", "chat_view",
    "output_message", "response_body", "stream_response",
]

CACHE_MIN_TOKENS = 1024  # OpenAI caches prompts from 1024 tokens on...
CACHE_STEP_TOKENS = 128  # ...and reports cache hits in steps of 128 tokens
CHARS_PER_TOKEN = 4  # the server's estimate (scripted_openai.py: prompt_tokens)
PREFIXES_KEPT = 64  # earlier requests compared per cache key


class ResponseNotFound(KeyError):
    """A ``previous_response_id`` the server does not hold (HTTP 404, as OpenAI answers)."""


def _role(role: Any) -> str:
    return "system" if role == "developer" else str(role or "user")


def chat_tools(tools: Any) -> list[dict[str, Any]]:
    """Responses tools (``{"type": "function", "name": ...}``) in the chat-completions form."""
    out = []
    for t in tools or []:
        if isinstance(t, Mapping) and t.get("type") == "function" and "name" in t:
            fn = {k: t[k] for k in ("name", "description", "parameters") if k in t}
            out.append({"type": "function", "function": fn})
        elif isinstance(t, Mapping):
            out.append(dict(t))
    return out


def input_messages(items: Any) -> list[dict[str, Any]]:
    """Responses ``input`` (a string or a list of items) as chat-completions messages: role
    messages, ``function_call`` items as the assistant's ``tool_calls``, ``function_call_output``
    items as ``tool`` messages; reasoning items are left out."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    for item in items or []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type") or "message"
        if kind == "message":
            messages.append({"role": _role(item.get("role")), "content": message_text(item.get("content"))})
        elif kind == "function_call":
            call = {"id": str(item.get("call_id") or item.get("id") or ""), "type": "function",
                    "function": {"name": str(item.get("name") or ""), "arguments": str(item.get("arguments") or "")}}
            last = messages[-1] if messages else None
            if last is None or last.get("role") != "assistant":
                last = {"role": "assistant", "content": None}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""),
                             "content": output if isinstance(output, str) else message_text(output)})
    return messages


def chat_view(request: Mapping[str, Any], history: list[dict[str, Any]]) -> dict[str, Any]:
    """The request as a chat-completions body: ``history`` (the conversation of its
    ``previous_response_id``, [] without one), its ``instructions`` as a system message, its
    ``input`` as messages; its tools in the chat form; its other keys as they are."""
    messages = list(history)
    if request.get("instructions"):
        messages.append({"role": "system", "content": str(request["instructions"])})
    messages += input_messages(request.get("input"))
    view = {k: v for k, v in request.items() if k not in ("input", "instructions", "tools")}
    view["messages"] = messages
    view["tools"] = chat_tools(request.get("tools"))
    return view


def output_message(content: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer as the chat-completions assistant message it stands for (kept as history)."""
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _output_items(rid: str, content: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if content or not calls:
        items.append({"type": "message", "id": f"msg_{rid[5:]}", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": content, "annotations": []}]})
    for k, c in enumerate(calls):
        items.append({"type": "function_call", "id": f"fc_{rid[5:]}_{k}", "call_id": c["id"],
                      "name": c["function"]["name"], "arguments": c["function"]["arguments"], "status": "completed"})
    return items


def responses_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Chat-completions usage (``prompt_tokens``, ``prompt_tokens_details``...) as Responses usage."""
    details = usage.get("prompt_tokens_details") or {}
    return {
        "input_tokens": usage.get("prompt_tokens", 0),
        "input_tokens_details": {"cached_tokens": details.get("cached_tokens", 0)},
        "output_tokens": usage.get("completion_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.get("total_tokens", 0),
    }


def response_body(
    rid: str, model: str, request: Mapping[str, Any], content: str, calls: list[dict[str, Any]],
    usage: Mapping[str, Any] | None, status: str = "completed",
) -> dict[str, Any]:
    """A Response object (``usage`` None: not yet known, as in ``response.created``)."""
    return {
        "id": rid, "object": "response", "created_at": int(time.time()), "status": status, "model": model,
        "output": _output_items(rid, content, calls) if status == "completed" else [],
        "parallel_tool_calls": True, "tool_choice": request.get("tool_choice") or "auto", "tools": [],
        "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
        "previous_response_id": request.get("previous_response_id"), "store": request.get("store", True),
        "text": {"format": {"type": "text"}}, "truncation": "disabled",
        "usage": responses_usage(usage) if usage is not None else None,
    }


def stream_response(
    write: Callable[[str, dict[str, Any]], None], body: dict[str, Any], words: list[str],
    pause_point: Callable[[int, str], None] = lambda _n, _text: None,
) -> None:
    """``body`` (a completed Response) as the events a streamed request gets, through
    ``write(event type, data)``: created, each output item added / its text word by word (with
    ``pause_point`` after each word) or its arguments in two halves / done, completed."""
    seq = iter(range(1_000_000))

    def send(kind: str, **data: Any) -> None:
        write(kind, {"type": kind, "sequence_number": next(seq), **data})

    send("response.created", response={**body, "status": "in_progress", "output": [], "usage": None})
    for index, item in enumerate(body["output"]):
        if item["type"] == "message":
            send("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            send("response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=part)
            sent = ""
            pause_point(0, sent)
            for count, piece in enumerate(words, 1):
                send("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                     delta=piece, logprobs=[])
                sent += piece
                pause_point(count, sent)
            text = item["content"][0]["text"]
            send("response.output_text.done", item_id=item["id"], output_index=index, content_index=0, text=text,
                 logprobs=[])
            send("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                 part={**part, "text": text})
        else:
            send("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "arguments": ""})
            args = item["arguments"]
            half = len(args) // 2
            for piece in (args[:half], args[half:]):
                if piece:
                    send("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece)
            send("response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=args)
        send("response.output_item.done", output_index=index, item=item)
    send("response.completed", response=body)


def prompt_text(view: Mapping[str, Any]) -> str:
    """What prefix caching compares: the tools, then the messages, as JSON."""
    return json.dumps(view.get("tools") or []) + json.dumps(view.get("messages") or [])


def cached_tokens(shared_chars: int, prompt_tokens: int) -> int:
    """Tokens reported cached for a prefix of ``shared_chars`` characters: none under
    :data:`CACHE_MIN_TOKENS`, else rounded down to a step of :data:`CACHE_STEP_TOKENS`, at most
    the prompt's."""
    tokens = min(shared_chars // CHARS_PER_TOKEN, prompt_tokens)
    if tokens < CACHE_MIN_TOKENS:
        return 0
    return CACHE_MIN_TOKENS + (tokens - CACHE_MIN_TOKENS) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


def shared_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    n = min(len(a), len(b))
    lo, hi = 0, n  # (binary search on slices: C-speed comparisons)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PrefixCache:
    """The prompts seen per ``prompt_cache_key`` (None: requests without one), for
    :meth:`cached`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str | None, list[str]] = {}

    def cached(self, key: str | None, text: str, prompt_tokens: int) -> tuple[int, int]:
        """``(cached tokens, shared characters)`` of a prompt against the earlier prompts of its
        key, which it then joins."""
        with self._lock:
            earlier = self._seen.setdefault(key, [])
            best = max((shared_prefix(text, e) for e in earlier), default=0)
            earlier.append(text)
            del earlier[:-PREFIXES_KEPT]
        return cached_tokens(best, prompt_tokens), best

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()
