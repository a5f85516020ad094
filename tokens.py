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
* ``compaction_target`` — where compaction brings a request back to (60 %), so
  one compaction buys several turns instead of firing again on the next one.
* ``summary_tokens`` — the size of one summary block: ``summary_token_limit``, at
  most 15 % of the limit.
* ``page_chars`` — the largest tool output a single message may carry (a quarter
  of the budget, in characters); larger outputs are archived and read back in
  pages of this size.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, convert_to_openai_messages
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

CHARS_PER_TOKEN = 4
HEADROOM = 0.9  # share of the limit a request may use in our own accounting
ENVELOPE_TOKENS = 40  # '{"model":...,"stream":...,"tool_choice":...}' around messages and tools
COMPACTION_TARGET = 0.6  # share of the limit a compacted request is brought back to
SUMMARY_SHARE = 0.15  # a summary block takes at most this share of the limit
PAGE_SHARE = 0.25  # one tool message carries at most this share of the limit

DEFAULT_CONTEXT_TOKENS = 24_000
DEFAULT_SUMMARY_TOKENS = 1_000
DEFAULT_ARCHIVE_CHARS = 2_000


class TokenCounter(Protocol):
    def __call__(self, messages: Sequence[BaseMessage], tools: Sequence[dict] | None = None) -> int: ...


def tool_schemas(tools: Sequence[BaseTool | dict] | None) -> list[dict]:
    """Tools as the JSON function schemas a chat-completions request carries."""
    return [t if isinstance(t, dict) else convert_to_openai_tool(t) for t in tools or []]


def request_json(messages: Sequence[BaseMessage], tools: Sequence[BaseTool | dict] | None = None) -> str:
    """The request's messages and tool schemas as (upper-bound-length) JSON text."""
    body: dict[str, Any] = {"messages": convert_to_openai_messages(list(messages))}
    schemas = tool_schemas(tools)
    if schemas:
        body["tools"] = schemas
    return json.dumps(body, default=str)


def approx_counter(messages: Sequence[BaseMessage], tools: Sequence[dict] | None = None) -> int:
    """The default counter: characters of the serialized request / 4, rounded up."""
    return math.ceil(len(request_json(messages, tools)) / CHARS_PER_TOKEN)


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
