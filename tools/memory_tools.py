"""Memory tools: the model can store a fact and search long-term memory on demand.

Both take an injected ``runtime: ToolRuntime`` (hidden from the model): the
user's namespace comes from ``runtime.context.user_id``, the store from
``runtime.store`` when the run has one (any ``BaseStore`` with a vector index, through
``memory/backend.py``; one without an index: the tool answers that memory is off),
otherwise the default FAISS store in ``$SMART_AGENT_HOME/memory``. They are async (the FAISS
work runs in a worker thread); ``tool.invoke`` outside an event loop runs them to the end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
from collections.abc import Callable
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from ..memory import backend
from ..memory.backend import NoVectorIndex
from ..memory.service import namespace_for, one_line, store_for
from .registry import ToolMeta, keeping

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


async def _remember(
    text: str,
    importance: float = 0.5,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    try:
        store, ns = await asyncio.to_thread(_parts, runtime)
    except NoVectorIndex as exc:
        return str(exc)
    result = await backend.remember(
        store, ns, text, importance=importance, kind="note", metadata={"source": "remember_tool"}
    )
    verb = "Updated an existing memory" if result.action == "merged" else "Remembered"
    return f"{verb} (id {result.key}): {one_line(text, 200)}"


async def _search_memory(
    query: str,
    k: int = 5,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    try:
        store, ns = await asyncio.to_thread(_parts, runtime)
    except NoVectorIndex as exc:
        return str(exc)
    found = await backend.recall(store, ns, query, k)
    if not found:
        return "No memories found."
    rows = [
        {"id": m["key"], "age": m["age"], "score": m["score"], "text": m["text"]}
        for m in (r.to_dict() for r in found)
    ]
    return json.dumps(rows, ensure_ascii=False)


def _sync(coroutine: Callable[..., Any]) -> Callable[..., Any]:
    """The tool's sync form (``tool.invoke``): the coroutine run to its end on an event loop of its
    own, in a helper thread when the caller's thread already runs one (a notebook cell)."""

    @functools.wraps(coroutine)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine(*args, **kwargs))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coroutine(*args, **kwargs)).result()

    return run


remember = StructuredTool.from_function(
    func=_sync(_remember),
    coroutine=_remember,
    name="remember",
    args_schema=RememberArgs,
    description=(
        "Save a fact to long-term memory so later sessions with this user can recall it.\n\n"
        "Use it for durable facts and preferences the user states, not for transient details. "
        "A near-duplicate of an existing memory updates that memory."
    ),
)

search_memory = StructuredTool.from_function(
    func=_sync(_search_memory),
    coroutine=_search_memory,
    name="search_memory",
    args_schema=SearchMemoryArgs,
    description=(
        "Search long-term memory (facts and past tasks with this user) by meaning.\n\n"
        "Returns the most relevant memories, best first, with their age and score."
    ),
)


MEMORY_TOOLS: list[tuple[BaseTool, ToolMeta]] = [
    (remember, ToolMeta(
        side_effects=True, tags=("memory",), canonical=keeping("text", "importance", defaults={"importance": 0.5}),
    )),
    (search_memory, ToolMeta(tags=("memory",), canonical=keeping("query"))),  # (k: how many are shown)
]
