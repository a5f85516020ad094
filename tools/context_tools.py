"""Built-in context tools: ``get_tool_response`` (archive read-back),
``manage_todo_list`` (planning mode) and ``read_skill`` (skills, ``tools/skills.py``).

They are registered in every agent-graph registry (``graphs/agent.py``) with the
``context`` tag and offered only when they apply: ``get_tool_response`` once
anything is archived in the thread, ``manage_todo_list`` when ``use_todo_list`` is on,
``read_skill`` while the run lists skills. The sub-agent tools (``sub_agent``,
``start_sub_agent``, ``check_sub_agent``, ``cancel_sub_agent``) are context tools of the
agent graph too (``graphs/sub_agent.py`` ``with_sub_agents``): offered while the run's
``sub_agent_tools`` setting is on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command
from pydantic import BaseModel, Field

from ..models.prompts import render_todos
from ..models.tokens import DEFAULT_CONTEXT_TOKENS, page_chars
from ..policies.archive import GET_TOOL_RESPONSE
from ..runs.events import emit
from ..sessions.archive import ToolArchive
from ..state import run_setting
from .agents import SUB_AGENT_TOOL_NAMES
from .guards import ToolError, context_value
from .registry import ToolMeta, ToolRegistry
from .skills import READ_SKILL, read_skill

MANAGE_TODO_LIST = "manage_todo_list"
CONTEXT_TAG = "context"
# Context tools that change the state: the tools node runs them one at a time.
STATE_TAG = "updates_state"

TODO_STATUSES = ("pending", "in_progress", "done")
def _state(runtime: Any) -> dict:
    state = getattr(runtime, "state", None)
    return state if isinstance(state, dict) else {}


def _limit(runtime: Any) -> int:
    return int(
        run_setting(_state(runtime), "context_token_limit")
        or context_value(runtime, "context_token_limit", DEFAULT_CONTEXT_TOKENS)
    )


def _parallel_retrievals(runtime: Any) -> int:
    """How many get_tool_response calls the current model turn made (they share a page budget)."""
    messages = _state(runtime).get("messages") or []
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage):
        return 1
    return max(1, sum(1 for c in last.tool_calls or [] if c.get("name") == GET_TOOL_RESPONSE))


# -- get_tool_response ---------------------------------------------------------
class GetToolResponseArgs(BaseModel):
    """Arguments of get_tool_response."""

    execution_id: str = Field(description="The execution id of an archived output, e.g. 'ex_0123456789abcdef'.")
    offset: int = Field(default=0, ge=0, description="Character offset to start at (for reading the next page).")
    max_chars: int | None = Field(
        default=None, ge=1, description="Characters to return (default and maximum: one page, see the archive note)."
    )


@tool(GET_TOOL_RESPONSE, args_schema=GetToolResponseArgs)
async def get_tool_response(
    execution_id: str,
    offset: int = 0,
    max_chars: int | None = None,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Read the full, raw output of an earlier tool execution that was archived because it was large.

    Returns the text from offset, one page at a time (the page size keeps the
    conversation within its budget). When the page is shorter than you asked for, or
    you gave no max_chars, and more text follows, a last line says the offset of the
    next page.
    """
    eid = execution_id.strip()
    text = await ToolArchive(store=getattr(runtime, "store", None)).get(eid)
    if text is None:
        known = sorted(_state(runtime).get("archived") or {})
        hint = (
            f" Archived ids in this conversation: {', '.join(known)}."
            if known
            else " Nothing is archived in this conversation."
        )
        raise ToolError(f"Unknown execution id {execution_id!r}.{hint}")
    cap = max(200, page_chars(_limit(runtime)) // _parallel_retrievals(runtime))
    size = min(max_chars or cap, cap)
    if offset >= len(text):
        return f"[Nothing at offset {offset}: execution {eid} has {len(text)} characters.]"
    page = text[offset : offset + size]
    # The page must fit as sent: escaping (newlines, quotes, non-ASCII) can make it longer.
    while len(page) > 1 and len(json.dumps(page)) > cap + 2:
        page = page[: max(1, int(len(page) * cap / len(json.dumps(page))) - 1)]
    end = offset + len(page)
    if end < len(text) and (max_chars is None or len(page) < max_chars):
        page += (
            f"\n\n[Page: characters {offset}-{end} of {len(text)} of {eid}. "
            f'Next page: get_tool_response(execution_id="{eid}", offset={end}).]'
        )
    return page


# -- manage_todo_list ------------------------------------------------------------
class TodoChange(BaseModel):
    id: int = Field(description="Id of the item to change.")
    status: Literal["pending", "in_progress", "done"] | None = Field(default=None, description="New status.")
    content: str | None = Field(default=None, description="New text of the item.")


class ManageTodoListArgs(BaseModel):
    """Arguments of manage_todo_list: any combination, applied as add, then update, then remove."""

    add: list[str] = Field(default_factory=list, description="Texts of new items (status 'pending').")
    update: list[TodoChange] = Field(default_factory=list, description="Status or text changes of existing items.")
    remove: list[int] = Field(default_factory=list, description="Ids of items to delete.")


def apply_todo_changes(
    todos: Sequence[Mapping[str, Any]],
    add: Sequence[str] = (),
    update: Sequence[Mapping[str, Any]] = (),
    remove: Sequence[int] = (),
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The new list and the diff; raises ToolError (and changes nothing) on a bad id or text."""
    items = [dict(t) for t in todos or []]
    by_id = {t["id"]: t for t in items}
    diff: dict[str, list] = {"added": [], "updated": [], "removed": []}
    next_id = max(by_id, default=0) + 1
    for text in add:
        text = (text or "").strip()
        if not text:
            raise ToolError("Cannot add an empty todo item.")
        new: dict[str, Any] = {"id": next_id, "content": text, "status": "pending"}
        next_id += 1
        items.append(new)
        by_id[new["id"]] = new
        diff["added"].append(dict(new))
    for change in update:
        item = by_id.get(change["id"])
        if item is None:
            raise ToolError(f"No todo item with id {change['id']}. Ids: {sorted(by_id) or 'none'}.")
        before = dict(item)
        if change.get("status"):
            item["status"] = change["status"]
        if change.get("content") and change["content"].strip():
            item["content"] = change["content"].strip()
        if item != before:
            diff["updated"].append({"id": item["id"], "before": before, "after": dict(item)})
    for tid in remove:
        item = by_id.pop(tid, None)
        if item is None:
            raise ToolError(f"No todo item with id {tid}. Ids: {sorted(by_id) or 'none'}.")
        items.remove(item)
        diff["removed"].append(dict(item))
    return items, diff


@tool(MANAGE_TODO_LIST, args_schema=ManageTodoListArgs)
def manage_todo_list(
    add: list[str] | None = None,
    update: list[TodoChange] | None = None,
    remove: list[int] | None = None,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> Command:
    """Keep your plan as a todo list: add items, change their status (pending, in_progress, done) or text, remove items.

    Returns the whole list after the change.
    """
    changes = [u.model_dump() if isinstance(u, BaseModel) else dict(u) for u in update or []]
    todos, diff = apply_todo_changes(_state(runtime).get("todos") or [], add or [], changes, remove or [])
    emit("plan", **diff, todos=todos)
    content = "Todo list updated.\n" + render_todos(todos)
    call_id = getattr(runtime, "tool_call_id", None) or ""
    return Command(
        update={"todos": todos, "messages": [ToolMessage(content=content, tool_call_id=call_id, name=MANAGE_TODO_LIST)]}
    )


CONTEXT_TOOLS: list[tuple[BaseTool, ToolMeta]] = [
    (get_tool_response, ToolMeta(tags=(CONTEXT_TAG,))),
    (manage_todo_list, ToolMeta(tags=(CONTEXT_TAG, STATE_TAG))),
    (read_skill, ToolMeta(tags=(CONTEXT_TAG,))),
]
CONTEXT_TOOL_NAMES = frozenset([*(t.name for t, _ in CONTEXT_TOOLS), *SUB_AGENT_TOOL_NAMES])


def with_context_tools(registry: ToolRegistry) -> ToolRegistry:
    """The registry with the context tools added (a copy when any is missing, or when
    plugins are still pending: they are added once those have loaded, so a plugin's
    tool of the same name still wins)."""
    if registry.pending:
        registry = registry.copy()
        registry.then(_add_missing_context_tools)
        return registry
    if all(t.name in registry for t, _ in CONTEXT_TOOLS):
        return registry
    registry = registry.copy()
    _add_missing_context_tools(registry)
    return registry


def _add_missing_context_tools(registry: ToolRegistry) -> None:
    for t, m in CONTEXT_TOOLS:
        if t.name not in registry:
            registry.register(t, m)


def context_tools_for(ctx: Any, registry: ToolRegistry, state: Mapping[str, Any]) -> list[BaseTool]:
    """The context tools this turn offers."""
    out: list[BaseTool] = []
    if state.get("archived") and GET_TOOL_RESPONSE in registry:
        out.append(registry.get(GET_TOOL_RESPONSE))
    if getattr(ctx, "use_todo_list", False) and MANAGE_TODO_LIST in registry:
        out.append(registry.get(MANAGE_TODO_LIST))
    skills = run_setting(state, "skills")
    if skills and isinstance(skills, Mapping) and (found := registry.entry(READ_SKILL)) is not None:
        from ..policies.skills import skills_key

        if skills.get(skills_key(getattr(ctx, "skills", None))):
            out.append(found[0])
    if getattr(ctx, "sub_agent_tools", False):  # (those build_agent_graph registered, not a caller's own)
        for name in SUB_AGENT_TOOL_NAMES:
            found = registry.entry(name)
            if found is not None and CONTEXT_TAG in found[1].tags:
                out.append(found[0])
    return out
