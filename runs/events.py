"""The event stream: structured events on LangGraph's ``custom`` stream mode.

Every event is a dict ``{"event": <type>, "ts": <unix time>, **payload}``. Types
used across the framework (:data:`EVENT_TYPES`; the CLI renders each one, cli/lines.py):
``tool_call``, ``tool_result``, ``tool_limit``, ``tool_retry``, ``loop_detected``,
``final_answer``, ``usage``, ``model_text`` (what the model says beside tool calls),
``model_fallback``, ``budget``, ``plan``, ``summarization``, ``memory_recall``, ``warning``
(something skipped, the run goes on: a malformed skill),
``memory_write``, ``handoff``, ``sub_agent``, ``reasoning``, ``step_start``, ``step_result``,
``approval_requested``, ``approval``, ``question``, ``answer`` (nodes/human.py).

Subscribe with ``graph.astream(..., stream_mode="custom")`` (or together with other
modes); outside a graph run ``emit`` is a no-op, so nodes and tools can call it
unconditionally.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from .run_tools import pending_run_errors

EVENT_TYPES = (
    "tool_call",
    "tool_result",
    "tool_limit",
    "tool_retry",
    "loop_detected",
    "pii",
    "tool_call_limit",
    "final_answer",
    "usage",
    "model_text",
    "model_fallback",
    "budget",
    "plan",
    "summarization",
    "memory_recall",
    "memory_write",
    "handoff",
    "sub_agent",
    "reasoning",
    "step_start",
    "step_result",
    "error",
    "warning",
    "approval_requested",
    "approval",
    "question",
    "answer",
)


# Events carry the start of long texts (tool outputs, answers), not the whole.
PREVIEW_CHARS = 300


def clip(text: str, limit: int, marker: str = "…", *, within: bool = True) -> str:
    """``text`` shortened to ``limit`` characters, ending with ``marker`` when it was cut: the
    one text-shortening helper. ``within``: the result, marker included, is at most ``limit``
    long (blanks before the marker dropped); else ``limit`` characters are kept and the
    marker, which may name ``{total}`` (the original length) or ``{cut}``, follows them."""
    if len(text) <= limit:
        return text
    if within:
        return text[: max(0, limit - len(marker))].rstrip() + marker
    return text[:limit] + marker.format(total=len(text), cut=len(text) - limit)


def preview(text: str, n: int = PREVIEW_CHARS) -> str:
    """``text`` cut to ``n`` characters, saying how long it was."""
    return clip(text, n, "… [{total} chars]", within=False)


def make_event(event: str, **payload: Any) -> dict[str, Any]:
    return {"event": event, "ts": round(time.time(), 3), **payload}


@functools.cache
def _stream_writer_getter() -> Callable[[], Any]:
    """LangGraph's ``get_stream_writer``, imported by the first event rather than with this
    module (importing ``events`` stays light), and not again by every event (an import
    statement costs more than the rest of ``emit``)."""
    from langgraph.config import get_stream_writer

    return get_stream_writer


def _does_nothing(_: Any) -> None:
    pass


# Code object of a writer -> whether it does nothing (its body compiles to ``pass``'s: return None).
_quiet_codes: dict[Any, bool] = {}


def _quiet(writer: Any) -> bool:
    """Whether ``writer`` is a function that does nothing with an event: LangGraph's writer for a
    run that does not stream ``custom`` events (``invoke``, or other stream modes only)."""
    code = getattr(writer, "__code__", None)
    if code is None:
        return False
    quiet = _quiet_codes.get(code)
    if quiet is None:
        quiet = _quiet_codes[code] = code.co_code == _does_nothing.__code__.co_code and code.co_consts[:1] == (None,)
    return quiet


def streaming() -> bool:
    """Whether an event emitted now goes anywhere (a run that streams ``custom`` events): a caller
    whose payload costs something to build asks first (:func:`emit` would drop it unbuilt)."""
    try:
        writer = _stream_writer_getter()()
    except Exception:  # not inside a runnable context
        return False
    return not _quiet(writer)


def emit(event: str, **payload: Any) -> None:
    """Send an event on the custom stream of the running graph (no-op outside one, and in a run
    that does not stream custom events: the event is not even built)."""
    try:
        writer = _stream_writer_getter()()
    except Exception:  # not inside a runnable context
        return
    if _quiet(writer):
        return
    try:
        for pending in pending_run_errors():  # MCP servers of the run that did not start (run_tools.py)
            writer(make_event("error", **pending))
        writer(make_event(event, **payload))
    except Exception:  # (a writer that fails loses the event, never the run)
        pass
