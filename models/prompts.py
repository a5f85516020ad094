"""System prompt assembly and the fixed texts the loop injects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FINALIZE_NOTICE = (
    "TOOL LIMIT REACHED: you have used all {limit} tool calls allowed for this task. "
    "No tools are available any more. Answer the user now with the best answer the "
    "information gathered so far supports, and say briefly what is still uncertain."
)

LOOP_NOTICE = (
    "REPEATED CALL: you have called {tool} with the same arguments {count} times in a row. "
    "Repeating it will not tell you anything new: use the results you have, try something "
    "different, or answer now. One more identical call ends your tool use."
)

LOOP_FINALIZE_NOTICE = (
    "LOOP DETECTED: you called {tool} with the same arguments {count} times in a row. "
    "No tools are available any more. Answer the user now with the best answer the "
    "information gathered so far supports, and say briefly what is still uncertain."
)

LOOP_CYCLE_NOTICE = (
    "REPEATED CALLS: you have made the same {period} calls ({tools}) with the same arguments, in "
    "the same order, {count} times in a row. Repeating them will not tell you anything new: use "
    "the results you have, try something different, or answer now. One more call of this cycle "
    "ends your tool use."
)

LOOP_CYCLE_FINALIZE_NOTICE = (
    "LOOP DETECTED: you made the same {period} calls ({tools}) with the same arguments, in the same "
    "order, {count} times in a row. No tools are available any more. Answer the user now with the "
    "best answer the information gathered so far supports, and say briefly what is still uncertain."
)

SKIPPED_RESULT = (
    "Skipped: tool-call limit reached ({limit} tool calls per run). This call was not "
    "executed; answer with the information you already have."
)

PLANNING_RULES = (
    "PLANNING: keep a plan with the manage_todo_list tool. For any task of more than one "
    "step, first add the steps as todo items. Mark an item in_progress when you start it and "
    "done as soon as it is finished; keep at most one item in_progress. Add, change or remove "
    "items when you learn something that changes the plan. Before the final answer, every "
    "item must be done or removed."
)


def render_todos(todos: list[dict]) -> str:
    """The todo list as the system prompt and ``manage_todo_list`` show it."""
    if not todos:
        return "(the todo list is empty)"
    mark = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}
    return "\n".join(f"{mark.get(t['status'], '[ ]')} {t['id']}. {t['content']} ({t['status']})" for t in todos)


def build_system_prompt(ctx: Any, state: Mapping[str, Any]) -> str:
    """The run's system prompt: the configured prompt plus the state's sections."""
    prompt = ctx.system_prompt.strip()
    parts = [prompt] if prompt else []
    memory = (state.get("memory_context") or "").strip()
    if memory:
        parts.append(memory)
    if getattr(ctx, "use_todo_list", False):
        parts.append(PLANNING_RULES + "\n\nCurrent todo list:\n" + render_todos(state.get("todos") or []))
    schema = state.get("output_schema")
    if schema:
        from ..replies.structured import output_instructions

        parts.append(output_instructions(schema))
    notice = (state.get("notice") or "").strip()
    if notice:
        parts.append(notice)
    return "\n\n".join(parts)  # (every part is non-empty)
