"""The tool-output archive: a long tool output reaches the conversation as a short view and an
execution id; ``get_tool_response`` reads the full text back (``sessions/archive.py``,
``history/budget.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config.fields import Settings, setting
from ..models.usage import tool_limit_of
from ..state import keep, kept_count
from .base import Policy, ToolTurn, TurnCall

#: The tool that reads an archived output back (``tools/context_tools.py``).
GET_TOOL_RESPONSE = "get_tool_response"
#: ``get_tool_response`` calls a run may make outside its tool budget, per tool call of the budget.
FREE_RETRIEVALS_PER_TOOL_CALL = 5


def free_retrievals(max_tool_calls: int) -> int:
    """How many get_tool_response calls a run may make outside its tool budget."""
    return FREE_RETRIEVALS_PER_TOOL_CALL * max(0, int(max_tool_calls))


@dataclass(kw_only=True)
class ArchiveSettings(Settings):
    """Tool-output archive"""

    archive_threshold_chars: int = setting(
        2000,
        help="Tool outputs longer than this many characters are archived: the conversation gets a short view "
        "(head, tail, size) and an execution id, and get_tool_response reads the full text back. 0 turns "
        "archiving off.",
        bounds=(0, 10_000_000),
        flag="--archive-chars",
    )


def split_free_retrievals(calls: list[TurnCall], used: int, quota: int) -> tuple[list[TurnCall], list[TurnCall]]:
    """get_tool_response calls within the run's free quota, and every other call.

    Reading back an archived output changes nothing and is how the model recovers what
    compaction hid, so it does not spend the tool budget; it has its own bound."""
    free: list[TurnCall] = []
    counted: list[TurnCall] = []
    for c in calls:
        if c.name == GET_TOOL_RESPONSE and not c.malformed and used + len(free) < quota:
            free.append(c)
        else:
            counted.append(c)
    return free, counted


class Archive(Policy):
    """The archive in the tools node: ``get_tool_response`` calls within the run's free quota run
    without spending the tool budget (``retrievals_made``); after the turn, outputs longer than
    ``archive_threshold_chars`` are archived (``budget``: the graph's ``ContextBudget``, which
    knows the request sizes and the archive's store; none: nothing is archived)."""

    name = "archive"

    def __init__(self, budget: Any = None) -> None:
        self.budget = budget

    def plan(self, turn: ToolTurn) -> None:
        used = kept_count(turn.state, "retrievals_made")
        limit = tool_limit_of(turn.state, turn.ctx) or 0
        free, _counted = split_free_retrievals(turn.open_calls(), used, free_retrievals(limit))
        for call in free:
            call.free = True
        if free:
            keep(turn.update, retrievals_made=used + len(free))

    async def archive(self, turn: ToolTurn, update: dict[str, Any], store: Any) -> dict[str, Any]:
        """``update`` (the turn's whole update, its usage counted) with long outputs archived."""
        if self.budget is not None and self.budget.archives(turn.ctx, update):
            return await self.budget.after_tools(turn.ctx, turn.state, update, store)
        return update
