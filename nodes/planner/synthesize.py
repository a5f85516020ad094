"""synthesize: one model call turns the task and the execution trace into the answer.

``report`` is the model-free counterpart used by ``smart-agent execute``: a
deterministic text rendering of the same trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ...config.context import PlannerContext
from ...models.chat import load_chat_model, model_fallbacks, model_options
from ...models.messages import message_text, usage_of
from ...models.usage import BUDGET_SPENT_ANSWER, current_meter
from ...policies.hooks import Hooks
from ...runs.events import emit
from ...state import PlannerState, count_of
from ..agent import ModelCaller, ask_again_if_empty
from ..metering import metered_node
from .common import task_text
from .prompts import SYNTHESIZE_SYSTEM, clip, synthesize_prompt
from .refs import as_text
from .scheduler import OK, build_trace, counts


def run_notes(state: Mapping[str, Any]) -> list[str]:
    """What the synthesizer must know beyond the trace (a halt, a failed replan)."""
    notes = []
    halt = state.get("halt")
    if state.get("status") in ("halted", "plan_invalid") and halt:
        failed = ", ".join(f"{sid} ({err})" for sid, err in (halt.get("errors") or {}).items())
        notes.append(f"Execution halted because a step failed: {failed}. Steps marked not_run never ran.")
    if state.get("status") == "plan_invalid" and count_of(state, "replans") > 0:
        notes.append("A revised plan was attempted but was invalid, so the remaining work was not done.")
    return notes


def final_status(state: Mapping[str, Any]) -> str:
    status = state.get("status")
    if status == "over_budget":
        return status
    return "halted" if status in ("halted", "plan_invalid") else "done"


def make_synthesize_node(model: BaseChatModel | None = None, hooks: Hooks | None = None) -> Callable:
    caller = ModelCaller(hooks)

    async def synthesize(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        ctx = PlannerContext.of(runtime)
        meter = current_meter()
        if meter is not None and (spent := meter.spent()):  # the run's budget left no call: the trace as text
            meter.finalize_event(spent, node="synthesize", called=False)
            answer = f"{BUDGET_SPENT_ANSWER}\n\n{report_text(state)}"
            emit("final_answer", answer=answer, status="over_budget")
            return {"answer": answer, "status": "over_budget", "messages": [AIMessage(content=answer)]}
        llm = model or load_chat_model(ctx.model, **model_options(ctx))
        trace = build_trace(state.get("plan"), state.get("step_results") or {}, plan_round=count_of(state, "replans"))
        messages = [
            SystemMessage(content=SYNTHESIZE_SYSTEM),
            HumanMessage(content=synthesize_prompt(task_text(state), trace, run_notes(state))),
        ]
        spec = None if model else ctx.model
        fallbacks = model_fallbacks(ctx)
        options: dict[str, Any] = {"spec": spec, "fallbacks": fallbacks, "state": state, "runtime": runtime}
        response = (await caller(llm, messages, **options)).message
        usage = usage_of(response)
        emit("usage", node="synthesize", **usage)
        # An empty answer is asked for once more, then fails the run (never an empty answer).
        if not (meter is not None and meter.spent()):  # (an empty reply: once more, when the budget allows)
            response = await ask_again_if_empty(caller, llm, messages, [], response, options=options)
        answer = message_text(response).strip() or BUDGET_SPENT_ANSWER
        status = final_status(state)
        emit("final_answer", answer=answer, status=status, steps=counts(trace))
        return {"answer": answer, "status": status, "messages": [AIMessage(content=answer)]}

    return metered_node(synthesize)  # its model call counts in the run's usage


def report_text(state: Mapping[str, Any]) -> str:
    """A deterministic summary of an execution (no model): status line, steps, final output."""
    trace = build_trace(state.get("plan"), state.get("step_results") or {}, plan_round=count_of(state, "replans"))
    tally = counts(trace)
    status = final_status(state)
    lines = [
        f"Execution {status}: {tally['ok']} ok, {tally['failed']} failed, {tally['skipped']} skipped, "
        f"{tally['not_run']} not run."
    ]
    for e in trace:
        line = f"- {e['id']} {e['tool']}: {e['status']}"
        if e["status"] != OK and e.get("error"):
            line += f" ({clip(str(e['error']), 300)})"
        lines.append(line)
    finished = [e for e in trace if e["status"] == OK]
    if finished:
        lines.append("")
        lines.append(f"Output of {finished[-1]['id']}:")
        lines.append(clip(as_text(finished[-1]["output"])))
    return "\n".join(lines)


def make_report_node() -> Callable:
    async def report(state: PlannerState, runtime: Runtime[PlannerContext]) -> dict[str, Any]:
        answer = report_text(state)
        status = final_status(state)
        emit("final_answer", answer=answer, status=status)
        return {"answer": answer, "status": status}

    return report
