"""A model-written summary: the history rendered as a bounded transcript, and the
summary request (itself within the budget, sent like every other model call)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable

from ..models.chat import Fallback, invoke_model, rebind_all
from ..models.messages import message_text as text_of
from ..models.messages import pending_tool_calls
from ..models.tokens import CHARS_PER_TOKEN, TokenCounter, count_request
from ..sessions.archive import clip_text
from .digest import args_text, summary_body
from .markers import archived_meta, is_summary

SUMMARY_TAGS = ["nostream", "smart_agent:summary"]

SUMMARY_SYSTEM_PROMPT = (
    "You compact the working history of an AI agent so it can continue its task with less "
    "context. Write a faithful, dense summary of the history you are given: what was done, "
    "every fact, number, name, path and result the task may still need, decisions taken, "
    "errors met, and what remains open. Mention execution ids (ex_...) next to what they "
    "contain. Do not invent anything; do not address the user; no preamble."
)


def render(m: BaseMessage) -> str:
    """One message as transcript text."""
    if is_summary(m):
        return "EARLIER SUMMARY: " + summary_body(m)
    if isinstance(m, HumanMessage):
        return "USER: " + text_of(m)
    if isinstance(m, AIMessage):
        calls = "; ".join(f"{c.get('name')}({args_text(c.get('args'), 200)})" for c in pending_tool_calls(m))
        said = text_of(m).strip()
        return "ASSISTANT: " + (said + (" " if said and calls else "")) + (f"[calls {calls}]" if calls else "")
    if isinstance(m, ToolMessage):
        archived = archived_meta(m)
        tag = f" [archived as {archived['execution_id']}]" if archived else ""
        return f"TOOL RESULT {m.name or ''}{tag}: " + text_of(m)
    return f"{m.type.upper()}: " + text_of(m)


def transcript(messages: Sequence[BaseMessage], max_chars: int) -> str:
    """The messages as text, each clipped to an equal share when all would not fit."""
    items = [render(m) for m in messages]
    total = sum(len(t) + 2 for t in items)
    floor = 40
    if items and sum(min(len(t), floor) + 2 for t in items) > max_chars:
        # Too many items even at the floor: keep the newest that fit.
        kept: list[str] = []
        used = 60
        for t in reversed(items):
            if used + min(len(t), floor) + 2 > max_chars:
                break
            kept.append(t)
            used += min(len(t), floor) + 2
        omitted = len(items) - len(kept)
        items = [f"({omitted} older items omitted)", *[clip_text(t, floor, "cut") for t in reversed(kept)]]
        return "\n\n".join(items)
    if total > max_chars:
        lo, hi = floor, max(len(t) for t in items)
        while lo < hi:  # the largest per-item cap that fits
            mid = (lo + hi + 1) // 2
            if sum(min(len(t), mid) + 2 for t in items) <= max_chars:
                lo = mid
            else:
                hi = mid - 1
        items = [clip_text(t, lo, "cut") for t in items]
    return "\n\n".join(items)


async def model_summary(
    llm: BaseChatModel,
    task: str,
    compacted: Sequence[BaseMessage],
    usable: int,
    counter: TokenCounter,
    max_tokens: int,
    *,
    spec: str | None = None,
    fallbacks: Sequence[Fallback] = (),
    before_call: Callable[[int], None] | None = None,
) -> str:
    """A model-written summary of at most ``max_tokens``; the request fits ``usable``
    tokens like every other request and is sent through :func:`invoke_model` like every
    other model call (a timeout, an unreachable service or a garbage body is a one-line
    error; lone surrogates are replaced). ``before_call(request_tokens)`` runs just before
    the request is sent and may refuse it by raising (the run's budget)."""
    words = max(30, int(max_tokens * 0.7))
    system = SystemMessage(content=SUMMARY_SYSTEM_PROMPT)

    def prompt(history: str) -> HumanMessage:
        return HumanMessage(
            content=(
                f"The agent's task: {clip_text(task, 1500, 'cut')}\n\n"
                f"History to summarize (oldest first):\n\n{history}\n\n"
                f"Write the summary now, in at most {words} words."
            )
        )

    room = int((usable - count_request(counter, [system, prompt("")])) * CHARS_PER_TOKEN * 0.9)
    request: list[BaseMessage] = [system, prompt(transcript(compacted, room))]
    while count_request(counter, request) > usable and room > 200:
        room = int(room * 0.75)
        request = [system, prompt(transcript(compacted, room))]
    if count_request(counter, request) > usable:
        raise ValueError("the history cannot be put in a summary request within the budget")

    if before_call is not None:
        before_call(count_request(counter, request))

    def tagged(m: Runnable) -> Runnable:
        return m.with_config(tags=SUMMARY_TAGS)

    response = await invoke_model(tagged(llm), request, spec=spec, fallbacks=rebind_all(fallbacks, tagged))
    text = text_of(response).strip() if isinstance(response, BaseMessage) else str(response).strip()
    if getattr(response, "tool_calls", None) or not text:
        raise ValueError("the summary model returned no text")
    return clip_text(text, max_tokens * CHARS_PER_TOKEN, "cut to the summary budget")
