"""Routing decisions of the planner graph: small pure functions over the state.

The limits they compare against (``max_plan_attempts``, ``max_replans``,
``approve_plan``) are copied into the state by ``prepare``, so a decision depends
on nothing but its argument.
"""

from __future__ import annotations

from typing import Literal

from langgraph.types import Send

from ...state import PlannerState, count_of
from .execute import step_task

END: Literal["__end__"] = "__end__"


def route_after_prepare(state: PlannerState) -> Literal["plan", "__end__"]:
    """Plan unless there is nothing to plan."""
    return END if state.get("status") == "planning_failed" else "plan"


def route_after_plan(state: PlannerState) -> Literal["plan", "approve", "dispatch", "plan_failed", "synthesize"]:
    """Valid plan: approval or execution. Invalid: try again, or give up."""
    if state.get("status") == "planned":
        return "approve" if state.get("approve_plan") else "dispatch"
    if state.get("status") == "over_budget":  # the run's budget: answer with what there is
        return "synthesize"
    if count_of(state, "plan_attempts") < count_of(state, "max_plan_attempts", 1):
        return "plan"
    # Out of attempts: a first plan fails the run; a failed *revision* still reports what ran.
    return "synthesize" if count_of(state, "replans") > 0 else "plan_failed"


def route_after_approve(state: PlannerState) -> Literal["dispatch", "approve", "__end__"]:
    status = state.get("status")
    if status == "approved":
        return "dispatch"
    if status == "approval_invalid":
        return "approve"
    return END


def route_after_dispatch(state: PlannerState) -> list[Send] | Literal["review_steps", "plan", "synthesize"]:
    """Fan the ready steps out to ``run_step`` (after a human's review when some need one);
    after a halt replan (while allowed) or report."""
    status = state.get("status")
    if status == "running" and state.get("ready"):
        if state.get("awaiting_review"):
            return "review_steps"
        return [Send("run_step", step_task(state, sid)) for sid in state["ready"]]
    budget = state.get("max_tool_calls")
    spent = budget is not None and count_of(state, "tool_calls_made") >= int(budget)
    if status == "halted" and count_of(state, "replans") < count_of(state, "max_replans") and not spent:
        return "plan"  # (a revised plan needs at least one tool call left)
    return "synthesize"


def route_after_review(state: PlannerState) -> list[Send] | Literal["dispatch"]:
    """Run the wave's ready steps that have no result yet (a rejected step has its failure);
    when a human rejected them all, back to ``dispatch``."""
    results = state.get("step_results") or {}
    sends = [Send("run_step", step_task(state, sid)) for sid in state.get("ready") or [] if sid not in results]
    return sends or "dispatch"


def route_after_load(state: PlannerState) -> Literal["dispatch", "__end__"]:
    """``smart-agent execute``: run a valid plan, stop on an invalid one."""
    return "dispatch" if state.get("status") == "planned" else END
