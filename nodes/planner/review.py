"""review_steps: a human approves, edits or rejects the plan steps whose tools need approval.

Under the run setting ``approve`` (``approval.needs_approval``: a tool named there, or
``side-effects`` and the tool's ``ToolMeta.side_effects``), ``dispatch`` lists in
``awaiting_review`` the ready steps of the wave that need a decision and have none yet, each
``{id, name, args}`` with its references to earlier outputs resolved: the arguments that
would run. ``review_steps`` then pauses ONCE for all of them with
``interrupt(review_request(...))`` (LangChain's HITL format, see ``approval.py``) and records
the decisions in ``step_reviews`` (step id -> decision), so a resumed thread never asks again:

* approve: the step runs as planned;
* edit: it runs with the edited arguments, used as given (no reference resolution); the tool's
  schema checks them like any step's, so invalid ones fail the step (``invalid_args``, not
  retried) and its ``on_fail`` applies;
* reject: it is not run; its result is ``status="failed"``, ``kind="rejected"`` with
  ``approval.rejection_text`` as the error, so ``on_fail``, skipping, replanning and the
  synthesis treat it like any failed step and the synthesis sees the message.

Then every ready step of the wave without a result runs (``routes.route_after_review``),
those that needed no approval included: a wave waits for its reviews as a whole. A resume
value that does not answer the request pauses again with the same request and a one-line
``error`` event (``approval.ask_until_valid``, as the agent loop's ``human`` node does).
``approval_requested`` is emitted at each pause, ``approval`` once per decision. In a detached
child run (a sub-agent, depth > 0) nobody can answer: those steps fail unasked (``kind``
"refused", the agent loop's ``NO_APPROVER`` text).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime

from ...config.checks import DEFAULT_DECISIONS
from ...config.context import PlannerContext
from ...runs.approval import (
    allowed_decisions,
    ask_until_valid,
    check_decisions,
    needs_approval,
    rejection_text,
    review_request,
)
from ...runs.events import emit
from ...state import PlannerState, count_of
from ...tools.agents import agent_depth
from ...tools.registry import ToolRegistry
from ..human import NO_APPROVER
from .refs import ReferenceResolutionError, referenced_steps, resolve
from .scheduler import FAILED, OK, as_plan, skipped_result, step_outputs

REJECTED = "rejected"  # the ``kind`` of a rejected step's (failed) result
REFUSED = "refused"  # ... and of one a sub-agent could not ask about
RESPONDED = "responded"  # the ``kind`` of a step a person answered in its tool's place


def review_calls(
    plan: Any,
    ready: list[str],
    results: Mapping[str, Any],
    reviews: Mapping[str, Any],
    registry: ToolRegistry,
    approve: str | None,
) -> list[dict[str, Any]]:
    """``{id, name, args}`` of the ``ready`` steps a human must decide on before they run:
    their tool needs approval and they have no decision in ``reviews``. ``args`` are resolved
    against ``results``. A step whose tool is unknown or whose references do not resolve is
    left out: it fails without running anyway."""
    steps = {s.id: s for s in as_plan(plan).steps}
    calls = []
    for sid in ready:
        step = steps[sid]
        if sid in reviews or step.tool not in registry:
            continue
        if not needs_approval(step.tool, approve, registry.meta(step.tool).side_effects):
            continue
        try:
            args = resolve(step.args, step_outputs(results, referenced_steps(step.args)))
        except ReferenceResolutionError:
            continue
        allowed = list(allowed_decisions(step.tool, approve, registry.meta(step.tool).side_effects))
        calls.append({"id": sid, "name": step.tool, "args": args, "allowed": allowed})
    return calls


def rejected_result(state: Mapping[str, Any], call: Mapping[str, Any], message: str) -> dict[str, Any]:
    """The failed result of a step a human rejected (it never ran)."""
    plan = as_plan(state.get("plan"))
    index = plan.ids().index(call["id"])
    result = skipped_result(
        plan.steps[index], "", index=index, round_=count_of(state, "round"), plan_round=count_of(state, "replans")
    )
    error = rejection_text(str(call["name"]), str(call["id"]), message)
    return {**result, "args": call["args"], "status": FAILED, "kind": REJECTED, "error": error, "duration_s": 0.0}


def responded_result(state: Mapping[str, Any], call: Mapping[str, Any], message: str) -> dict[str, Any]:
    """The result of a step a person answered in its tool's place (``respond``: it never ran)."""
    plan = as_plan(state.get("plan"))
    index = plan.ids().index(call["id"])
    result = skipped_result(
        plan.steps[index], "", index=index, round_=count_of(state, "round"), plan_round=count_of(state, "replans")
    )
    return {**result, "args": call["args"], "status": OK, "kind": RESPONDED, "output": message, "error": None,
            "duration_s": 0.0}


def make_review_node() -> Callable:
    async def review_steps(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        reviewed = state.get("step_reviews") or {}
        calls = [c for c in state.get("awaiting_review") or [] if c["id"] not in reviewed]
        if not calls:
            return {"awaiting_review": []}
        if agent_depth(get_config()) > 0:  # a detached child run (a sub-agent): nobody can answer
            approve = str(state.get("approve") or PlannerContext.of(runtime).approve)
            refused = {
                c["id"]: {**rejected_result(state, c, ""), "error": NO_APPROVER.format(name=c["name"], approve=approve),
                          "kind": REFUSED}
                for c in calls
            }
            for sid, result in refused.items():
                emit("step_result", step=sid, tool=result["tool"], status=FAILED, ok=False, error=result["error"],
                     attempts=0, duration_s=0.0, round=result["round"])
            return {"step_results": refused, "awaiting_review": []}
        allowed = [tuple(c.get("allowed") or DEFAULT_DECISIONS) for c in calls]
        request = review_request(calls, allowed)
        shown = [{k: c[k] for k in ("id", "name", "args")} for c in calls]
        pause = functools.partial(emit, "approval_requested", requests=shown)
        check = functools.partial(check_decisions, requests=request["action_requests"], allowed=allowed)
        decisions = ask_until_valid(request, pause, check, node="review_steps")
        reviews: dict[str, Any] = {}
        decided: dict[str, Any] = {}  # the results of the steps a person decided instead of running them
        for call, decision in zip(calls, decisions, strict=True):
            sid = call["id"]
            reviews[sid] = decision
            event: dict[str, Any] = {"id": sid, "name": call["name"], "decision": decision["type"]}
            if decision["type"] == "reject":
                decided[sid] = rejected_result(state, call, decision["message"])
                event["message"] = decision["message"]
            elif decision["type"] == "respond":  # the person's message is the step's output
                decided[sid] = responded_result(state, call, decision["message"])
                event["message"] = decision["message"]
            elif decision["type"] == "edit":
                event["args"] = decision["args"]
            emit("approval", **event)
        for sid, result in decided.items():
            emit("step_result", step=sid, tool=result["tool"], status=result["status"], ok=result["status"] == OK,
                 error=result["error"], attempts=0, duration_s=0.0, round=result["round"])
        return {"step_reviews": reviews, "step_results": decided, "awaiting_review": []}

    return review_steps
