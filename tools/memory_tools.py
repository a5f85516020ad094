"""Memory tools: the model can store a fact and search long-term memory on demand.

Both take an injected ``runtime: ToolRuntime`` (hidden from the model): the
user's namespace comes from ``runtime.context.user_id``, the store from
``runtime.store`` when it supports ``remember``/``recall``, otherwise the default
store in ``$SMART_AGENT_HOME/memory``. They are sync functions, so LangChain runs
them in a worker thread (embedding takes milliseconds, the first load seconds).
"""

from __future__ import annotations

import json

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel, Field

from ..memory.service import namespace_for, one_line, store_for
from .registry import ToolMeta

__all__ = ["MEMORY_TOOLS", "RememberArgs", "SearchMemoryArgs", "remember", "search_memory"]


class RememberArgs(BaseModel):
    """Arguments of remember."""

    text: str = Field(
        min_length=1,
        max_length=2000,
        description='The fact to remember, as one self-contained sentence (e.g. "The user\'s favourite colour is '
            'teal.").',
    )
    importance: float = Field(
        default=0.5, ge=0.0, le=1.0, description="How important the fact is, from 0 (trivia) to 1 (essential)."
    )


class SearchMemoryArgs(BaseModel):
    """Arguments of search_memory."""

    query: str = Field(min_length=1, max_length=1000, description="What to look for, in natural language.")
    k: int = Field(default=5, ge=1, le=50, description="How many memories to return.")


def _parts(runtime: ToolRuntime | None):
    ctx = getattr(runtime, "context", None) if runtime is not None else None
    rstore = getattr(runtime, "store", None) if runtime is not None else None
    return store_for(rstore, ctx), namespace_for(ctx)


@tool("remember", args_schema=RememberArgs)
def remember(
    text: str,
    importance: float = 0.5,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Save a fact to long-term memory so later sessions with this user can recall it.

    Use it for durable facts and preferences the user states, not for transient
    details. A near-duplicate of an existing memory updates that memory.
    """
    store, ns = _parts(runtime)
    result = store.remember(ns, text, importance=importance, kind="note", metadata={"source": "remember_tool"})
    verb = "Updated an existing memory" if result.action == "merged" else "Remembered"
    return f"{verb} (id {result.key}): {one_line(text, 200)}"


@tool("search_memory", args_schema=SearchMemoryArgs)
def search_memory(
    query: str,
    k: int = 5,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Search long-term memory (facts and past tasks with this user) by meaning.

    Returns the most relevant memories, best first, with their age and score.
    """
    store, ns = _parts(runtime)
    found = store.recall(ns, query, k)
    if not found:
        return "No memories found."
    rows = [
        {"id": m["key"], "age": m["age"], "score": m["score"], "text": m["text"]}
        for m in (r.to_dict() for r in found)
    ]
    return json.dumps(rows, ensure_ascii=False)


MEMORY_TOOLS: list[tuple[BaseTool, ToolMeta]] = [
    (remember, ToolMeta(side_effects=True, tags=("memory",))),
    (search_memory, ToolMeta(tags=("memory",))),
]
