"""System prompt assembly and the fixed texts the loop injects."""

from __future__ import annotations

from typing import Any

FINALIZE_NOTICE = (
    "TOOL LIMIT REACHED: you have used all {limit} tool calls allowed for this task. "
    "No tools are available any more. Answer the user now with the best answer the "
    "information gathered so far supports, and say briefly what is still uncertain."
)

SKIPPED_RESULT = (
    "Skipped: tool-call limit reached ({limit} tool calls per run). This call was not "
    "executed; answer with the information you already have."
)


def build_system_prompt(ctx: Any, state: dict) -> str:
    """The run's system prompt: the configured prompt plus the state's sections."""
    parts = [ctx.system_prompt.strip()]
    memory = (state.get("memory_context") or "").strip()
    if memory:
        parts.append(memory)
    notice = (state.get("notice") or "").strip()
    if notice:
        parts.append(notice)
    return "\n\n".join(p for p in parts if p)
