"""Making large texts small: archive them (reversible: a view plus an execution id
that ``get_tool_response`` reads back) or, as the agent guard's last resort, clip them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from langchain_core.messages import BaseMessage, ToolMessage

from ..models.messages import message_text as text_of
from ..models.messages import pending_tool_calls
from ..models.tokens import CHARS_PER_TOKEN, TokenCounter, count_messages
from ..runs.events import emit
from ..sessions.archive import ARCHIVE_KEY, ArchiveUnavailable, ToolArchive, clip_text, make_view, view_chars
from ..tools.context_tools import GET_TOOL_RESPONSE
from .digest import args_text


def largest_text(messages: Sequence[BaseMessage], skip: set[int] | frozenset[int] = frozenset()) -> int | None:
    """Index of the message with the longest string content (not in ``skip``)."""
    best, best_len = None, 0
    for i, m in enumerate(messages):
        if i in skip or not isinstance(m.content, str):
            continue
        if len(m.content) > best_len:
            best, best_len = i, len(m.content)
    return best


def shrink_texts(
    messages: Sequence[BaseMessage],
    fixed: int,
    target: int,
    counter: TokenCounter,
    note: str = "cut to fit the context budget",
) -> list[BaseMessage]:
    """Clip the largest message texts (head + tail) until the messages fit ``target``."""
    out = list(messages)
    for _ in range(4 * len(out) + 4):
        excess = fixed + count_messages(counter, out) - target
        if excess <= 0:
            break
        i = largest_text(out)
        if i is None:
            break
        text = str(out[i].content)
        new_len = max(200, len(text) - excess * CHARS_PER_TOKEN - 120)
        if new_len >= len(text):
            break
        out[i] = out[i].model_copy(update={"content": clip_text(text, new_len, note)})
    return out


UNARCHIVED = "cut: the archive is unavailable"


def unarchived_copy(message: BaseMessage, text: str, chars: int, exc: ArchiveUnavailable) -> BaseMessage:
    """``message`` clipped to ``chars`` (not reversible) when the store could not archive its
    text, with an ``error`` event saying why."""
    emit("error", node="archive", error=str(exc), tool=getattr(message, "name", None) or message.type)
    return message.model_copy(update={"content": clip_text(text, chars, UNARCHIVED)})


def archived_copy(message: BaseMessage, eid: str, view: str, chars: int) -> BaseMessage:
    """``message`` showing ``view`` instead of its text, marked with the execution id."""
    kwargs = {**message.additional_kwargs, ARCHIVE_KEY: {"execution_id": eid, "chars": chars}}
    return message.model_copy(update={"content": view, "additional_kwargs": kwargs})


def archivable(message: BaseMessage, threshold: int) -> TypeGuard[ToolMessage]:
    """A tool result :func:`archive_tool_outputs` archives: longer than ``threshold`` and not
    itself a page of an archived output."""
    return isinstance(message, ToolMessage) and message.name != GET_TOOL_RESPONSE and len(text_of(message)) > threshold


async def archive_tool_outputs(
    results: Sequence[BaseMessage], last: BaseMessage | None, threshold: int, page: int, store: Any = None
) -> tuple[list[BaseMessage], dict[str, dict[str, Any]]]:
    """Tool results longer than ``threshold`` become a view plus an execution id; the
    full text goes to the archive once. ``last`` is the AI message that made the calls."""
    if not any(archivable(m, threshold) for m in results):  # (most turns: nothing to set up)
        return list(results), {}
    archive = ToolArchive(store=store)
    calls = {c.get("id"): c for c in pending_tool_calls(last)}
    out: list[BaseMessage] = []
    archived: dict[str, dict[str, Any]] = {}
    for m in results:
        if archivable(m, threshold):
            text = text_of(m)
            call: Mapping[str, Any] = calls.get(m.tool_call_id) or {}
            meta = {"tool": m.name, "args": args_text(call.get("args")), "chars": len(text)}
            try:
                eid = await archive.put(text, meta)
            except ArchiveUnavailable as exc:
                out.append(unarchived_copy(m, text, threshold, exc))
                continue
            view = make_view(text, eid, m.name or "tool", page, *view_chars(page))
            m = archived_copy(m, eid, view, len(text))
            archived[eid] = meta
            emit(
                "summarization", action="archive", execution_id=eid, tool=m.name, chars=len(text), view_chars=len(view)
            )
        out.append(m)
    return out, archived


async def archive_oversized(
    messages: list[BaseMessage], fixed: int, target: int, counter: TokenCounter, page: int, store: Any
) -> tuple[list[BaseMessage], dict[str, dict[str, Any]]]:
    """Replace the largest texts by archived views until the messages fit (reversible);
    ``messages`` itself when they already fit."""
    if fixed + count_messages(counter, messages) <= target:
        return messages, {}
    archive = ToolArchive(store=store)
    out = list(messages)
    newly: dict[str, dict[str, Any]] = {}
    done: set[int] = set()
    for _ in range(len(out)):
        excess = fixed + count_messages(counter, out) - target
        if excess <= 0:
            break
        i = largest_text(out, done)
        if i is None:
            break
        m = out[i]
        text = str(m.content)
        room = max(300, len(text) - excess * CHARS_PER_TOKEN - 400)
        if room >= len(text):
            break
        if isinstance(m, ToolMessage) and m.name == GET_TOOL_RESPONSE:
            # A page of an archived output: cut it; the same page can be read again.
            out[i] = m.model_copy(
                update={
                    "content": clip_text(
                        text, room, "cut to fit the context budget; read this page again with a smaller max_chars"
                    )
                }
            )
        else:
            kind = m.name if isinstance(m, ToolMessage) and m.name else m.type
            try:
                eid = await archive.put(text, {"tool": kind, "chars": len(text)})
            except ArchiveUnavailable as exc:
                out[i] = unarchived_copy(m, text, room, exc)
                done.add(i)
                continue
            head = max(100, (room - 450) * 2 // 3)
            view = make_view(text, eid, kind, page, head=head, tail=max(50, (room - 450) - head))
            out[i] = archived_copy(m, eid, view, len(text))
            newly[eid] = {"tool": kind, "args": "", "chars": len(text)}
        done.add(i)
    return out, newly
