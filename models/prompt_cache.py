"""Prompt caching and stateful calls: what :func:`models.invoke_model` adds to a request
(docs/cost.md; settings in ``policies/prompt_cache.py``).

* **Cache hints.** Every request of an OpenAI model (``ChatOpenAI``) carries a
  ``prompt_cache_key`` derived from the run's thread (:func:`thread_cache_key`: a hash, the
  thread id itself is not sent; the top-level run's thread, so a run's nested agents share it).
  An Anthropic model (``langchain-anthropic``) gets cache breakpoints: its system prompt (which
  caches the tools too: they come before it), the last message that ends a stable prefix (a
  compaction summary, :data:`CACHE_BREAKPOINT`) and, through the model's own ``cache_control``
  keyword, the end of the conversation.
* **Stateful calls.** An OpenAI model on the Responses API (``use_responses_api``, the
  ``responses_api`` setting) sends a request whose conversation continues an earlier exchange
  of this process - the earlier request, then its reply, exactly as they were - as that reply's
  ``previous_response_id`` and only the messages after it (:meth:`Chains.plan`). A history that
  was compacted, edited, or behind another system prompt is sent whole. The two-phase action call
  continues its reasoning call (:func:`continuing`): its input is the reasoning call's result.
  A provider that no longer has the response (HTTP 404) gets the whole conversation
  (:func:`is_lost_response`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from ..runs.identity import IdentityCache

__all__ = [
    "CACHE_BREAKPOINT", "CACHE_CONTROL", "Continuation", "Prepared", "chat_model_of", "continuing",
    "is_lost_response", "mark_breakpoint", "prepare_request", "remember_reply", "thread_cache_key",
]

#: ``additional_kwargs`` key of a message that ends a stable prefix of the conversation (a
#: compaction summary, history/digest.py): Anthropic requests put a cache breakpoint on it.
CACHE_BREAKPOINT = "smart_agent_cache_breakpoint"
#: Anthropic's cache breakpoint (5 minutes).
CACHE_CONTROL = {"type": "ephemeral"}
#: Exchanges (a request and the reply it got) remembered for chaining, the most recent ones.
EXCHANGES_KEPT = 512


def mark_breakpoint(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``additional_kwargs`` that also mark their message as the end of a stable prefix."""
    return {**kwargs, CACHE_BREAKPOINT: True}


def thread_cache_key(thread_id: Any) -> str | None:
    """The ``prompt_cache_key`` of a thread: a hash of its id (None without one)."""
    if thread_id is None or str(thread_id) == "":
        return None
    return "smart-agent-" + hashlib.sha256(f"smart-agent/thread/{thread_id}".encode()).hexdigest()[:32]


def _config_thread() -> Any:
    from langgraph.config import get_config

    try:
        return (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:  # outside a graph run
        return None


def run_cache_key() -> str | None:
    """The cache key of the current run: its root meter's (usage.py: the top-level run, which
    nested agents share), set from the thread of the first model call that asks; else the
    current graph run's thread's."""
    from .usage import current_meter

    meter = current_meter()
    if meter is None:
        return thread_cache_key(_config_thread())
    root = meter.root
    if root.cache_key is None:
        root.cache_key = thread_cache_key(_config_thread()) or ""
    return root.cache_key or None


def _hints_on() -> bool:
    """The current run's ``prompt_cache`` setting (on outside a run)."""
    from langgraph.runtime import get_runtime

    try:
        ctx = get_runtime().context
    except (RuntimeError, LookupError, AttributeError):
        return True
    value = ctx.get("prompt_cache", True) if isinstance(ctx, Mapping) else getattr(ctx, "prompt_cache", True)
    return value is not False


# --------------------------------------------------------------------------- models
def chat_model_of(runnable: Any) -> BaseChatModel | None:
    """The chat model a runnable invokes with the keywords it is invoked with: itself, the model of
    a binding (``bind_tools``, ``with_config``) or of a sequence's first step; None otherwise."""
    for _ in range(8):
        if isinstance(runnable, BaseChatModel):
            return runnable
        inner = getattr(runnable, "bound", None)  # RunnableBinding
        if inner is None:
            inner = getattr(runnable, "first", None)  # RunnableSequence: its first step gets the keywords
        if inner is None:
            return None
        runnable = inner
    return None


def _family(model: BaseChatModel | None) -> str | None:
    """"openai" (``ChatOpenAI``), "anthropic" (``ChatAnthropic``), or None."""
    if model is None:
        return None
    openai = sys.modules.get("langchain_openai")
    if openai is not None and isinstance(model, openai.ChatOpenAI):
        return "openai"
    anthropic = sys.modules.get("langchain_anthropic")
    if anthropic is not None and isinstance(model, anthropic.ChatAnthropic):
        return "anthropic"
    return None


def _stateful(model: BaseChatModel) -> bool:
    """An OpenAI model that sends Responses API requests its provider keeps (``store`` not false)."""
    return getattr(model, "use_responses_api", None) is True and getattr(model, "store", None) is not False


def _endpoint(model: BaseChatModel) -> tuple[str, str]:
    """Where a response id is valid: the model's service and name."""
    return str(getattr(model, "openai_api_base", None) or ""), str(getattr(model, "model_name", None) or "")


# --------------------------------------------------------------------------- fingerprints
def _fingerprint(message: BaseMessage) -> str:
    """What a provider gets of a message: its type, content, tool calls and tool call id, hashed."""
    calls = [(c.get("name"), c.get("args"), c.get("id")) for c in getattr(message, "tool_calls", None) or []]
    data = [message.type, message.content, calls, getattr(message, "tool_call_id", None)]
    return hashlib.sha1(json.dumps(data, sort_keys=True, default=str).encode(), usedforsecurity=False).hexdigest()


_prints: IdentityCache[BaseMessage, str] = IdentityCache(_fingerprint, 8192)


def fingerprints(messages: Sequence[BaseMessage]) -> tuple[str, ...]:
    return tuple(_prints(m) for m in messages)


def response_id(message: Any) -> str | None:
    """The Responses API id of a reply (``resp_...``), or None."""
    if not isinstance(message, AIMessage):
        return None
    rid = (message.response_metadata or {}).get("id") or message.id
    return rid if isinstance(rid, str) and rid.startswith("resp_") else None


@dataclass(frozen=True)
class Exchange:
    """A request sent to ``endpoint`` (its messages' fingerprints) and its reply's fingerprint."""

    endpoint: tuple[str, str]
    request: tuple[str, ...]
    reply: str


@dataclass(frozen=True)
class Continuation:
    """The next request continues ``reply`` (an answer to ``request``) with ``then``: the
    two-phase action call after its reasoning call (nodes/reasoning.py)."""

    request: list[BaseMessage]
    reply: AIMessage
    then: list[BaseMessage]


_CONTINUATION: ContextVar[Continuation | None] = ContextVar("smart_agent_continuation", default=None)


@contextlib.contextmanager
def continuing(continuation: Continuation | None) -> Iterator[None]:
    """While the block runs, a request whose conversation (after its system prompt) is the one of
    ``continuation.request`` is sent as ``continuation.then`` chained to ``continuation.reply``."""
    token = _CONTINUATION.set(continuation)
    try:
        yield
    finally:
        _CONTINUATION.reset(token)


class Chains:
    """The exchanges of this process by reply id, for :meth:`plan` (the most recent
    :data:`EXCHANGES_KEPT`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._exchanges: OrderedDict[str, Exchange] = OrderedDict()

    def remember(self, endpoint: tuple[str, str], request: Sequence[BaseMessage], reply: Any) -> None:
        rid = response_id(reply)
        if rid is None:
            return
        exchange = Exchange(endpoint, fingerprints(request), _prints(reply))
        with self._lock:
            self._exchanges[rid] = exchange
            self._exchanges.move_to_end(rid)
            while len(self._exchanges) > EXCHANGES_KEPT:
                self._exchanges.popitem(last=False)

    def plan(
        self, endpoint: tuple[str, str], messages: list[BaseMessage]
    ) -> tuple[str, list[BaseMessage], list[BaseMessage]] | None:
        """``(previous_response_id, messages to send, the whole conversation)`` when ``messages``
        continue an exchange, else None. Only the last reply of ``messages`` is a candidate: the
        messages before it must be that exchange's request, the reply must be unchanged, and
        something must follow it."""
        continuation = _CONTINUATION.get()
        if continuation is not None:
            planned = self._continue(endpoint, messages, continuation)
            if planned is not None:
                return planned
        last = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None)
        if last is None or last == len(messages) - 1:
            return None
        rid = response_id(messages[last])
        if rid is None:
            return None
        with self._lock:
            exchange = self._exchanges.get(rid)
        if exchange is None or exchange.endpoint != endpoint or len(exchange.request) != last:
            return None
        if _prints(messages[last]) != exchange.reply or fingerprints(messages[:last]) != exchange.request:
            return None  # compacted, edited, or another system prompt: the provider's conversation differs
        return rid, messages[last + 1 :], messages

    def _continue(
        self, endpoint: tuple[str, str], messages: list[BaseMessage], c: Continuation
    ) -> tuple[str, list[BaseMessage], list[BaseMessage]] | None:
        rid = response_id(c.reply)
        if rid is None or not c.then:
            return None
        with self._lock:
            exchange = self._exchanges.get(rid)
        if exchange is None or exchange.endpoint != endpoint or exchange.request != fingerprints(c.request):
            return None
        if fingerprints(messages[1:]) != fingerprints(c.request[1:]):
            return None  # not the conversation the reasoning call had (another cut, another turn)
        return rid, list(c.then), [*c.request, c.reply, *c.then]


_chains = Chains()


# --------------------------------------------------------------------------- requests
@dataclass
class Prepared:
    """A request as it is sent: ``messages``, with ``kwargs`` for ``ainvoke``; ``whole``: the
    conversation it stands for (the same messages, unless chained), ``chained``: whether it
    continues a response (then ``unchained`` are the keywords to send ``whole`` without it)."""

    messages: list[BaseMessage]
    kwargs: dict[str, Any] = field(default_factory=dict)
    whole: list[BaseMessage] = field(default_factory=list)
    chained: bool = False
    model: BaseChatModel | None = None

    @property
    def unchained(self) -> dict[str, Any]:
        return {k: v for k, v in self.kwargs.items() if k != "previous_response_id"}


def prepare_request(runnable: Any, messages: list[BaseMessage]) -> Prepared:
    """The request ``runnable`` gets for ``messages``: with the run's cache hints and, for a
    stateful OpenAI model, chained to the response its conversation continues."""
    model = chat_model_of(runnable)
    family = _family(model)
    if family is None or model is None:
        return Prepared(messages, whole=messages)
    cache = _hints_on()
    if family == "anthropic":
        if not cache:
            return Prepared(messages, whole=messages)
        return Prepared(anthropic_breakpoints(messages), {"cache_control": dict(CACHE_CONTROL)}, messages)
    kwargs: dict[str, Any] = {}
    key = run_cache_key() if cache else None
    if key:
        kwargs["prompt_cache_key"] = key
    if _stateful(model):
        planned = _chains.plan(_endpoint(model), messages)
        if planned is not None:
            rid, tail, whole = planned
            return Prepared(tail, {**kwargs, "previous_response_id": rid}, whole, chained=True, model=model)
    return Prepared(messages, kwargs, messages, model=model)


def remember_reply(prepared: Prepared, reply: Any) -> None:
    """After a reply to a stateful model: remember the exchange, so a later request can chain to it."""
    model = prepared.model
    if model is None or not _stateful(model):
        return
    raw = reply.get("raw") if isinstance(reply, dict) and "raw" in reply else reply
    _chains.remember(_endpoint(model), prepared.whole, raw)


def can_continue(runnable: Any) -> bool:
    """Whether a reply of ``runnable`` can be continued by a chained request (:class:`Continuation`)."""
    model = chat_model_of(runnable)
    return model is not None and _family(model) == "openai" and _stateful(model)


def is_lost_response(exc: BaseException) -> bool:
    """The provider no longer has the ``previous_response_id`` (HTTP 404 "previous response ...
    not found")."""
    text = str(exc).lower()
    return getattr(exc, "status_code", None) == 404 and "previous" in text and "not found" in text or (
        "previous_response_not_found" in text
    )


def anthropic_breakpoints(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with cache breakpoints on the system prompt and the last message marked
    :data:`CACHE_BREAKPOINT` (copies; the originals are left as they are)."""
    out = list(messages)
    mark = next((i for i in range(len(out) - 1, 0, -1) if out[i].additional_kwargs.get(CACHE_BREAKPOINT)), None)
    for i in (0, mark):
        if i is None or i >= len(out):
            continue
        if i == 0 and not isinstance(out[0], SystemMessage):
            continue
        out[i] = _with_breakpoint(out[i])
    return out


def _with_breakpoint(message: BaseMessage) -> BaseMessage:
    content = message.content
    if isinstance(content, str):
        if not content:
            return message
        blocks: list[Any] = [{"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        blocks = [*content[:-1], {**content[-1], "cache_control": dict(CACHE_CONTROL)}]
    else:
        return message
    return message.model_copy(update={"content": blocks})
