"""The executor: ``prepare`` a run, ``dispatch`` ready steps, ``run_step`` each one.

``dispatch`` applies ``scheduler.schedule`` to the results so far: it records
skipped steps, notices a halting failure, and lists the steps that may run now;
the route after it fans those out with ``Send("run_step", ...)`` (at most
``max_parallel_tools`` per superstep). Every ``run_step`` writes its result under
its step id (dict-merge reducer); the superstep ends, the checkpoint is saved and
``dispatch`` runs again. A resumed thread therefore never re-runs a step that
finished. The executor never calls a model.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any, cast

from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime

from ...config.context import PlannerContext
from ...models.usage import Meter, add_usage, as_usage, current_meter, run_start_usages, shared_meter, using
from ...policies.hooks import Hooks
from ...policies.tool_retry import BACKOFF_BASE_S, backoff_delay
from ...runs.events import emit
from ...state import PlannerState, count_of
from ...tools.invoke import ToolOutcome, outcome_through, run_tool, tool_timeout
from ...tools.registry import ToolMeta, ToolRegistry
from .common import attempts_used, offered_registry, task_text
from .prompts import clip
from .refs import ReferenceResolutionError, referenced_steps, resolve
from .review import review_calls
from .scheduler import FAILED, OK, as_plan, schedule, skipped_result, step_outputs
from .schema import Step
from .validate import validate_args, validate_plan

PREVIEW_CHARS = 300
# Failures that another attempt cannot fix (other failures are retried only when the
# tool outcome says ``retryable``: a timeout, a connection error, a RetryableToolError).
NOT_RETRIED = {"invalid_args", "reference", "unknown_tool"}
BUDGET = "budget"


def step_retries(step: Step, meta: ToolMeta | None, ctx: Any) -> int:
    """Extra attempts of a step: its own ``retries``, else the tool's ``ToolMeta.retries`` when
    set, else the run's ``tool_retries`` (as a call of the agent loop)."""
    if step.retries is not None:
        return int(step.retries)
    return int((meta.retries if meta is not None else 0) or getattr(ctx, "tool_retries", 0) or 0)


def step_policy(step: Step, meta: ToolMeta | None, ctx: PlannerContext) -> tuple[int, float | None]:
    """(retries, timeout_s) of a step: its own values, else the tool's, else the run's."""
    timeout = step.timeout_s if step.timeout_s is not None else tool_timeout(meta, ctx)
    return step_retries(step, meta, ctx), timeout


def json_safe(value: Any) -> Any:
    """The value itself when it survives JSON (checkpoints, references), else its text."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return None


async def execute_step(
    step: Step,
    outputs: dict[str, Any],
    registry: ToolRegistry,
    ctx: PlannerContext,
    *,
    store: Any = None,
    stream_writer: Any = None,
    backoff_base_s: float = BACKOFF_BASE_S,
    sleep: Callable[[float], Any] = asyncio.sleep,
    max_attempts: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    edited_args: dict[str, Any] | None = None,
    take_retry: Callable[[], bool] | None = None,
    hooks: Hooks | None = None,
) -> dict[str, Any]:
    """Run one step with reference resolution, timeout and retries; never raises for tool failures.

    A tool that pauses the run (``interrupt``, e.g. ``ask_user``) raises ``GraphInterrupt``
    through here: the step is neither failed nor retried, and re-runs with the answer on resume.

    Retries only follow a retryable failure (``ToolOutcome.retryable``). ``max_attempts``
    is what the run's ``max_tool_calls`` lets this step make (0: the step fails with "tool
    budget exhausted" without running); ``take_retry`` pays each retry from what the budget
    has left when it starts (shared live by the steps of a wave; False: the budget is spent,
    the retry is not made and the error says so). ``ctx.step_time_cap_s`` bounds the
    whole step: each attempt's timeout is cut to what is left, and no attempt or
    backoff wait starts past it. ``edited_args``: the arguments a human set in review
    (``review.py``), checked like a plan's (``validate_args``) and used as given instead of
    resolving the step's own. ``hooks``: the user's middleware, whose ``wrap_tool_call`` layers
    wrap each attempt (the planner's steps are tool calls like the loop's).
    """
    result: dict[str, Any] = {"id": step.id, "tool": step.tool, "args": step.args, "status": FAILED, "output": None,
                              "error": None, "attempts": 0, "errors": [], "duration_s": 0.0}
    try:
        args = dict(edited_args) if edited_args is not None else resolve(step.args, outputs)
    except ReferenceResolutionError as exc:
        result.update(error=f"reference: {exc}", kind="reference")
        return result
    result["args"] = args
    if step.tool not in registry:
        result.update(error=f"unknown tool {step.tool!r}", kind="unknown_tool")
        return result
    if edited_args is not None and (problems := validate_args(registry.get(step.tool), args)):
        result.update(error=f"Invalid arguments for tool {step.tool!r} (edited in review): " + "; ".join(problems),
                      kind="invalid_args")
        return result
    if max_attempts is not None and max_attempts < 1:
        result.update(
            error=f"tool budget exhausted: the run used all of its max_tool_calls={ctx.max_tool_calls} tool call(s); "
            f"step {step.id!r} was not run",
            kind=BUDGET,
        )
        return result
    tool = registry.get(step.tool)
    retries, timeout = step_policy(step, registry.meta(step.tool), ctx)
    cap = float(ctx.step_time_cap_s)
    started = clock()
    total = 0.0
    for attempt in range(1, retries + 2):
        left = cap - (clock() - started)
        call_id = f"{step.id}-{attempt}"

        async def once(call: Mapping[str, Any], call_id: str = call_id, left: float = left) -> ToolOutcome:
            return await run_tool(
                tool, dict(call.get("args") or {}), call_id=call_id, context=ctx, store=store,
                stream_writer=stream_writer, timeout_s=min(timeout, left) if timeout else left,
            )

        if hooks:
            tool_runtime: ToolRuntime = ToolRuntime(
                state={}, context=cast(Any, ctx), config=RunnableConfig(), stream_writer=stream_writer,
                tool_call_id=call_id, store=store,
            )  # fmt: skip
            tool_call = {"name": step.tool, "args": args, "id": call_id, "type": "tool_call"}
            request = ToolCallRequest(tool_call=tool_call, tool=tool, state={}, runtime=tool_runtime)  # type: ignore[arg-type]
            outcome = await outcome_through(hooks, request, once, again=take_retry)
        else:
            outcome = await once({"args": args})
        total += outcome.duration_s
        result["attempts"] = attempt
        if outcome.ok:
            output = json_safe(outcome.raw)
            result.update(status=OK, output=outcome.content if output is None else output, error=None)
            break
        result["errors"].append(outcome.content)
        result.update(error=outcome.content, kind=outcome.error)
        if outcome.error in NOT_RETRIED or not outcome.retryable or attempt > retries:
            break
        delay = backoff_delay(attempt, backoff_base_s)
        if clock() - started + delay >= cap:
            result["error"] += f" (not retried: the step's time cap step_time_cap_s={cap:g} s is reached)"
            break
        if (max_attempts is not None and attempt >= max_attempts) or (take_retry is not None and not take_retry()):
            result["error"] += f" (not retried: tool budget exhausted, max_tool_calls={ctx.max_tool_calls})"
            break
        await sleep(delay)
    result["duration_s"] = round(total, 3)
    return result


def share_budget(
    plan: Any, ready: list[str], remaining: int, retries_of: Callable[[Step], int] = lambda _step: 0
) -> dict[str, int]:
    """Attempts each ready step may make: its first one in plan order while the budget lasts
    (0: the step is not run), then its own retries (``retries_of``: :func:`step_retries`).
    The first attempts are paid now; each retry is paid from what the budget has left when it
    starts (``execute_step``'s ``take_retry``), so no step takes more than its own retries
    and none is refused one while the budget still has a call for it."""
    steps = {s.id: s for s in plan.steps}
    return {sid: (1 + max(0, retries_of(steps[sid])) if i < remaining else 0) for i, sid in enumerate(ready)}


# -- nodes ---------------------------------------------------------------------
def make_prepare_node(*, execute_only: bool = False, registry: ToolRegistry | None = None) -> Callable:
    """Reset per-run state and copy the limits routing needs from the context into the state.

    With ``execute_only`` (``smart-agent execute``) the input carries a ``plan``, which is
    validated against ``registry`` instead of asking a model for one.
    """

    async def prepare(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        ctx = PlannerContext.of(runtime)
        old = state.get("step_results") or {}
        update: dict[str, Any] = {
            "status": "planning",
            "plan_errors": [],
            "plan_attempts": 0,
            "planner_messages": [],
            "step_results": {sid: None for sid in old},
            "ready": [],
            "round": 0,
            "replans": 0,
            "halt": None,
            "error": None,
            "answer": "",
            "approve_plan": bool(ctx.approve_plan),
            "max_plan_attempts": int(ctx.max_plan_attempts),
            "max_replans": 0 if execute_only else int(ctx.max_replans),
            "max_parallel": int(ctx.max_parallel_tools),
            "max_tool_calls": int(ctx.max_tool_calls),
            "tool_calls_made": 0,
            "step_budgets": {},
            **run_start_usages(state),  # per run (usage.py); a nested run starts from its caller's
            "step_reviews": {sid: None for sid in state.get("step_reviews") or {}},
            "awaiting_review": [],
            "approve": ctx.approve,
        }
        if execute_only:
            checked = validate_plan(state.get("plan"), registry or ToolRegistry(), max_steps=int(ctx.max_tool_calls))
            if (valid := checked.valid_plan) is not None:
                update.update(plan=valid.model_dump(), status="planned")
            else:
                answer = "Invalid plan, nothing was executed:\n" + "\n".join(f"- {e}" for e in checked.errors)
                update.update(
                    plan=None, status="planning_failed", plan_errors=checked.errors, error=answer, answer=answer
                )
            return update
        update["plan"] = None
        task = (state.get("task") or "").strip()
        if task:
            update["messages"] = [HumanMessage(content=task)]
        elif not task_text(state):
            answer = "Nothing to plan: give a task (the `task` input or a human message)."
            update.update(status="planning_failed", error=answer, answer=answer)
        return update

    return prepare


def make_dispatch_node(registry: ToolRegistry | None = None) -> Callable:
    """``registry``: the tools whose ``ToolMeta`` says which steps need a human's approval
    under the run's ``approve`` setting (``review.py``); None: no step does."""

    async def dispatch(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        plan = as_plan(state.get("plan"))
        results = state.get("step_results") or {}
        round_ = count_of(state, "round")
        replans = count_of(state, "replans")
        ctx = PlannerContext.of(runtime)
        max_parallel = count_of(state, "max_parallel", ctx.max_parallel_tools)
        budget = state.get("max_tool_calls")
        budget = int(ctx.max_tool_calls if budget is None else budget)
        used = attempts_used(results)
        shown = budget  # (the limit an unpaid step's error names)
        # A planner run inside another run (the dual graph's executor, a planner as a tool) shares
        # that run's tool budget: what it has left bounds this one's.
        meter = current_meter()
        left = meter.tools_left() if meter is not None else None
        if left is not None and used + left < budget:
            budget, shown = used + left, int(ctx.max_tool_calls)
        offered = offered_registry(registry, ctx) if registry is not None else None

        def retries_of(step: Step) -> int:
            return step_retries(step, offered.meta(step.tool) if offered is not None and step.tool in offered else None,
                                ctx)
        approve = state.get("approve")  # the run's (prepare), not a resume's context
        approve = approve if isinstance(approve, str) else ctx.approve
        written: dict[str, Any] = {}
        while True:  # steps the budget cannot pay for fail; their failure may halt or skip others
            decision = schedule(
                plan, {**results, **written}, max_parallel=max_parallel, round_=round_, plan_round=replans
            )
            for sid, entry in decision.skipped.items():
                emit("step_result", step=sid, tool=entry["tool"], status="skipped", ok=False, error=entry["error"],
                     attempts=0, duration_s=0.0, round=round_)
            written.update(decision.skipped)
            shares = share_budget(plan, decision.ready, budget - used, retries_of)
            unpaid = [sid for sid in decision.ready if shares[sid] < 1]
            if decision.halt is not None or not unpaid:
                break
            for sid in unpaid:
                index = plan.ids().index(sid)
                entry = {
                    **skipped_result(plan.steps[index], "", index=index, round_=round_, plan_round=replans),
                    "status": FAILED,
                    "kind": BUDGET,
                    "error": f"tool budget exhausted: the run used all of its max_tool_calls={shown} tool call(s); "
                    f"step {sid!r} was not run",
                }
                emit("step_result", step=sid, tool=entry["tool"], status=FAILED, ok=False, error=entry["error"],
                     attempts=0, duration_s=0.0, round=round_)
                written[sid] = entry
        update: dict[str, Any] = {"step_results": written, "ready": decision.ready, "tool_calls_made": used,
                                  "step_budgets": {sid: shares[sid] for sid in decision.ready}, "awaiting_review": []}
        if budget != state.get("max_tool_calls"):
            update["max_tool_calls"] = budget  # (the enclosing run's budget is the smaller: routes read it)
        if meter is None:  # (nested, the enclosing run's meter already holds the steps' usage)
            round_usage = [  # (what the steps of the wave that just ended used: their sub-agents' model calls)
                r["usage"] for r in results.values()
                if r and r.get("usage") and r.get("round") == round_ and r.get("plan_round") == replans
            ]
            if round_usage:
                update["usage"] = reduce(add_usage, round_usage, as_usage(state.get("usage")))
        paid = sum(1 for sid in decision.ready if shares[sid] > 0)
        if decision.ready and decision.halt is None:
            # The wave's first attempts are paid now: the enclosing run's meter holds them, or the
            # wave's own meter starts with them (step_task); retries are paid as they start.
            if meter is not None:
                meter.take_tools(paid)
            update["budget_key"] = uuid.uuid4().hex
        if decision.halt is not None:
            update.update(status="halted", halt=decision.halt)
        elif decision.ready:
            update.update(status="running", round=round_ + 1)
            if registry is not None:
                update["awaiting_review"] = review_calls(
                    plan, decision.ready, {**results, **written}, state.get("step_reviews") or {},
                    offered_registry(registry, ctx), approve,
                )
        else:
            update["status"] = "done"
        return update

    return dispatch


def step_task(state: Mapping[str, Any], step_id: str) -> dict[str, Any]:
    """What ``run_step`` receives through ``Send``: the step and the outputs it references."""
    plan = as_plan(state.get("plan"))
    index = plan.ids().index(step_id)
    step = plan.steps[index]
    results = state.get("step_results") or {}
    return {
        "step": step.model_dump(),
        "outputs": step_outputs(results, referenced_steps(step.args)),
        "index": index,
        "round": count_of(state, "round"),
        "plan_round": count_of(state, "replans"),
        "max_attempts": (state.get("step_budgets") or {}).get(step_id),
        "review": (state.get("step_reviews") or {}).get(step_id),
        # The wave's shared budget (run_step): its meter's key, and (the run's tool executions with
        # the wave's first attempts, its max_tool_calls) for the meter the first step creates.
        "budget_key": state.get("budget_key") or "",
        "usage": state.get("usage"),
        "tools": [count_of(state, "tool_calls_made") + paid_first_attempts(state), state.get("max_tool_calls")],
    }


def paid_first_attempts(state: Mapping[str, Any]) -> int:
    """The first attempts dispatch paid for in the current wave, of the steps still to run (a step
    a human rejected has its result already)."""
    results = state.get("step_results") or {}
    return sum(1 for sid, n in (state.get("step_budgets") or {}).items() if n and n > 0 and sid not in results)


def make_run_step_node(
    registry: ToolRegistry, *, backoff_base_s: float = BACKOFF_BASE_S, hooks: Hooks | None = None
) -> Callable:
    async def run_step(task: dict, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        ctx = PlannerContext.of(runtime)
        step = Step.model_validate(task["step"])
        emit("step_start", step=step.id, tool=step.tool, round=task.get("round"), depends_on=step.depends_on)
        offered = offered_registry(registry, ctx)  # an edited plan cannot reach tools the run does not offer
        review = task.get("review") or {}
        # The steps of a wave share the run's budgets live: the enclosing run's meter when this
        # planner runs inside another run, else the wave's own (its first attempts already on it).
        # This step's meter counts its retries and every call of the sub-agents it runs.
        enclosing = current_meter()
        paid = enclosing
        if paid is None:
            made, limit = (list(task.get("tools") or []) + [0, None])[:2]
            paid = shared_meter(
                task.get("budget_key") or step.id, task.get("usage"), ctx, reserve_calls=1,
                tools=(int(made or 0), int(ctx.max_tool_calls if limit is None else limit)),
            )
        own = Meter(parent=paid)
        with using(own):
            result = await execute_step(
                step, dict(task.get("outputs") or {}), offered, ctx,
                store=runtime.store, stream_writer=runtime.stream_writer, backoff_base_s=backoff_base_s,
                # (0: the budget paid no attempt; a retry is paid when it starts, take_retry)
                max_attempts=0 if task.get("max_attempts") == 0 else None,
                edited_args=review.get("args") if review.get("type") == "edit" else None,
                take_retry=lambda: own.take_tools(1) == 1, hooks=hooks,
            )
        if (task.get("max_attempts") or 0) > 0 and not result["attempts"]:
            paid.release_tools(1)  # its first attempt was paid for and never ran
        result["tool_calls"] = (1 if result["attempts"] else 0) + own.tool_calls
        if enclosing is None and own.usage["model_calls"]:
            result["usage"] = own.usage  # (dispatch adds it to the run's)
        result.update(index=task.get("index", 0), round=task.get("round", 0), plan_round=task.get("plan_round", 0))
        preview = clip(
            result["output"] if isinstance(result["output"], str) else json.dumps(result["output"], default=str),
            PREVIEW_CHARS,
        )
        emit("step_result", step=step.id, tool=step.tool, status=result["status"], ok=result["status"] == OK,
             error=result["error"], attempts=result["attempts"], duration_s=result["duration_s"],
             round=result["round"], preview=preview if result["status"] == OK else None, args=result["args"])
        return {"step_results": {step.id: result}}

    return run_step
