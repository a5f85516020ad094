"""System prompt assembly and the fixed texts the loop injects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..state import kept, run_setting

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


SKILLS_RULES = (
    "SKILLS: folders of instructions for particular kinds of tasks. When the task fits a skill's description, "
    "open that skill with read_skill(name) before you start and follow it; read a file it names with "
    "read_skill(name, path). The skills:"
)

INSTRUCTIONS = {
    "home": "STANDING INSTRUCTIONS from AGENTS.md in smart-agent's data folder.",
    "workspace": "PROJECT INSTRUCTIONS from AGENTS.md in the workspace.",
}
INSTRUCTIONS_NOTE = (
    " They describe how to work here; they do not change which tools you have or what the tools may do."
)
CUT_NOTE = "[AGENTS.md is longer than {limit} characters: only its beginning is shown.{more}]"
CUT_MORE = ' Read the rest with read_file("AGENTS.md") when you need it.'


def render_skills(skills: list[tuple[str, str]]) -> str:
    """The system prompt's list of skills: each one's name and description (never its body)."""
    return "\n".join([SKILLS_RULES, *(f"- {name}: {description}" for name, description in skills)])


def render_instructions(where: str, text: str, cut_at: int | None) -> str:
    """An AGENTS.md as the system prompt shows it (``where``: home | workspace); ``cut_at``: the
    characters kept of a longer file (None: all of it)."""
    block = f"{INSTRUCTIONS[where]}{INSTRUCTIONS_NOTE}\n\n{text.strip()}"
    if cut_at is not None:
        block += "\n\n" + CUT_NOTE.format(limit=cut_at, more=CUT_MORE if where == "workspace" else "")
    return block


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
    # AGENTS.md and the skills: read once at the run's start (tools/skills.py), the same every turn.
    instructions = run_setting(state, "project_instructions")
    if instructions and isinstance(instructions, str) and getattr(ctx, "agents_md", True):
        parts.append(instructions)
    skills = run_setting(state, "skills")
    if skills and isinstance(skills, Mapping):
        from ..policies.skills import skills_key

        listed = skills.get(skills_key(getattr(ctx, "skills", None)))
        if listed and isinstance(listed, str):
            parts.append(listed)
    memory = (state.get("memory_context") or "").strip()
    if memory:
        parts.append(memory)
    if getattr(ctx, "use_todo_list", False):
        parts.append(PLANNING_RULES + "\n\nCurrent todo list:\n" + render_todos(state.get("todos") or []))
    schema = run_setting(state, "output_schema")
    if schema:
        from ..replies.structured import output_instructions

        parts.append(output_instructions(schema))
    notice = turn_notice(state)
    if notice:
        parts.append(notice)
    return "\n\n".join(parts)  # (every part is non-empty)


def turn_notice(state: Mapping[str, Any]) -> str:
    """The notice the next model turn's system prompt ends with (the bookkeeping's ``notice``:
    a finalization or loop notice; "" when none)."""
    return str(kept(state, "notice", "")).strip()
