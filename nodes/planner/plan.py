"""plan: one model attempt to compile the task into a validated plan.

The model sees the tool registry (names, descriptions, argument schemas) and the
plan format. It may answer with a ``submit_plan`` tool call, with structured
output, or with JSON in text (fenced or bare; common slips are repaired). Every
validation error goes back to the model in the next attempt's messages; the
graph routes back here until the plan is valid or ``max_plan_attempts`` is spent.

After a halt, the same node makes a *revised* plan: the model sees the trace and
the failure, and may depend on / reference the steps that already finished.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langgraph.runtime import Runtime

from ...config.context import PlannerContext
from ...models.chat import Fallback, load_chat_model, model_fallbacks, model_options
from ...models.messages import conversation_so_far, message_text, usage_of
from ...models.tokens import count_request, resolve_counter
from ...models.usage import current_meter
from ...policies.hooks import Hooks
from ...replies.feedback import feedback
from ...replies.submit import find_submission
from ...runs.events import emit
from ...state import PlannerState, count_of
from ...tools.registry import ToolRegistry
from ..agent import ModelCaller
from ..metering import metered_node
from .common import (
    offered_registry,
    remaining_budget,
    task_text,
)
from .prompts import (
    TASK_PROMPT,
    feedback_prompt,
    planner_system_prompt,
    replan_prompt,
    with_history,
)
from .scheduler import OK, build_trace
from .schema import (
    Plan,
    inline_refs,
    plan_json_schema,
    submit_plan_tool,
)
from .validate import validate_plan

PlanMethod = Literal["tool", "structured", "text"]
# Status of a run whose budget (usage.py) left no call for planning: synthesis answers.
OVER_BUDGET = "over_budget"
SUBMIT_PLAN = "submit_plan"


@dataclass
class Attempt:
    """The outcome of one planning call."""

    plan: Plan | None
    errors: list[str]
    response: AIMessage
    # Messages to append to the planning conversation (the reply, and the feedback when rejected).
    messages: list[BaseMessage] = field(default_factory=list)


def initial_messages(task: str, registry: ToolRegistry, history: str = "") -> list[BaseMessage]:
    """The first planning request; ``history``: the thread's earlier turns (``conversation_so_far``)."""
    return [
        SystemMessage(content=planner_system_prompt(registry)),
        HumanMessage(content=with_history(TASK_PROMPT.format(task=task), history)),
    ]


def _plan_args(args: Any) -> bool:
    return isinstance(args, dict) and ("steps" in args or "plan" in args)


def payload_from_message(message: AIMessage) -> tuple[Any, list[str]]:
    """The plan candidate in a reply: a submit_plan call (or any call carrying a plan), parsed
    structured output, or text (a malformed call's arguments and text are read by validation)."""
    found = find_submission(message, SUBMIT_PLAN, accepts=_plan_args)
    if found.called:
        return None, [(
            f"planning: you called {', '.join(found.called)} directly; tools are not run while planning. Submit a plan "
            f"(a submit_plan call or the JSON object) whose steps use those tools instead."
        )]
    return (found.value, []) if found.text is None else (found.text, [])


def feedback_messages(response: AIMessage, errors: list[str]) -> list[BaseMessage]:
    """The rejected reply plus the errors, in a shape every provider accepts."""
    return feedback(response, errors, text=feedback_prompt(errors), empty="(no plan)")


async def plan_attempt(
    model: BaseChatModel,
    messages: list[BaseMessage],
    registry: ToolRegistry,
    *,
    method: PlanMethod = "tool",
    finished: Iterable[str] = (),
    used_ids: Iterable[str] = (),
    spec: str | None = None,
    max_steps: int | None = None,
    fallbacks: Sequence[Fallback] = (),
    caller: ModelCaller | None = None,
    state: Any = None,
    runtime: Any = None,
) -> Attempt:
    """Ask the model once (``fallbacks`` after a provider error) and validate what it produced.
    ``caller``: the node's (its middleware's model-call hooks)."""
    caller = caller or ModelCaller()

    def structured(llm: Any) -> Any:
        """The model with the plan schema (the model itself when it cannot take one)."""
        try:
            return llm.with_structured_output(
                inline_refs(plan_json_schema()) | {"title": "plan", "description": "An execution plan."},
                include_raw=True,
            )
        except (NotImplementedError, AttributeError, ValueError, TypeError):
            return llm

    reply = await caller(
        model, messages, [submit_plan_tool()] if method == "tool" else [], spec=spec, fallbacks=fallbacks,
        state=state, runtime=runtime, structured=structured if method == "structured" else None,
    )  # fmt: skip
    response, parsed = reply.message, reply.parsed
    emit("usage", node="plan", **usage_of(response))

    payload, errors = (parsed, list[str]()) if parsed else payload_from_message(response)
    if not errors:
        result_ = validate_plan(payload, registry, finished=finished, used_ids=used_ids, max_steps=max_steps)
        if result_.ok:
            return Attempt(
                result_.plan, [], response, [AIMessage(content=message_text(response) or "(plan submitted)")]
            )
        errors = result_.errors
    return Attempt(None, errors, response, feedback_messages(response, errors))


@dataclass
class PlanningResult:
    plan: Plan | None
    errors: list[str]
    attempts: int
    messages: list[BaseMessage]


async def make_plan(
    task: str,
    *,
    model: BaseChatModel,
    registry: ToolRegistry,
    max_attempts: int = 3,
    method: PlanMethod = "tool",
) -> PlanningResult:
    """Plan without a graph (``smart-agent plan``): attempts until valid or ``max_attempts``."""
    messages = initial_messages(task, registry)
    errors: list[str] = []
    for attempt in range(1, max_attempts + 1):
        result = await plan_attempt(model, messages, registry, method=method)
        messages = [*messages, *result.messages]
        if result.plan is not None:
            return PlanningResult(result.plan, [], attempt, messages)
        errors = result.errors
    return PlanningResult(None, errors, max_attempts, messages)


def planning_failed_text(errors: list[str], attempts: int) -> str:
    listing = "\n".join(f"- {e}" for e in errors) or "- (no details)"
    return (
        f"Planning failed: the model did not produce a valid plan in {attempts} attempt"
        f"{'s' if attempts != 1 else ''}, so nothing was executed. Problems with the last plan:\n{listing}"
    )


def make_plan_node(
    registry: ToolRegistry,
    model: BaseChatModel | None = None,
    *,
    method: PlanMethod = "tool",
    hooks: Hooks | None = None,
) -> Callable:
    caller = ModelCaller(hooks)

    async def plan(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        ctx = PlannerContext.of(runtime)
        llm = model or load_chat_model(ctx.model, **model_options(ctx))
        tools = offered_registry(registry, ctx)
        task = task_text(state)
        results = state.get("step_results") or {}
        status = state.get("status")
        replans = count_of(state, "replans")
        update: dict[str, Any] = {}

        if status == "halted":  # a new round: revise the plan after a failure
            replans += 1
            used = list(results)
            trace = build_trace(state.get("plan"), results, plan_round=replans - 1)
            messages: list[BaseMessage] = [
                SystemMessage(content=planner_system_prompt(tools)),
                HumanMessage(content=with_history(
                    replan_prompt(task, state.get("plan"), trace, state.get("halt"), used), conversation_so_far(state)
                )),
            ]
            attempts = 0
            update["replans"] = replans
        elif status == "plan_invalid":  # the same round: the conversation already holds the feedback
            messages = list(state.get("planner_messages") or [])
            attempts = count_of(state, "plan_attempts")
        else:
            messages = initial_messages(task, tools, conversation_so_far(state))
            attempts = 0

        meter = current_meter()
        if meter is not None and (stop := meter.stop(lambda: count_request(resolve_counter(), messages))):
            meter.finalize_event(stop, node="plan")  # the run's budget: the last call answers from what there is
            return {**update, "status": OVER_BUDGET}
        finished = [sid for sid, r in results.items() if r.get("status") == OK]
        result = await plan_attempt(
            llm, messages, tools, method=method, finished=finished, used_ids=list(results),
            spec=None if model else ctx.model, max_steps=remaining_budget(state, ctx), fallbacks=model_fallbacks(ctx),
            caller=caller, state=state, runtime=runtime,
        )
        attempts += 1
        if result.plan is not None:
            plan_dict = result.plan.model_dump()
            emit("plan", valid=True, plan=plan_dict, attempt=attempts, replan=replans)
            return {
                **update,
                "plan": plan_dict,
                "status": "planned",
                "plan_errors": [],
                "plan_attempts": attempts,
                "planner_messages": [],
            }
        emit("plan", valid=False, errors=result.errors, attempt=attempts, replan=replans)
        return {
            **update,
            "status": "plan_invalid",
            "plan_errors": result.errors,
            "plan_attempts": attempts,
            "planner_messages": [*messages, *result.messages],
        }

    return metered_node(plan)  # its model calls count in the run's usage


def make_plan_failed_node() -> Callable:
    async def plan_failed(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        answer = planning_failed_text(list(state.get("plan_errors") or []), count_of(state, "plan_attempts"))
        emit("final_answer", answer=answer, status="planning_failed")
        return {
            "status": "planning_failed",
            "error": answer,
            "answer": answer,
            "planner_messages": [],
            "messages": [AIMessage(content=answer)],
        }

    return plan_failed
