"""A scripted chat model for unit tests (no HTTP involved).

``ScriptedChatModel`` answers from a list of ``AIMessage`` objects (or strings,
or callables ``f(messages) -> AIMessage | str``), consumed in order. Unlike the
fake models in ``langchain_core``:

* ``bind_tools`` works: it converts the tools to OpenAI tool schemas, records
  their names in ``.bound_tools`` and returns ``self.bind(tools=...)``;
* every call is recorded in ``.calls`` as ``{"messages": [...], "tools": [names]}``
  (``tools`` is what was offered to *that* call);
* each scripted message is copied with ``id=None`` (a reused id makes
  ``add_messages`` replace the earlier message) and tool calls without an id
  get a unique ``call_<n>_<k>`` id;
* streaming yields content and ``tool_call_chunks`` so the aggregated message
  has ``tool_calls`` (``stream_mode="messages"`` works);
* running out of script raises ``ScriptExhaustedError`` instead of cycling.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

__all__ = ["ScriptedChatModel", "ScriptExhaustedError"]

_WORDS = re.compile(r"\s*\S+\s*|\s+")


class ScriptExhaustedError(RuntimeError):
    """The ScriptedChatModel was called more times than it has scripted responses."""


def _tool_name(schema: Any) -> str:
    if isinstance(schema, dict):
        fn = schema.get("function")
        if isinstance(fn, dict) and "name" in fn:
            return str(fn["name"])
        if "name" in schema:
            return str(schema["name"])
    return str(getattr(schema, "name", schema))


class ScriptedChatModel(FakeMessagesListChatModel):
    """Fake chat model with tool binding, call recording and tool-call streaming.

    >>> model = ScriptedChatModel(responses=[
    ...     AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "1+1"}, "id": "c1"}]),
    ...     "The answer is 2.",
    ... ])
    """

    responses: list[Any]  # AIMessage | str | Callable[[list[BaseMessage]], AIMessage | str]
    """Scripted responses, consumed in order (no cycling)."""
    calls: list[dict[str, Any]] = Field(default_factory=list)
    """One record per model call: ``{"messages": [...], "tools": [tool names]}``."""
    bound_tools: list[str] = Field(default_factory=list)
    """Tool names from the most recent ``bind_tools`` call."""
    bind_tools_calls: list[list[str]] = Field(default_factory=list)
    """Tool names of every ``bind_tools`` call, in order."""

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    def __repr_args__(self) -> Any:
        # LangChain serializes a chat model at its first call (``_serialized``, for the callbacks);
        # a model that is not serializable is serialized as its repr. The full repr of a long
        # script costs 0.3 ms per scripted response (33 ms for 101), which a real client never
        # pays: counts only.
        yield "responses", f"<{len(self.responses)} responses>"
        yield "calls", f"<{len(self.calls)} calls>"

    @property
    def remaining(self) -> int:
        """Scripted responses not consumed yet."""
        return max(0, len(self.responses) - self.i)

    def reset(self, responses: Sequence[Any] | None = None) -> None:
        """Forget recorded calls; ``responses`` replaces the script, ``None`` rewinds it."""
        with self._lock:
            if responses is not None:
                self.responses = list(responses)
            self.i = 0
            self.calls.clear()

    # -- tools ---------------------------------------------------------------- #
    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Bind tools (any form ``convert_to_openai_tool`` accepts) like a real model."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        names = [_tool_name(t) for t in formatted]
        self.bound_tools = names
        self.bind_tools_calls.append(names)
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    # -- core ----------------------------------------------------------------- #
    def _next_message(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        with self._lock:
            n = self.i
            if n >= len(self.responses):
                last = repr(messages[-1].content)[:200] if messages else "<none>"
                raise ScriptExhaustedError(
                    f"ScriptedChatModel: script exhausted after {len(self.responses)} responses "
                    f"(call #{n + 1} has no scripted answer; last input message: {last})"
                )
            self.i = n + 1
            entry = self.responses[n]
            self.calls.append(
                {"messages": list(messages), "tools": [_tool_name(t) for t in kwargs.get("tools") or []]}
            )
        if callable(entry) and not isinstance(entry, BaseMessage):
            entry = entry(list(messages))
        if isinstance(entry, str):
            entry = AIMessage(content=entry)
        if not isinstance(entry, AIMessage):
            raise TypeError(
                f"ScriptedChatModel: response {n} must be an AIMessage, a str or a callable "
                f"returning one, got {type(entry).__name__}"
            )
        tool_calls = [
            {**tc, "id": tc.get("id") or f"call_{n + 1}_{k}"} for k, tc in enumerate(entry.tool_calls)
        ]
        update: dict[str, Any] = {"id": None, "tool_calls": tool_calls}
        if isinstance(entry, AIMessageChunk):  # normalise chunks to full messages
            entry = AIMessage(
                content=entry.content,
                tool_calls=tool_calls,
                invalid_tool_calls=entry.invalid_tool_calls,
                usage_metadata=entry.usage_metadata,
                response_metadata=entry.response_metadata,
                additional_kwargs=entry.additional_kwargs,
            )
        return entry.model_copy(update=update, deep=True)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._next_message(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._next_message(messages, kwargs)
        pieces: list[AIMessageChunk] = []
        content = message.content
        if isinstance(content, str):
            pieces.extend(AIMessageChunk(content=p) for p in _WORDS.findall(content))
        elif content:  # list-of-blocks content: one chunk
            pieces.append(AIMessageChunk(content=content))
        empty: Any = "" if isinstance(content, str) else []
        raw_calls: list[tuple[str | None, str | None, str | None]] = [
            (tc["name"], json.dumps(tc["args"]), tc["id"]) for tc in message.tool_calls
        ]
        raw_calls += [(tc.get("name"), tc.get("args"), tc.get("id")) for tc in message.invalid_tool_calls]
        for k, (name, args, call_id) in enumerate(raw_calls):
            pieces.append(
                AIMessageChunk(
                    content=empty,
                    tool_call_chunks=[{"name": name, "args": args, "id": call_id, "index": k}],
                )
            )
        last = AIMessageChunk(
            content=empty,
            chunk_position="last",
            usage_metadata=message.usage_metadata,
            response_metadata=dict(message.response_metadata or {}),
            additional_kwargs=dict(message.additional_kwargs or {}),
        )
        pieces.append(last)
        # BaseChatModel.stream/_generate_with_cache fire on_llm_new_token themselves.
        for chunk in pieces:
            yield ChatGenerationChunk(message=chunk)
