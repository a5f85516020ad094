"""Dual agent: a reasoning loop (brainstorm / execute / final) over the planner.

At each iteration ``decide`` asks the model for one structured decision::

    {"action": "brainstorm", "thought": "..."}     -> kept in ``thoughts``
    {"action": "execute", "objective": "..."}      -> the planner graph runs it; its answer
                                                      becomes an asset (``a1``, ``a2``...)
    {"action": "final", "answer": "..."}           -> the run's answer

The decision comes from a ``decide`` tool call or JSON in the text (fenced, bare, or
with common slips); a reply that is neither is sent back with the reason. Each
decision call sees the goal, every thought, every asset and the previous decisions,
not the raw history. After ``max_iterations`` decisions the next one must be final.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime

from ..config.context import DualContext
from ..models.chat import ModelReplyError, aload_chat_model, model_fallbacks, model_options
from ..models.messages import conversation_so_far, message_text, task_text, usage_of
from ..models.tokens import count_request, resolve_counter
from ..models.usage import BUDGET_SPENT_ANSWER, current_meter, run_start_usages
from ..policies.hooks import Hooks
from ..replies.submit import reply_payload, submit_tool
from ..runs.events import emit, preview
from ..state import DualState, count_of
from ..tools.agents import tag_events
from .agent import ModelCaller
from .metering import metered_node

DECIDE = "decide"
ACTIONS = ("brainstorm", "execute", "final")
FIELD_OF = {"brainstorm": "thought", "execute": "objective", "final": "answer"}
ALIASES = {
    "thought": ("thought", "thoughts", "reasoning", "idea", "content", "text"),
    "objective": ("objective", "task", "goal", "instruction", "content"),
    "answer": ("answer", "response", "final_answer", "content", "text"),
}
ASSET_CHARS = 2000

DUAL_SYSTEM = (
    "You solve the user's goal step by step. At each step choose exactly one action:\n"
    "- brainstorm: think about the approach; your thought is kept for the next steps.\n"
    "- execute: hand one concrete objective to the executor, which plans and runs tools "
    "for it and returns a result (stored as an asset you will see).\n"
    "- final: give the final answer to the user.\n\n"
    f"Call the {DECIDE} tool, or reply with only a JSON object: "
    '{"action": "brainstorm", "thought": "..."} or {"action": "execute", "objective": "..."} '
    'or {"action": "final", "answer": "..."}. Execute only what you cannot answer from the '
    "assets; answer as soon as they suffice."
)

LAST_STEP = "This is your last step: the action must be final."


def decide_tool() -> dict[str, Any]:
    return submit_tool(
        DECIDE,
        "Take the next step: brainstorm (thought), execute (objective) or final (answer).",
        {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "thought": {"type": "string", "description": "brainstorm: your reasoning"},
            "objective": {"type": "string", "description": "execute: one concrete objective for the executor"},
            "answer": {"type": "string", "description": "final: the answer to the user"},
        },
        ["action"],
    )


def parse_decision(payload: Any) -> tuple[dict[str, str] | None, str | None]:
    """A decision ``{"action": ..., <field>: text}`` from a parsed reply, or ``(None, why)``."""
    if isinstance(payload, list) and len(payload) == 1:
        payload = payload[0]
    if not isinstance(payload, dict):
        return None, f"expected a JSON object with an action, got {type(payload).__name__}"
    if isinstance(payload.get("decision"), dict):
        payload = payload["decision"]
    action = str(payload.get("action") or payload.get("type") or "").strip().lower()
    if not action:  # infer from the only field given
        given = [a for a in ACTIONS if isinstance(payload.get(FIELD_OF[a]), str) and payload[FIELD_OF[a]].strip()]
        action = given[0] if len(given) == 1 else ""
    action = {"think": "brainstorm", "answer": "final", "finish": "final", "run": "execute"}.get(action, action)
    if action not in ACTIONS:
        return None, f"'action' must be one of {', '.join(ACTIONS)} (got {payload.get('action')!r})"
    field = FIELD_OF[action]
    value = next((payload[k] for k in ALIASES[field] if isinstance(payload.get(k), str) and payload[k].strip()), None)
    if value is None:
        return None, f"a {action} decision needs a non-empty '{field}'"
    return {"action": action, field: value.strip()}, None


def decide_prompt(state: Mapping[str, Any], last_step: bool) -> str:
    parts = [f"Goal:\n{state.get('goal') or ''}"]
    history = conversation_so_far(state)
    if history:
        parts.insert(0, f"Conversation so far:\n{history}")
    thoughts = state.get("thoughts") or []
    if thoughts:
        parts.append("Your thoughts so far:\n" + "\n".join(f"{i + 1}. {t}" for i, t in enumerate(thoughts)))
    assets = state.get("assets") or {}
    if assets:
        parts.append(
            "Assets (results of executed objectives):\n"
            + "\n".join(
                f"[{a['id']}] objective: {a['objective']}\n  status: {a['status']}\n  result: "
                f"{preview(a.get('answer') or '', ASSET_CHARS)}"
                for a in assets.values()
            )
        )
    if state.get("decision_error"):
        parts.append(f"Your previous reply was not a valid decision: {state['decision_error']}")
    parts.append(LAST_STEP if last_step else "Choose the next action.")
    return "\n\n".join(parts)


def make_prepare_node() -> Callable:
    async def prepare(state: DualState, runtime: Runtime[DualContext]) -> dict[str, Any]:
        ctx = DualContext.of(runtime)
        goal = task_text(state)
        update: dict[str, Any] = {
            "goal": goal, "thoughts": [], "decisions": [], "iterations": 0, "decision_error": "",
            "objective": "", "answer": "", "max_iterations": ctx.max_iterations,
            **run_start_usages(state),  # per run (usage.py); the last run's joins thread_usage
            "tool_calls_made": 0,  # every planner run's, against the run's one max_tool_calls
        }
        task = (state.get("task") or "").strip()
        if task:
            update["messages"] = [HumanMessage(content=task)]
        if state.get("task") is not None:
            update["task"] = ""
        return update

    return prepare


def forced_final(state: Mapping[str, Any], decision: dict | None, problem: str | None = None) -> dict[str, str]:
    """The final decision at the iteration limit when the model gave another one.

    Raises ModelReplyError when the model never gave one valid decision and nothing was
    found to report: a canned answer would hide that every reply was malformed."""
    assets = [a for a in (state.get("assets") or {}).values() if a.get("status") == "ok"]
    text = (decision or {}).get("answer") or (assets[-1]["answer"] if assets else "")
    if not text and decision is None and not state.get("decisions"):
        raise ModelReplyError(
            f"The model gave no valid decision in {count_of(state, 'iterations') + 1} attempt(s)"
            f" (last problem: {problem or 'invalid decision'}); no answer to report."
        )
    return {"action": "final", "answer": text or "I reached the step limit before reaching an answer."}


def budget_final(state: Mapping[str, Any]) -> dict[str, str]:
    """The final decision when the run's budget leaves no call: the last result, if any."""
    assets = [a for a in (state.get("assets") or {}).values() if a.get("status") in ("ok", "over_budget")]
    return {"action": "final", "answer": assets[-1]["answer"] if assets else BUDGET_SPENT_ANSWER}


def make_decide_node(model: BaseChatModel | None = None, hooks: Hooks | None = None) -> Callable:
    caller = ModelCaller(hooks)

    async def decide(state: DualState, runtime: Runtime[DualContext]) -> dict[str, Any]:
        ctx = DualContext.of(runtime)
        if not state.get("goal"):
            return {
                "decisions": [
                    {"action": "final", "answer": "Nothing to do: give a goal (the `task` input or a user message)."}
                ]
            }
        llm = model or await aload_chat_model(ctx.model, **model_options(ctx))
        iterations = count_of(state, "iterations") + 1
        last_step = iterations >= count_of(state, "max_iterations", ctx.max_iterations)
        meter = current_meter()
        if meter is not None and (spent := meter.spent()):  # no call left: the final answer from the assets
            meter.finalize_event(spent, node="decide", called=False)
            return {"iterations": iterations, "decision_error": "",
                    "decisions": [*(state.get("decisions") or []), budget_final(state)]}
        fallbacks = model_fallbacks(ctx)
        messages = [SystemMessage(content=DUAL_SYSTEM), HumanMessage(content=decide_prompt(state, last_step))]
        size = lambda: count_request(resolve_counter(), messages)  # noqa: E731 (measured only when a budget needs it)
        if not last_step and meter is not None and (stop := meter.stop(size)):
            meter.finalize_event(stop, node="decide")  # the run's budget: this decision must be final
            last_step = True
            messages[-1] = HumanMessage(content=decide_prompt(state, last_step))
        spec = None if model else ctx.model
        reply = await caller(
            llm, messages, [decide_tool()], spec=spec, fallbacks=fallbacks, state=state, runtime=runtime
        )
        response = reply.message
        emit("usage", node="decide", turn=iterations, **usage_of(response))
        payload, problem = reply_payload(response, DECIDE)
        decision, problem = parse_decision(payload) if problem is None else (None, problem)
        if decision is None and not response.tool_calls and message_text(response).strip() and last_step:
            decision = {"action": "final", "answer": message_text(response).strip()}  # plain prose at the end
        if last_step and (decision is None or decision["action"] != "final"):
            decision = forced_final(state, decision, problem)
        update: dict[str, Any] = {"iterations": iterations}
        if decision is None:
            emit("error", node="decide", error=problem, iteration=iterations)
            return {**update, "decision_error": problem or "invalid decision"}
        emit("reasoning", action=decision["action"], iteration=iterations,
             **{k: v for k, v in decision.items() if k != "action"})
        return {**update, "decision_error": "", "decisions": [*(state.get("decisions") or []), decision]}

    return metered_node(decide)  # its model calls count in the run's usage


def last_decision(state: Mapping[str, Any]) -> dict | None:
    decisions = state.get("decisions") or []
    return decisions[-1] if decisions and not state.get("decision_error") else None


_ROUTE_OF_ACTION: dict[str, Literal["brainstorm", "execute", "finish"]] = {
    "brainstorm": "brainstorm", "execute": "execute", "final": "finish",
}


def route_after_decide(state: DualState) -> Literal["decide", "brainstorm", "execute", "finish"]:
    decision = last_decision(state)
    if decision is None:
        return "decide"  # invalid reply: ask again (the iteration counted)
    return _ROUTE_OF_ACTION[decision["action"]]


async def brainstorm(state: DualState) -> dict[str, Any]:
    decision = last_decision(state) or {}
    return {"thoughts": [*(state.get("thoughts") or []), decision.get("thought", "")]}


async def run_executor(planner: Any, objective: str, runtime: Runtime[DualContext], asset_id: str) -> dict[str, Any]:
    """Run ``planner`` on ``objective`` as a subgraph of the calling node (its plan approval pauses
    the whole run) and return its final state. Its events (plan, steps, model calls) reach the
    run's stream tagged ``agent: <asset id>``: LangGraph does not pass a subgraph's custom events
    to a caller that streams without ``subgraphs=True``."""
    forward = tag_events(runtime.stream_writer, asset_id)
    final: dict[str, Any] = {}
    async for mode, chunk in planner.astream(
        {"task": objective}, context=runtime.context, stream_mode=["custom", "values"]
    ):
        if mode == "custom" and isinstance(chunk, dict) and "event" in chunk:
            forward(chunk)
        elif mode == "values" and isinstance(chunk, dict):
            final = chunk
    return final


def make_execute_node(planner: Any) -> Callable:
    """Run ``planner`` (a compiled planner graph) on the objective as a subgraph."""

    async def execute(state: DualState, runtime: Runtime[DualContext]) -> dict[str, Any]:
        objective = (last_decision(state) or {}).get("objective", "")
        asset_id = f"a{len(state.get('assets') or {}) + 1}"
        emit("step_start", step=asset_id, objective=objective)
        meter = current_meter()
        before = meter.tool_calls if meter is not None else 0
        try:
            # The planner shares the run's budgets (its nodes find this meter: the tool calls the
            # run has left bound its steps) and leaves one model call for the final decision.
            with meter.reserve() if meter is not None else contextlib.nullcontext():
                out = await run_executor(planner, objective, runtime, asset_id)
            answer = str(out.get("answer") or "")
            status = "ok" if out.get("status") in (None, "done") else str(out.get("status"))
            error = out.get("error")
            ran = count_of(out, "tool_calls_made")
        except GraphBubbleUp:
            raise  # the planner's plan approval pauses the whole run
        except Exception as exc:  # the reasoning loop sees the failure and can try another way
            answer, status, error = "", "failed", f"{type(exc).__name__}: {exc}"
            ran = meter.tool_calls - before if meter is not None else 0
        asset = {"id": asset_id, "objective": objective, "answer": answer or (error or ""), "status": status}
        emit("step_result", step=asset_id, ok=status == "ok", status=status, error=error, preview=preview(answer))
        return {"assets": {asset_id: asset}, "objective": objective,
                "tool_calls_made": count_of(state, "tool_calls_made") + ran}

    return metered_node(execute)  # the planner's model calls count in the run's usage


async def finish(state: DualState) -> dict[str, Any]:
    answer = ((last_decision(state) or {}).get("answer") or "").strip()
    emit("final_answer", answer=answer, iterations=count_of(state, "iterations"), assets=len(state.get("assets") or {}))
    return {"answer": answer, "messages": [AIMessage(content=answer)]}

