"""Two-phase reasoning: think with one tool, then act with the tools the thinking named.

With ``reasoning="two_phase"`` every agent turn that may call tools makes two
model calls:

1. **reasoning** – the model is offered only a ``reasoning`` tool (``situation``,
   ``plan``, ``done``). Its call is not kept in the conversation; it becomes a
   ``reasoning`` event and a note in the next request's system prompt.
2. **action** – the ordinary agent turn (``nodes/agent.py``, unchanged) with the
   reasoning in its system prompt and only the tools the reasoning names
   (progressive tool discovery; all tools when it names none). When the reasoning
   says ``done``, no tools are offered: the turn answers.

A turn that must answer anyway (tool limit reached, or the run's budget leaves room for one
turn only) skips phase 1. The wrapper never
touches the agent node itself: it changes only the turn's context and a copy of the state.

With an OpenAI model on the Responses API (``responses_api``), the action call continues the
reasoning call's response instead of resending the conversation (``models/prompt_cache.py``
``Continuation``): it is sent as ``previous_response_id`` with one input, the reasoning call's
result (the note below, and what to do now). When the action request is not the reasoning call's
conversation (another cut of the history) or the provider lost the response, it is sent whole.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.runtime import Runtime

from ..config.context import AgentContext
from ..history.budget import ContextBudget
from ..models.chat import aload_chat_model, model_fallbacks, model_options
from ..models.messages import usage_of
from ..models.prompt_cache import Continuation, can_continue, continuing
from ..models.prompts import build_system_prompt, turn_notice
from ..models.tokens import count_request, resolve_counter
from ..models.usage import current_meter, metered
from ..policies.hooks import Hooks
from ..replies.submit import submit_tool
from ..runs.events import emit
from ..state import AgentState, count_of, keep
from ..tools.registry import ToolRegistry
from .agent import ModelCaller, offered_tools, system_message

REASONING = "reasoning"
TWO_PHASE = "two_phase"

REASONING_INSTRUCTIONS = (
    f"First think, do not act: call the {REASONING} tool with your assessment of the situation, "
    "the next steps (name the tools you will use) and whether the task is done. "
    "Available tools: {tools}."
)

ACTION_NOTE = "Your reasoning for this step:\nSituation: {situation}\nPlan: {plan}"
DONE_NOTE = (
    "Your reasoning for this step:\nSituation: {situation}\nThe task is done: answer the user now, without tools."
)
#: The reasoning call's result when the action call continues its response (Responses API).
ACT_NOW = "Reasoning noted. Now act on it: call the tools your plan names (not reasoning), or answer the user."


def reasoning_tool() -> dict[str, Any]:
    return submit_tool(
        REASONING,
        "Analyze the situation and decide what to do next, naming the tools you will use.",
        {
            "situation": {"type": "string", "description": "Your assessment of the current situation"},
            "plan": {"type": "array", "items": {"type": "string"}, "description": "The next steps, naming tools"},
            "done": {"type": "boolean", "description": "True when the task is complete and you can answer"},
        },
        ["situation", "plan", "done"],
    )


def read_reasoning(message: Any) -> dict[str, Any] | None:
    """``{"situation", "plan", "done"}`` from a ``reasoning`` call, or None."""
    for call in getattr(message, "tool_calls", None) or []:
        if call.get("name") == REASONING:
            args = call.get("args") or {}
            plan = args.get("plan") or []
            plan = [str(p) for p in plan] if isinstance(plan, list) else [str(plan)]
            done = args.get("done")
            done = done if isinstance(done, bool) else str(done).strip().lower() in {"true", "yes", "1"}
            return {"situation": str(args.get("situation") or ""), "plan": plan, "done": done}
    return None


def tools_named(reasoning: dict[str, Any], names: list[str]) -> list[str]:
    """The tool names the reasoning mentions (whole words, case-insensitive), in registry order."""
    text = (reasoning["situation"] + " " + " ".join(reasoning["plan"])).lower()
    return [n for n in names if re.search(rf"(?<![\w]){re.escape(n.lower())}(?![\w])", text)]


def action_continuation(
    llm: Any, request: list[BaseMessage], response: Any, note: str, done: bool
) -> Continuation | None:
    """How the action call continues the reasoning call's response on a stateful model: the
    reasoning call's result is the note; None when the model keeps no responses or the reply holds
    another call beside the reasoning (each would need a result)."""
    calls = getattr(response, "tool_calls", None) or []
    if not isinstance(response, AIMessage) or len(calls) != 1 or not can_continue(llm):
        return None
    act = "The task is done: answer the user now." if done else ACT_NOW
    result = ToolMessage(content=f"{note}\n\n{act}", tool_call_id=str(calls[0].get("id") or ""), name=REASONING)
    return Continuation(request, response, [result])


def make_two_phase_node(
    agent_node: Callable,
    registry: ToolRegistry,
    model: BaseChatModel | None = None,
    budget: ContextBudget | None = None,
    hooks: Hooks | None = None,
) -> Callable:
    """Wrap the agent node: two-phase turns when the run's ``reasoning`` says so (``hooks``: the
    middleware, whose ``wrap_model_call`` layers wrap the reasoning call too)."""
    caller = ModelCaller(hooks)

    async def agent(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        ctx = AgentContext.of(runtime)
        if getattr(ctx, "reasoning", "direct") != TWO_PHASE:
            return await agent_node(state, runtime)
        return await metered_two_phase(state, runtime, ctx)

    async def metered_two_phase(state: AgentState, runtime: Runtime[AgentContext], ctx: AgentContext) -> dict[str, Any]:
        with metered(state, ctx):  # the reasoning call counts; the agent node returns the run's usage
            return await two_phase(state, runtime, ctx)

    async def two_phase(state: AgentState, runtime: Runtime[AgentContext], ctx: AgentContext) -> dict[str, Any]:
        tools = offered_tools(ctx, registry, state)
        if not tools:  # the turn must answer: nothing to reason about
            return await agent_node(state, runtime)
        names = [t.name for t in tools]
        system = build_system_prompt(ctx, state) + "\n\n" + REASONING_INSTRUCTIONS.format(tools=", ".join(names))
        request: list[BaseMessage] = [system_message(system), *state.get("messages", [])]
        if budget is not None:
            request = budget.fit_request(ctx, request, [])
        # The run's budget (model calls, tokens, cost): the reasoning call is made only when it
        # would not be the last turn the budget allows, measured as the agent measures its turns;
        # else the turn is the ordinary one, which then answers without tools.
        meter = current_meter()
        counter = budget.counter if budget is not None else resolve_counter()
        if meter is not None and meter.stop(lambda: count_request(counter, request, [reasoning_tool()])):
            return await agent_node(state, runtime)
        llm = model or await aload_chat_model(ctx.model, **model_options(ctx))
        response = (
            await caller(
                llm, request, [reasoning_tool()], spec=None if model else ctx.model, fallbacks=model_fallbacks(ctx),
                state=state, runtime=runtime,
            )
        ).message
        emit("usage", turn=count_of(state, "turns") + 1, phase=REASONING, **usage_of(response))
        reasoning = read_reasoning(response)
        if reasoning is None:  # no reasoning given: an ordinary turn
            emit("reasoning", phase=REASONING, situation="", plan=[], done=False, tools=names)
            return await agent_node(state, runtime)
        chosen = [] if reasoning["done"] else (tools_named(reasoning, names) or names)
        emit("reasoning", phase=REASONING, tools=chosen, **reasoning)
        note = (DONE_NOTE if reasoning["done"] else ACTION_NOTE).format(
            situation=reasoning["situation"], plan="; ".join(reasoning["plan"]) or "(none)"
        )
        notice = "\n\n".join(p for p in (turn_notice(state), note) if p)
        turn_state = keep(dict(state), notice=notice)
        if reasoning["done"]:
            keep(turn_state, finalize=True)  # offered_tools gives none: the turn answers
            turn_ctx = ctx
        else:
            turn_ctx = dataclasses.replace(ctx, tools=chosen)
        with continuing(action_continuation(llm, request, response, note, reasoning["done"])):
            return await agent_node(turn_state, runtime.override(context=turn_ctx))

    return agent
