"""toolLimitFinalize: the tool budget is spent, or the model repeated one call beyond
``loop_limit``; the next turn must answer."""

from __future__ import annotations

from typing import Any

from ..events import emit
from ..prompts import FINALIZE_NOTICE, LOOP_FINALIZE_NOTICE
from ..state import AgentState, count_of
from .routes import loop_limit_reached, repeated_tool, tool_limit_reached


async def tool_limit_finalize(state: AgentState) -> dict[str, Any]:
    if loop_limit_reached(state) and not tool_limit_reached(state):
        tool, repeats = repeated_tool(state), count_of(state, "loop_streak")
        emit("loop_detected", tool=tool, repeats=repeats, limit=count_of(state, "loop_limit"), action="finalize")
        return {"finalize": True, "notice": LOOP_FINALIZE_NOTICE.format(tool=tool, count=repeats)}
    limit = count_of(state, "max_tool_calls")
    emit("tool_limit", limit=limit, tool_calls_made=count_of(state, "tool_calls_made"))
    return {"finalize": True, "notice": FINALIZE_NOTICE.format(limit=limit)}
