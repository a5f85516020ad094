"""The run's tool budget: a hard bound on tool executions, retries included. Calls past it are
answered "skipped"; once it is spent the next turn is offered no tools and must answer
(``toolLimitFinalize``). One budget for the whole run: fleet workers, sub-agents and planner
steps share it on the run's meter (``models/usage.py``), where each call is reserved before it
runs. State keys: ``max_tool_calls`` (the run's, copied at its start), ``tool_calls_made``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..config.fields import Settings, setting
from ..models.prompts import SKIPPED_RESULT
from ..models.usage import tool_limit_of
from ..state import count_of
from .base import Policy, ToolTurn

T = TypeVar("T")


@dataclass(kw_only=True)
class ToolBudgetSettings(Settings):
    """Tool budget"""

    max_tool_calls: int = setting(
        20,
        help="Hard bound on tool executions per run, retries included: one budget for the whole run, shared by "
        "a fleet's workers, sub-agents and planner steps. When reached, the next model turn is offered no tools "
        "and must answer.",
        bounds=(0, 10_000),
        client="lower",
    )


def plan_calls(calls: list[T], made: int, limit: int) -> tuple[list[T], list[T]]:
    """Split a turn's calls into those to execute and those over the budget."""
    remaining = max(0, limit - made)
    return calls[:remaining], calls[remaining:]


def tool_limit_reached(state: Mapping[str, Any]) -> bool:
    """The run's tool budget is spent (state ``tool_calls_made`` of its ``max_tool_calls``)."""
    limit = tool_limit_of(state, None)
    return limit is not None and count_of(state, "tool_calls_made") >= limit


class ExtraAttempts:
    """The extra executions of one turn's calls (retries), shared by its calls: each one is a
    tool call of the run. One starts only while the turn's ``spare`` (what this loop's own
    ``max_tool_calls`` leaves) lasts and the run's meter grants it (the budget the run shares
    with its workers and sub-agents, reserved when the attempt starts)."""

    __slots__ = ("made", "meter", "spare")

    def __init__(self, spare: int, meter: Any) -> None:
        self.spare, self.meter, self.made = spare, meter, 0

    def __call__(self) -> bool:
        if self.made >= self.spare or self.meter.take_tools(1) < 1:
            return False
        self.made += 1
        return True


class ToolBudget(Policy):
    """Plans a turn's calls within the run's tool budget and counts what the turn made."""

    name = "tool_budget"

    def plan(self, turn: ToolTurn) -> None:
        state, meter = turn.state, turn.meter
        made = count_of(state, "tool_calls_made")
        limit = tool_limit_of(state, turn.ctx) or 0
        # What the run's budget leaves: less than this loop's own limit when the loop is a fleet
        # worker or a sub-agent whose run (its other workers, its caller) spent the rest.
        left = meter.tools_left()
        run_limit = limit if left is None or made + left >= limit else made + left
        counted = [c for c in turn.open_calls() if not c.free]
        to_run, skipped = plan_calls(counted, made, run_limit)
        meter.take_tools(len(to_run))  # reserved before any runs (granted: run_limit leaves them)
        shown = limit if run_limit == limit else (meter.root.tool_limit or limit)  # (past the run's shared budget)
        for call in skipped:
            call.skip(SKIPPED_RESULT.format(limit=shown), error="skipped_limit", note="skipped: tool-call limit")
        turn.extra_attempt = ExtraAttempts(limit - made - len(to_run), meter)
        turn.notes_of(self)["before"] = (made, limit, meter.tool_calls - len(to_run))

    async def after(self, turn: ToolTurn) -> None:
        made, limit, before = turn.notes_of(self)["before"]
        turn.update.update(spent(made, limit, before, turn.meter))


def spent(made: int, limit: int, before: int, meter: Any) -> dict[str, Any]:
    """The loop's ``tool_calls_made``: ``made`` and what the turn added to the meter (its calls,
    their retries, and every tool call of the sub-agents it ran). Once the run's shared budget is
    spent below the loop's own limit (a fleet worker, a sub-agent), the run's ``max_tool_calls``
    (in ``run_settings``) becomes what it made, so it finalizes like at its own limit."""
    now = made + meter.tool_calls - before
    update: dict[str, Any] = {"tool_calls_made": now}
    if now < limit and meter.tools_left() == 0:
        update["run_settings"] = {"max_tool_calls": now}  # (an entry: the run's other settings stay)
    return update
