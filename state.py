"""Every state schema of smart-agent, with its reducers.

``InputState`` is what callers pass in; ``AgentState`` is what the agent loop keeps.
Large tool outputs never ride in ``messages``: see ``archive`` (context management).
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class InputState(TypedDict, total=False):
    """What a caller passes: a task string, messages, or both (the task is appended)."""

    messages: Annotated[list[AnyMessage], add_messages]
    task: str


class OutputState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    answer: str


class AgentState(InputState, total=False):
    """State of the agent loop graph."""

    answer: str
    # Tool executions in the current run (reset by the resolver at each run start).
    tool_calls_made: int
    # Set by toolLimitFinalize: the next agent turn is offered no tools.
    finalize: bool
    # Model turns in the current run.
    turns: int
    # The run's tool-call budget, copied from the context by the resolver.
    max_tool_calls: int
    # Text added to the system prompt of the next model turn (finalization notice).
    notice: str
    # Later features add their keys below this line.


def merge_step_results(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Planner step results keyed by step id: later writes win; a ``None`` value deletes the id."""
    merged = dict(left or {})
    for key, value in (right or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


class PlannerState(InputState, total=False):
    """State of the plan-then-execute graph (``graphs/planner.py``).

    Each step result lands in ``step_results`` under its id (dict-merge reducer), so
    a resumed thread knows exactly which steps already finished and never re-runs them.
    """

    answer: str
    # The validated plan being executed: ``Plan.model_dump()`` (nodes/planner/schema.py).
    plan: dict[str, Any] | None
    # planning | plan_invalid | planned | approved | approval_invalid | rejected |
    # running | halted | done | planning_failed
    status: str
    # Problems with the last plan the model (or an approval edit) produced.
    plan_errors: list[str]
    # Model attempts in the current planning round.
    plan_attempts: int
    # The conversation of the current planning round (prompt, replies, error feedback).
    planner_messages: list[AnyMessage]
    # step id -> {id, tool, args, status: ok|failed|skipped, output, error, attempts, round, ...}
    step_results: Annotated[dict[str, Any], merge_step_results]
    # Step ids the last dispatch sent to run_step (bounded by max_parallel_tools).
    ready: list[str]
    # Dispatch rounds so far (a superstep of parallel steps each).
    round: int
    # Revised plans made after a halt.
    replans: int
    # The failure(s) that halted execution: {"steps": [...], "errors": {...}}.
    halt: dict[str, Any] | None
    # A planning / approval error in words (also in ``answer`` when the run ends on it).
    error: str | None
    # Limits copied from the context at the start of a run, so routing reads only state.
    approve_plan: bool
    max_plan_attempts: int
    max_replans: int
    max_parallel: int
