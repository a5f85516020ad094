"""Token accounting for the context budget: counters and the budget's shares.

A *token counter* has the signature of ``BaseChatModel.get_num_tokens_from_messages``::

    counter(messages: Sequence[BaseMessage], tools: Sequence[dict] | None = None) -> int

so a model's own method can be passed as is. The default, :func:`approx_counter`,
needs no tokenizer: it serializes the request the way an OpenAI-compatible client
sends it (messages in chat-completions format, tools as JSON function schemas) and
counts 4 characters per token. It serializes with ``ensure_ascii`` and spaced
separators, which is never shorter than the UTF-8 body the client really sends, so
its estimate is an upper bound of ``len(body) / 4``.

The budget's shares (all derived from ``context_token_limit``):

* ``usable_tokens`` — what requests may use: 90 % of the limit minus a small
  envelope for the request's other fields (model name, flags). The 10 % headroom
  absorbs counter error and small prompt changes between prediction and request.
* ``compaction_target`` — where compaction brings a request back to (30 %), so
  one compaction buys several turns instead of firing again on the next one (and the
  recent turns it keeps, which a provider's prompt cache no longer holds after the new
  summary, stay few: docs/cost.md).
* ``summary_tokens`` — the size of one summary block: ``summary_token_limit``, at
  most 15 % of the limit.
* ``page_chars`` — the largest tool output a single message may carry (a quarter
  of the budget, in characters); larger outputs are archived and read back in
  pages of this size.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any, Generic, Protocol, TypeVar, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from ..runs.identity import IdentityCache

CHARS_PER_TOKEN = 4
HEADROOM = 0.9  # share of the limit a request may use in our own accounting
ENVELOPE_TOKENS = 40  # '{"model":...,"stream":...,"tool_choice":...}' around messages and tools
COMPACTION_TARGET = 0.3  # share of the limit a compacted request is brought back to
SUMMARY_SHARE = 0.15  # a summary block takes at most this share of the limit
PAGE_SHARE = 0.25  # one tool message carries at most this share of the limit

DEFAULT_CONTEXT_TOKENS = 24_000
DEFAULT_SUMMARY_TOKENS = 1_000
DEFAULT_ARCHIVE_CHARS = 2_000

# ``json.dumps(value, ensure_ascii=False)``: a tool call's arguments as the OpenAI format writes them.
unicode_json = json.JSONEncoder(ensure_ascii=False).encode


class TokenCounter(Protocol):
    def __call__(self, messages: Sequence[BaseMessage], tools: Sequence[dict] | None = None) -> int: ...


K = TypeVar("K")
V = TypeVar("V")


# One conversion per tool object (a registry's tools are the same objects every turn).
_tool_schema: IdentityCache[BaseTool, dict] = IdentityCache(convert_to_openai_tool, 2048)


def tool_schemas(tools: Sequence[BaseTool | dict] | None) -> list[dict]:
    """Tools as the JSON function schemas a chat-completions request carries (converted
    once per tool object: the dicts are shared, do not change them)."""
    return [t if isinstance(t, dict) else _tool_schema(t) for t in tools or []]


def request_json(messages: Sequence[BaseMessage], tools: Sequence[BaseTool | dict] | None = None) -> str:
    """The request's messages and tool schemas as (upper-bound-length) JSON text."""
    shown = [_without_call_blocks(m) if type(m) is AIMessage and isinstance(m.content, list) else m for m in messages]
    body: dict[str, Any] = {"messages": convert_to_openai_messages(shown)}
    schemas = tool_schemas(tools)
    if schemas:
        body["tools"] = schemas
    return json.dumps(body, default=str)


def _json_parts(items: list[Any]) -> tuple[int, int]:
    """``(characters, count)`` of ``items`` as elements of a JSON list."""
    return sum(len(json.dumps(item, default=str)) for item in items), len(items)


_ROLES = {AIMessage: "assistant", HumanMessage: "user", ToolMessage: "tool", SystemMessage: "system"}


def _value_len(value: Any) -> int:
    """``len(json.dumps(value, default=str))``; a string (nearly every value) straight from the
    C function ``json.dumps`` writes it with, without building an encoder for it."""
    return len(encode_basestring_ascii(value)) if type(value) is str else len(json.dumps(value, default=str))


def _call_len(call: Any) -> int:
    """One tool call as convert_to_openai_messages writes it, serialized:
    ``{"type": "function", "id": ..., "function": {"name": ..., "arguments": ...}}``."""
    function = 25 + _value_len(call["name"]) + _value_len(unicode_json(call["args"]))
    return 42 + _value_len(call["id"]) + function


def _message_parts(message: BaseMessage) -> tuple[int, int]:
    """``_json_parts(convert_to_openai_messages([message]))``. A message of the four plain kinds
    with text content (nearly every message of a thread) is measured here field by field, as
    that function builds it and ``json.dumps`` writes it (``"key": value``: the key's length + 4;
    ``, `` between fields); anything else goes through them."""
    role = _ROLES.get(type(message))
    extra, content = message.additional_kwargs, message.content
    if role is None or not isinstance(content, str) or (extra and role == "system"):
        if role == "assistant" and isinstance(content, list):  # (a Responses API reply)
            message = _without_call_blocks(message)
        return _json_parts(convert_to_openai_messages([message]))
    size, fields = 2 + 8 + len(role) + 2, 1  # {"role": "..."
    if message.name:
        size, fields = size + 8 + _value_len(message.name), fields + 1
    calls = cast(AIMessage, message).tool_calls if role == "assistant" else None
    if calls:  # "tool_calls": [call, call]
        size, fields = size + 14 + 2 * len(calls) + sum(map(_call_len, calls)), fields + 1
    if extra.get("refusal"):
        size, fields = size + 11 + _value_len(extra["refusal"]), fields + 1
    if role == "tool":
        size, fields = size + 16 + _value_len(cast(ToolMessage, message).tool_call_id), fields + 1
    size += 11 + _value_len(content)  # "content": ...
    return size + 2 * fields, 1  # (fields + 1 of them: 2 * fields for the ", " between)


def _without_call_blocks(message: BaseMessage) -> BaseMessage:
    """A Responses API reply without the ``function_call`` blocks of its content: they are its
    ``tool_calls``, which are measured as such (and sent once)."""
    content = message.content
    kept = [b for b in content if not (isinstance(b, dict) and b.get("type") == "function_call")]
    return message if len(kept) == len(content) else message.model_copy(update={"content": kept})


# Per message: its chat-completions form as JSON elements (one message may become several).
_message_json: IdentityCache[BaseMessage, tuple[int, int]] = IdentityCache(_message_parts, 16384)
# Per tool (a tool object, or a schema dict as such): its schema's JSON element.
_tool_json: IdentityCache[BaseTool | dict, tuple[int, int]] = IdentityCache(
    lambda t: _json_parts(tool_schemas([t])), 2048
)
_EMPTY_BODY = len(json.dumps({"messages": []}))
_TOOLS_KEY = len(json.dumps({"messages": [], "tools": []})) - _EMPTY_BODY


def _cached(cache: IdentityCache[K, V], objs: Sequence[K]) -> Iterator[V]:
    """``cache(obj)`` for each of ``objs`` (the lookup inlined: a turn looks up every message)."""
    data = cache.entries
    for obj in objs:
        hit = data.get(id(obj))
        yield hit.value if hit is not None and hit() is obj else cache(obj)


def _sum_parts(parts: Iterator[tuple[int, int]], chars: int = 0, count: int = 0) -> tuple[int, int]:
    for size, n in parts:
        chars, count = chars + size, count + n
    return chars, count


S = TypeVar("S")


class PrefixFold(Generic[S]):
    """``fold(items)``: ``step`` applied over ``items`` from ``start``, remembered for the runs
    of items (by identity) folded before. A conversation grows at its end, so this turn's
    messages start with a run folded for the previous turn: only the items after it are
    stepped through (the runs keep their items, so no other object can take one of their ids)."""

    def __init__(self, step: Callable[[S, Any], S], start: S, size: int = 8) -> None:
        self.step, self.start, self.size = step, start, size
        self._runs: list[tuple[tuple[int, ...], list[Any], S]] = []
        self._lock = threading.Lock()

    def fold(self, items: Sequence[Any], ids: tuple[int, ...] | None = None) -> S:
        """(``ids``: the items' ids, when the caller has them.)"""
        if ids is None:
            ids = tuple(map(id, items))
        n = len(ids)
        best: tuple[tuple[int, ...], list[Any], S] | None = None
        for run in reversed(self._runs):  # the latest run that starts ``items`` (usually the last one)
            k = len(run[0])
            if k <= n and (ids if k == n else ids[:k]) == run[0]:
                best = run
                break
        if best is not None and len(best[0]) == n:  # folded before, whole
            return best[2]
        value, start = (best[2], len(best[0])) if best is not None else (self.start, 0)
        for item in items[start:]:
            value = self.step(value, item)
        with self._lock:
            runs = self._runs
            # A longer run replaces the one it starts with (found by identity: comparing runs
            # by value would compare their id tuples, a conversation's length each).
            at = None
            if best is not None:
                for i in range(len(runs) - 1, -1, -1):
                    if runs[i] is best:
                        at = i
                        break
            if at is not None:
                del runs[at]
            elif len(runs) >= self.size:
                del runs[0]
            runs.append((ids, list(items), value))
        return value


# What a run of messages folds to (:data:`_message_runs`): its chat-completions JSON elements'
# ``characters`` and ``elements``, the ids of the tool calls its last AI message left open, and
# whether a tool result answered no call of the AI message before it (an orphan).
Folded = tuple[int, int, frozenset, bool]
_NO_IDS: frozenset = frozenset()


def _add_message(total: Folded, message: BaseMessage) -> Folded:
    hit = _message_json.entries.get(id(message))
    size, n = hit.value if hit is not None and hit() is message else _message_json(message)
    chars, count, open_ids, orphan = total
    if isinstance(message, ToolMessage):
        orphan = orphan or message.tool_call_id not in open_ids
    elif isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
        open_ids = frozenset(c.get("id") for c in (*message.tool_calls, *message.invalid_tool_calls))
    elif open_ids:
        open_ids = _NO_IDS
    return chars + size, count + n, open_ids, orphan


# Runs of messages folded once for both questions a turn asks of its conversation (the route
# measuring the next request, the agent node checking it for stray tool results): one pass
# over the messages each turn added, and the other question finds the run folded whole.
_message_runs: PrefixFold[Folded] = PrefixFold(_add_message, (0, 0, _NO_IDS, False))


def measure_message(message: BaseMessage) -> None:
    """Measure ``message`` now (its JSON length, remembered for the requests that will carry it):
    a tool's worker thread measures the result message it built."""
    _message_json(message)


def has_orphan_results(messages: Sequence[BaseMessage], ids: tuple[int, ...] | None = None) -> bool:
    """Whether a tool result of ``messages`` has no AI tool call right before it (``ids``: theirs)."""
    return _message_runs.fold(messages, ids)[3]


@functools.lru_cache(maxsize=256)
def _system_json(text: str) -> int:
    return _json_parts(convert_to_openai_messages([SystemMessage(content=text)]))[0]


def request_json_chars(messages: Sequence[BaseMessage], tools: Sequence[BaseTool | dict] | None = None) -> int:
    """``len(request_json(messages, tools))``, from each message's and each tool's JSON length,
    computed once per object: a turn measures only the messages that are new since the last one.
    (The first message, a system prompt built for each request, is measured apart.)"""
    head = messages[0] if messages else None
    if type(head) is SystemMessage and isinstance(head.content, str) and not head.name and not head.additional_kwargs:
        return system_request_chars(head.content, messages[1:], tools)
    chars, count = _sum_parts(_cached(_message_json, messages[:1]))
    return _request_chars(chars, count, messages[1:], tools)


def system_request_chars(
    system: str,
    messages: Sequence[BaseMessage],
    tools: Sequence[BaseTool | dict] | None = None,
    ids: tuple[int, ...] | None = None,
) -> int:
    """``request_json_chars([SystemMessage(system), *messages], tools)``, without building the
    system message (rebuilt for every request, the same text: measured once per text)."""
    return _request_chars(_system_json(system), 1, messages, tools, ids)


def _request_chars(
    chars: int,
    count: int,
    rest: Sequence[BaseMessage],
    tools: Sequence[BaseTool | dict] | None,
    ids: tuple[int, ...] | None = None,
) -> int:
    """The request's JSON length: ``chars`` and ``count`` elements of its head, then ``rest``."""
    if rest:
        more, n, _, _ = _message_runs.fold(rest, ids)
        chars, count = chars + more, count + n
    schemas, tools_n = _sum_parts(_cached(_tool_json, tools or ()))
    size = _EMPTY_BODY + chars + 2 * max(0, count - 1)  # ", " between a list's elements
    return size + (_TOOLS_KEY + schemas + 2 * (tools_n - 1) if tools_n else 0)


def approx_counter(messages: Sequence[BaseMessage], tools: Sequence[dict] | None = None) -> int:
    """The default counter: characters of the serialized request / 4, rounded up."""
    return math.ceil(request_json_chars(messages, tools) / CHARS_PER_TOKEN)


def text_counter(count_text: Callable[[str], int]) -> TokenCounter:
    """A counter from a text tokenizer, e.g. ``text_counter(lambda s: len(enc.encode(s)))``
    with a tiktoken encoding: it counts the same serialized request."""

    def counter(messages: Sequence[BaseMessage], tools: Sequence[dict] | None = None) -> int:
        return int(count_text(request_json(messages, tools)))

    return counter


def resolve_counter(counter: Any = None) -> TokenCounter:
    """``None`` → :func:`approx_counter`; a chat model → its ``get_num_tokens_from_messages``;
    any other callable is used as a :class:`TokenCounter`."""
    if counter is None:
        return approx_counter
    method = getattr(counter, "get_num_tokens_from_messages", None)
    if method is not None and not isinstance(counter, type):
        return lambda messages, tools=None: int(method(list(messages), tools=tool_schemas(tools) or None))
    if callable(counter):
        return counter
    raise TypeError(f"token_counter must be a callable or a chat model, got {type(counter).__name__}")


def count_request(
    counter: TokenCounter, messages: Sequence[BaseMessage], tools: Sequence[BaseTool | dict] | None = None
) -> int:
    """Tokens of a whole request (system prompt and messages, tool schemas, envelope)."""
    return int(counter(list(messages), tool_schemas(tools) or None)) + ENVELOPE_TOKENS


def count_messages(counter: TokenCounter, messages: Sequence[BaseMessage]) -> int:
    """Tokens the messages add to a request (no envelope, no tools)."""
    if not messages:
        return 0
    return max(0, int(counter(list(messages), None)) - int(counter([], None)))


# -- the budget's shares --------------------------------------------------------
def usable_tokens(limit: int) -> int:
    """What one request may use in our own accounting (the rest is headroom)."""
    return max(1, int(limit * HEADROOM) - ENVELOPE_TOKENS)


def compaction_target(limit: int) -> int:
    return max(1, int(limit * COMPACTION_TARGET))


def summary_tokens(limit: int, summary_token_limit: int) -> int:
    return max(50, min(int(summary_token_limit), int(limit * SUMMARY_SHARE)))


def page_chars(limit: int) -> int:
    """Largest text (in characters) one tool message should carry."""
    return max(500, int(limit * PAGE_SHARE * CHARS_PER_TOKEN))


def archive_threshold(limit: int, archive_threshold_chars: int) -> int:
    """Tool outputs longer than this are archived (0: archiving is off)."""
    if not archive_threshold_chars:
        return 0
    return max(200, min(int(archive_threshold_chars), page_chars(limit)))
