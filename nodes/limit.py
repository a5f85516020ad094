"""toolLimitFinalize: the tool budget is spent; the next turn must answer."""

from __future__ import annotations

from typing import Any

from ..events import emit
from ..prompts import FINALIZE_NOTICE
from ..state import AgentState, count_of


async def tool_limit_finalize(state: AgentState) -> dict[str, Any]:
    limit = count_of(state, "max_tool_calls")
    emit("tool_limit", limit=limit, tool_calls_made=count_of(state, "tool_calls_made"))
    return {"finalize": True, "notice": FINALIZE_NOTICE.format(limit=limit)}
