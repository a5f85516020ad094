"""toolLimitFinalize: the tool budget is spent, or the model repeated one call, or a cycle of
calls, beyond ``loop_limit``; the next turn must answer."""

from __future__ import annotations

from typing import Any

from ..models.prompts import FINALIZE_NOTICE
from ..models.usage import tool_limit_of
from ..policies.loop_guard import found_cycle, loop_event, loop_limit_of, loop_limit_reached, loop_notice
from ..policies.tool_budget import tool_limit_reached
from ..runs.events import emit
from ..state import AgentState, count_of, keep


async def tool_limit_finalize(state: AgentState) -> dict[str, Any]:
    if loop_limit_reached(state) and not tool_limit_reached(state):
        cycle = found_cycle(state)
        loop_event(cycle, loop_limit_of(state))
        return keep({}, finalize=True, notice=loop_notice(cycle, final=True))
    limit = tool_limit_of(state, None) or 0
    emit("tool_limit", limit=limit, tool_calls_made=count_of(state, "tool_calls_made"))
    return keep({}, finalize=True, notice=FINALIZE_NOTICE.format(limit=limit))
