"""The run's tool budget: a hard bound on tool executions. Calls past it are answered
"skipped"; once it is spent the next turn is offered no tools and must answer
(``toolLimitFinalize``). One budget for the whole run: fleet workers, sub-agents and planner
steps share it (``models/usage.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


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
