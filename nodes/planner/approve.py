"""approve: pause with the validated plan so a person can approve, edit or reject it.

Runs only when ``approve_plan`` is on. The interrupt value is::

    {"type": "plan_approval", "task": ..., "plan": {...}, "replan": 0,
     "errors": [...problems with a previous edit...], "actions": [...]}

Resume with ``Command(resume=...)`` where the value is one of::

    {"action": "approve"}
    {"action": "edit", "plan": {...}}        # re-validated; problems re-open the prompt
    {"action": "reject", "reason": "..."}    # ends the run, nothing (more) is executed

(``"approve"`` / ``"reject"`` strings and ``True`` / ``False`` are accepted too.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from ...config.context import PlannerContext
from ...runs.events import emit
from ...state import PlannerState, count_of
from ...tools.registry import ToolRegistry
from .common import offered_registry, remaining_budget, task_text
from .scheduler import OK
from .validate import validate_plan

ACTIONS = ("approve", "edit", "reject")

RESUME_HELP = (
    "Resume with {'action': 'approve'}, {'action': 'edit', 'plan': {...}} or "
    "{'action': 'reject', 'reason': '...'}"
)


def parse_decision(value: Any) -> tuple[str | None, dict[str, Any]]:
    """Normalise a resume value to ``(action, body)``; ``action`` is None when unreadable."""
    if value is True:
        return "approve", {}
    if value is False:
        return "reject", {}
    if isinstance(value, str):
        word = value.strip().lower()
        aliases = {"y": "approve", "yes": "approve", "ok": "approve", "n": "reject", "no": "reject"}
        word = aliases.get(word, word)
        return (word if word in ("approve", "reject") else None), {}
    if isinstance(value, dict):
        action = str(value.get("action") or "").strip().lower()
        if not action and "plan" in value:
            action = "edit"
        return (action if action in ACTIONS else None), value
    return None, {}


def approval_request(state: Mapping[str, Any]) -> dict[str, Any]:
    errors = list(state.get("plan_errors") or []) if state.get("status") == "approval_invalid" else []
    return {
        "type": "plan_approval",
        "task": task_text(state),
        "plan": state.get("plan"),
        "replan": count_of(state, "replans"),
        "finished_steps": sorted(sid for sid, r in (state.get("step_results") or {}).items() if r.get("status") == OK),
        "errors": errors,
        "actions": list(ACTIONS),
        "help": RESUME_HELP,
    }


def make_approve_node(registry: ToolRegistry) -> Callable:
    async def approve(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        ctx = PlannerContext.of(runtime)
        decision = interrupt(approval_request(state))
        action, body = parse_decision(decision)
        if action == "approve":
            return {"status": "approved", "plan_errors": []}
        if action == "reject":
            reason = str(body.get("reason") or "").strip() or "no reason given"
            answer = f"The plan was rejected ({reason}). Nothing further was executed."
            emit("final_answer", answer=answer, status="rejected")
            return {"status": "rejected", "error": answer, "answer": answer, "messages": [AIMessage(content=answer)]}
        if action == "edit":
            results = state.get("step_results") or {}
            finished = [sid for sid, r in results.items() if r.get("status") == OK]
            checked = validate_plan(
                body.get("plan"), offered_registry(registry, ctx), finished=finished, used_ids=list(results),
                max_steps=remaining_budget(state, ctx),
            )
            if (valid := checked.valid_plan) is not None:
                plan = valid.model_dump()
                emit("plan", valid=True, plan=plan, source="edit", replan=count_of(state, "replans"))
                return {"status": "approved", "plan": plan, "plan_errors": []}
            emit("plan", valid=False, errors=checked.errors, source="edit")
            return {"status": "approval_invalid", "plan_errors": ["edited plan: " + e for e in checked.errors]}
        return {
            "status": "approval_invalid",
            "plan_errors": [f"unrecognised approval response {decision!r}. {RESUME_HELP}"],
        }

    return approve
