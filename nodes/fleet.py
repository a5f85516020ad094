"""Fleet: split a goal into independent subtasks, run one worker agent per subtask, aggregate.

* ``decompose`` asks the model for the subtasks (a ``submit_subtasks`` call or a JSON
  list), validates them (non-empty distinct strings, at most ``max_subtasks``) and sends
  every problem back to the model once; a model that still fails gets one subtask, the
  whole goal, so the run always proceeds.
* ``dispatch`` picks the next ``max_workers`` subtasks without a result; the route fans
  them out with ``Send`` (one round = one superstep of parallel workers).
* ``worker`` runs the agent graph on one subtask with its own conversation. Any
  exception becomes a failed result (``ok: False`` with the error) and never stops
  the other workers.
* ``aggregate`` gives the goal and every result (failures included) to the model once
  and returns its answer.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import Send

from ..config.context import FleetContext
from ..models.chat import Fallback, aload_chat_model, model_fallbacks, model_options
from ..models.messages import conversation_so_far, message_text, task_text, usage_of
from ..models.usage import Meter, add_usage, as_usage, shared_meter, using
from ..policies.hooks import Hooks
from ..replies.feedback import feedback
from ..replies.submit import reply_payload, submit_tool
from ..runs.events import emit, preview
from ..state import FleetState, count_of
from ..tools.agents import (
    AGENT_KEY,
    DEPTH_KEY,
    agent_depth,
    parent_stream_writer,
    run_detached,
    tag_events,
)
from .agent import ModelCaller, ask_again_if_empty
from .metering import metered_node

SUBMIT_SUBTASKS = "submit_subtasks"
DECOMPOSE_ATTEMPTS = 2

DECOMPOSE_SYSTEM = (
    "You coordinate a fleet of worker agents. Split the user's goal into independent "
    "subtasks that separate workers can do at the same time, without seeing each other's "
    "work. Each subtask is one self-contained instruction naming everything the worker "
    "needs. Use as few subtasks as the goal needs, at most {max_subtasks}; a goal that "
    "cannot be split is one subtask.\n\n"
    f"Call {SUBMIT_SUBTASKS} with the list, or reply with only a JSON list of strings, e.g. "
    '["Find the population of Paris", "Find the population of Rome"].'
)

# The decomposition request on a thread with earlier turns (Assistant mode): the workers see only
# their subtask, so what the goal refers to in those turns must go into the subtasks.
DECOMPOSE_HISTORY = (
    "Conversation so far (earlier turns of this thread; the workers do not see it, so put what they "
    "need from it into their subtasks):\n{history}\n\nGoal:\n{goal}"
)

WORKER_TASK = "You are one worker of a fleet working on this goal:\n{goal}\n\nYour subtask (do only this):\n{task}"

AGGREGATE_SYSTEM = (
    "You combine the results of worker agents into one answer to the user's goal. Use only "
    "what the results say. If a worker failed, answer from the others and say briefly which "
    "part is missing."
)


def subtasks_tool(max_subtasks: int) -> dict[str, Any]:
    return submit_tool(
        SUBMIT_SUBTASKS,
        f"Submit the independent subtasks of the goal (1 to {max_subtasks}).",
        {"subtasks": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": max_subtasks}},
        ["subtasks"],
    )


def validate_subtasks(payload: Any, max_subtasks: int) -> tuple[list[str], list[str]]:
    """``(subtasks, [])`` when valid, else ``([], errors)``.

    Accepts a list of strings, a list of ``{"task": ...}`` objects, or an object with a
    ``subtasks`` (or ``tasks``) list. Exact duplicates are dropped.
    """
    if isinstance(payload, dict):
        for key in ("subtasks", "tasks"):
            if key in payload:
                payload = payload[key]
                break
        else:
            return [], ["expected a list of subtasks (or an object with a 'subtasks' list)"]
    if not isinstance(payload, list):
        return [], [f"expected a list of subtasks, got {type(payload).__name__}"]
    errors: list[str] = []
    out: list[str] = []
    for i, item in enumerate(payload):
        if isinstance(item, dict):
            item = item.get("task", item.get("description"))
        if not isinstance(item, str) or not item.strip():
            errors.append(f"subtask {i} must be a non-empty string")
        elif item.strip() not in out:
            out.append(item.strip())
    if not payload:
        errors.append("the list of subtasks is empty")
    if len(out) > max_subtasks:
        errors.append(f"{len(out)} subtasks is too many: give at most {max_subtasks} (merge related ones)")
    return ([], errors) if errors else (out, [])


async def decompose_goal(
    model: BaseChatModel, goal: str, max_subtasks: int, *, spec: str | None = None, fallbacks: Sequence[Fallback] = (),
    history: str = "", caller: ModelCaller | None = None, state: Any = None, runtime: Any = None,
) -> tuple[list[str], list[str], list[dict]]:
    """Ask the model for subtasks: ``(subtasks, last errors, usages)``; empty subtasks when it never succeeded.
    ``history``: the thread's earlier turns (``conversation_so_far``), shown before the goal; ``caller``:
    the node's (its middleware's model-call hooks)."""
    caller = caller or ModelCaller()
    tools = [subtasks_tool(max_subtasks)]
    messages: list[BaseMessage] = [
        SystemMessage(content=DECOMPOSE_SYSTEM.format(max_subtasks=max_subtasks)),
        HumanMessage(content=DECOMPOSE_HISTORY.format(history=history, goal=goal) if history else goal),
    ]
    usages: list[dict] = []
    errors: list[str] = []
    for _ in range(DECOMPOSE_ATTEMPTS):
        response = (
            await caller(model, messages, tools, spec=spec, fallbacks=fallbacks, state=state, runtime=runtime)
        ).message
        usages.append(usage_of(response))
        payload, problem = reply_payload(response, SUBMIT_SUBTASKS)
        subtasks, errors = validate_subtasks(payload, max_subtasks) if problem is None else ([], [problem])
        if subtasks:
            return subtasks, [], usages
        messages += feedback(response, errors)
    return [], errors, usages


def make_decompose_node(model: BaseChatModel | None = None, hooks: Hooks | None = None) -> Callable:
    caller = ModelCaller(hooks)

    async def decompose(state: FleetState, runtime: Runtime[FleetContext]) -> dict[str, Any]:
        ctx = FleetContext.of(runtime)
        goal = task_text(state)
        update: dict[str, Any] = {}
        task = (state.get("task") or "").strip()
        if task:
            update["messages"] = [HumanMessage(content=task)]
        if state.get("task") is not None:
            update["task"] = ""  # consumed: a later run on this thread must not re-add it
        # Forget the previous run's results on this thread (None deletes a key).
        update["results"] = {wid: None for wid in (state.get("results") or {})}
        if not goal:
            answer = "Nothing to do: give a goal (the `task` input or a user message)."
            return {**update, "goal": "", "subtasks": [], "status": "done", "error": answer, "answer": answer}
        llm = model or await aload_chat_model(ctx.model, **model_options(ctx))
        subtasks, errors, usages = await decompose_goal(
            llm, goal, ctx.max_subtasks, spec=None if model else ctx.model, fallbacks=model_fallbacks(ctx),
            history=conversation_so_far(state), caller=caller, state=state, runtime=runtime,
        )
        for usage in usages:
            emit("usage", node="decompose", **usage)
        if not subtasks:
            emit("error", node="decompose", error="; ".join(errors), fallback="the whole goal is one subtask")
            subtasks = [goal]
        items = [{"id": f"w{i + 1}", "task": t} for i, t in enumerate(subtasks)]
        emit("plan", subtasks=items)
        return {
            **update, "goal": goal, "subtasks": items, "ready": [], "round": 0,
            "max_workers": ctx.max_workers, "status": "running", "error": None, "answer": "", "tool_calls_made": 0,
        }

    return metered_node(decompose, run_start=True)  # the run's usage starts here


def pending_subtasks(state: Mapping[str, Any]) -> list[str]:
    done = state.get("results") or {}
    return [s["id"] for s in state.get("subtasks") or [] if s["id"] not in done]


def make_dispatch_node() -> Callable:
    async def dispatch(state: FleetState) -> dict[str, Any]:
        if state.get("status") != "running":
            return {"ready": []}
        # What the workers of the round that just ended used (each result carries its own).
        round_ = count_of(state, "round")
        done = [r for r in (state.get("results") or {}).values() if r and r.get("round") == round_]
        used = [r.get("usage") for r in done]
        usage = reduce(add_usage, used, as_usage(state.get("usage"))) if used else as_usage(state.get("usage"))
        made = count_of(state, "tool_calls_made") + sum(int(r.get("tool_calls_made") or 0) for r in done)
        limit = max(1, count_of(state, "max_workers", 1))
        ready = pending_subtasks(state)[:limit]
        if not ready:
            return {"ready": [], "status": "aggregating", "usage": usage, "tool_calls_made": made}
        return {"ready": ready, "round": round_ + 1, "usage": usage, "tool_calls_made": made,
                "budget_key": uuid.uuid4().hex}

    return dispatch


def worker_input(state: Mapping[str, Any], worker_id: str) -> dict[str, Any]:
    """What ``worker`` receives through ``Send``."""
    task = next(s["task"] for s in state.get("subtasks") or [] if s["id"] == worker_id)
    return {
        "id": worker_id, "task": task, "goal": state.get("goal") or "", "round": count_of(state, "round"),
        "budget_key": state.get("budget_key") or "", "usage": state.get("usage"),
        "tool_calls_made": count_of(state, "tool_calls_made"),
    }


def route_after_dispatch(state: FleetState) -> list[Send] | str:
    """One ``Send`` per ready subtask; once none is left, aggregate (or end when there was nothing to do)."""
    if state.get("status") == "running" and state.get("ready"):
        return [Send("worker", worker_input(state, wid)) for wid in state["ready"]]
    if state.get("subtasks"):
        return "aggregate"
    return "__end__"


def worker_config(worker_id: str) -> dict[str, Any]:
    """A worker's own run config (it is a separate run, never a checkpointed subgraph)."""
    try:
        parent = get_config()
    except RuntimeError:  # outside a graph run
        parent = {}
    callbacks = parent.get("callbacks")
    config: dict[str, Any] = {
        "configurable": {
            AGENT_KEY: worker_id,
            DEPTH_KEY: agent_depth(parent) + 1,
            "thread_id": f"fleet-{worker_id}-{uuid.uuid4().hex[:8]}",
        }
    }
    if callbacks is not None:
        config["callbacks"] = callbacks
    return config


def make_worker_node(agent_graph: Any) -> Callable:
    """``agent_graph``: a compiled agent graph, run as its own run with its own messages;
    its events reach the fleet's stream tagged ``agent: <worker id>``."""

    async def worker(item: dict, runtime: Runtime[FleetContext]) -> dict[str, Any]:
        ctx = FleetContext.of(runtime)
        # Workers do not read or write long-term memory: N parallel writers of one
        # observation each would flood it; the fleet's caller owns the memory. Nobody answers
        # a worker's question (a detached run), so no ask_user; its approvals are refused.
        child_ctx = dataclasses.replace(ctx, memory=False, ask_user=False) if ctx.memory or ctx.ask_user else ctx
        wid, task = item["id"], item["task"]
        emit("step_start", step=wid, task=task, round=item.get("round"))
        start = time.perf_counter()
        result: dict[str, Any] = {"id": wid, "task": task, "round": item.get("round", 0)}
        # The workers of a round share the run's budgets live (one model call kept for the
        # aggregation; every tool call of every worker is one of the run's max_tool_calls, reserved
        # before it runs); this worker's own count goes into its result.
        shared = shared_meter(
            item.get("budget_key") or wid, item.get("usage"), ctx, reserve_calls=1,
            tools=(int(item.get("tool_calls_made") or 0), int(ctx.max_tool_calls)),
        )
        own = Meter(parent=shared)
        try:
            with using(own):
                out = await run_detached(
                    agent_graph, {"task": WORKER_TASK.format(goal=item.get("goal", ""), task=task)},
                    context=child_ctx, config=worker_config(wid),
                    forward=tag_events(parent_stream_writer(runtime.stream_writer), wid),
                )
            result.update(ok=True, answer=str(out.get("answer") or ""), error=None)
        except GraphBubbleUp:
            raise  # interrupts and control flow belong to LangGraph
        except Exception as exc:  # one worker's failure is recorded; the others go on
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            result.update(ok=False, answer="", error=f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
        result["duration_s"] = round(time.perf_counter() - start, 4)
        result["usage"] = own.usage
        result["tool_calls_made"] = own.tool_calls  # (a failed worker's calls count too)
        emit("step_result", step=wid, ok=result["ok"], error=result["error"], duration_s=result["duration_s"],
             round=result["round"], preview=preview(result["answer"]) if result["ok"] else None)
        return {"results": {wid: result}}

    return worker


def aggregate_prompt(goal: str, subtasks: list[dict], results: dict[str, Any]) -> str:
    parts = [f"Goal:\n{goal}", "Worker results:"]
    for s in subtasks:
        r = results.get(s["id"]) or {}
        if r.get("ok"):
            parts.append(f"[{s['id']}] {s['task']}\nResult: {r.get('answer') or '(empty)'}")
        else:
            parts.append(f"[{s['id']}] {s['task']}\nFAILED: {r.get('error') or 'no result'}")
    parts.append("Write the final answer to the goal.")
    return "\n\n".join(parts)


def make_aggregate_node(model: BaseChatModel | None = None, hooks: Hooks | None = None) -> Callable:
    caller = ModelCaller(hooks)

    async def aggregate(state: FleetState, runtime: Runtime[FleetContext]) -> dict[str, Any]:
        ctx = FleetContext.of(runtime)
        llm = model or await aload_chat_model(ctx.model, **model_options(ctx))
        subtasks = state.get("subtasks") or []
        results = state.get("results") or {}
        messages = [
            SystemMessage(content=AGGREGATE_SYSTEM),
            HumanMessage(content=aggregate_prompt(state.get("goal") or "", subtasks, results)),
        ]
        spec = None if model else ctx.model
        fallbacks = model_fallbacks(ctx)
        options: dict[str, Any] = {"spec": spec, "fallbacks": fallbacks, "state": state, "runtime": runtime}
        response = (await caller(llm, messages, **options)).message
        emit("usage", node="aggregate", **usage_of(response))
        # An empty answer is asked for once more, then fails the run (never an empty answer).
        response = await ask_again_if_empty(caller, llm, messages, [], response, options=options)
        answer = message_text(response).strip()
        failed = [wid for wid, r in results.items() if r and not r.get("ok")]
        emit("final_answer", answer=answer, workers=len(subtasks), failed=failed)
        return {"answer": answer, "status": "done", "messages": [AIMessage(content=answer)]}

    return metered_node(aggregate)  # its model call counts in the run's usage

