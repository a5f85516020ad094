"""toolLimitFinalize: the tool budget is spent; the next turn must answer."""

from __future__ import annotations

from typing import Any

from ..events import emit
from ..prompts import FINALIZE_NOTICE


async def tool_limit_finalize(state: dict) -> dict[str, Any]:
    limit = int(state.get("max_tool_calls") or 0)
    emit("tool_limit", limit=limit, tool_calls_made=int(state.get("tool_calls_made") or 0))
    return {"finalize": True, "notice": FINALIZE_NOTICE.format(limit=limit)}
