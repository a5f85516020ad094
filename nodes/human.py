"""human: a person reviews the turn's tool calls and answers the model's questions.

``route_after_agent`` sends a turn here (instead of straight to ``tools``) when one of its
calls needs a human (:func:`needs_human`): a call the run's ``approve`` setting names (a tool
name, or ``side-effects`` and the tool's ``ToolMeta.side_effects``), or an ``ask_user`` call
while the run has ``ask_user`` on. The node

* pauses ONCE with ``interrupt(review_request(...))`` for every call of the turn that needs
  approval, and checks the resume value (``approval.check_decisions``; a bad one is answered
  by the same interrupt again and a one-line ``error`` event, see ``approval.ask_until_valid``);
* then pauses once per ``ask_user`` call with ``interrupt({"question": ...})``, in call order
  (LangGraph matches a node's interrupts to the resume values by order);
* returns the AI message with edited arguments (same id: ``add_messages`` replaces it) and
  ``reviews``: ``{call_id: {"type": "reject", "message"} | {"type": "answer", "text"} |
  {"type": "refuse", "message"}}`` (a ``respond`` decision and an ``ask_user`` answer are both
  an ``answer``), which the tools node answers without running the tool.

It never runs a tool. LangGraph re-runs it from the start on every resume, so it has no side
effect before its interrupts: ``approval_requested``/``question`` are emitted only when it
pauses, ``approval``/``answer`` once, when it completes. A sub-agent or fleet worker (a
detached child run, depth > 0) has nobody to ask: its calls that need approval are refused.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from ..config.checks import APPROVE_NONE, approve_tokens
from ..config.context import AgentContext
from ..models.messages import open_tool_calls, pending_tool_calls
from ..policies.review import review_context, review_settings
from ..runs.approval import (
    allowed_decisions,
    answer_of,
    ask_until_valid,
    check_decisions,
    needs_approval,
    question_request,
    review_request,
)
from ..runs.events import emit, preview
from ..state import AgentState
from ..tools.agents import agent_depth
from ..tools.ask import ASK_TAG
from ..tools.registry import ToolRegistry

NO_APPROVER = (
    "Not run: {name!r} needs approval (approve={approve!r}), which a sub-agent cannot ask for. "
    "Do without it, or report that the parent agent must make this call."
)
NO_ASKER = "Not run: ask_user is not available to a sub-agent; decide without the user."


def is_question_call(registry: ToolRegistry, call: Mapping[str, Any]) -> bool:
    """A call of the ``ask_user`` tool (by its ToolMeta tag) with a question to ask (any
    other call of it runs in the tools node, which reports its invalid arguments)."""
    name, args = call.get("name") or "", call.get("args")
    if call.get("type") == "invalid_tool_call" or name not in registry or ASK_TAG not in registry.meta(name).tags:
        return False
    question = args.get("question") if isinstance(args, dict) else None
    return isinstance(question, str) and bool(question.strip())


def approval_needed(registry: ToolRegistry, ctx: AgentContext, call: Mapping[str, Any]) -> bool:
    """A valid call of a known tool that the run's ``approve`` setting holds for a human."""
    name = call.get("name") or ""
    if call.get("type") == "invalid_tool_call" or name not in registry or is_question_call(registry, call):
        return False
    return needs_approval(name, ctx.approve, registry.meta(name).side_effects)


def human_calls(
    registry: ToolRegistry, ctx: AgentContext, message: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(calls needing approval, ask_user calls)`` of an AI message (or of a list of its calls:
    those still open), each in call order. ``ask_user`` counts only while the run offers it
    (``ctx.ask_user``). Calls past ``max_tool_calls_per_turn`` never run (the tools node answers
    them), so nobody is asked."""
    pending = message if isinstance(message, list) else pending_tool_calls(message)
    calls = pending[: max(1, int(ctx.max_tool_calls_per_turn))]
    # (an ``approve`` setting with no entries, the default "none", holds no call: no lookups)
    held = bool(approve_tokens(ctx.approve or APPROVE_NONE))
    review = [c for c in calls if approval_needed(registry, ctx, c)] if held else []
    questions = [c for c in calls if ctx.ask_user and is_question_call(registry, c)]
    return review, questions


def needs_human(
    registry: ToolRegistry | Callable[[Mapping[str, Any]], ToolRegistry],
) -> Callable[[Mapping[str, Any], AgentContext], bool]:
    """The predicate ``route_after_agent`` is bound with (routes.reviewed): does the last
    turn of ``state`` need a human under the run's context? ``registry``: the agent's, or
    ``registry(state)`` for the agent that made the turn (a team's active member)."""

    def check(state: Mapping[str, Any], ctx: AgentContext) -> bool:
        messages = state.get("messages") or []
        if not messages:
            return False
        # (with the defaults, approval "none" and ask_user off, no call waits for anybody and
        # nothing needs looking up: nearly every turn)
        approve, ask = review_settings(state, ctx)
        if approve == APPROVE_NONE and not ask:
            return False
        reg = registry if isinstance(registry, ToolRegistry) else registry(state)
        review, questions = human_calls(reg, review_context(state, ctx), open_tool_calls(messages)[1])
        return bool(review or questions)

    return check


def _call_view(call: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}


def make_human_node(registry: ToolRegistry) -> Callable:
    async def human(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        ctx = review_context(state, AgentContext.of(runtime))
        messages = state.get("messages") or []
        last, calls = open_tool_calls(messages)
        if not isinstance(last, AIMessage):
            return {"reviews": {}}
        review, questions = human_calls(registry, ctx, calls)
        reviews: dict[str, dict[str, Any]] = {}
        try:
            depth = agent_depth(get_config())
        except RuntimeError:  # outside a graph run
            depth = 0
        if depth > 0:  # a detached child run: nobody can answer its interrupts
            for c in review:
                reviews[c.get("id") or ""] = {
                    "type": "refuse", "message": NO_APPROVER.format(name=c.get("name"), approve=ctx.approve),
                }  # fmt: skip
            for c in questions:
                reviews[c.get("id") or ""] = {"type": "refuse", "message": NO_ASKER}
            return {"reviews": reviews}
        later: list[tuple[str, dict[str, Any]]] = []  # events of the decisions, emitted once at the end
        edits: dict[int, dict[str, Any]] = {}
        if review:
            allowed = [
                allowed_decisions(c.get("name") or "", ctx.approve, registry.meta(c.get("name") or "").side_effects)
                for c in review
            ]
            request = review_request(review, allowed)
            pause = functools.partial(emit, "approval_requested", calls=[_call_view(c) for c in review])
            check = functools.partial(check_decisions, requests=request["action_requests"], allowed=allowed)
            decisions = ask_until_valid(request, pause, check)
            for call, decision in zip(review, decisions, strict=True):
                call_id = call.get("id") or ""
                event: dict[str, Any] = {"id": call_id, "name": call.get("name"), "decision": decision["type"]}
                if decision["type"] == "reject":
                    reviews[call_id] = {"type": "reject", "message": decision["message"]}
                    event["message"] = decision["message"]
                elif decision["type"] == "respond":  # the person's message is the call's result
                    reviews[call_id] = {"type": "answer", "text": decision["message"]}
                    event["message"] = decision["message"]
                elif decision["type"] == "edit":
                    edits[id(call)] = decision["args"]
                    event["args"] = decision["args"]
                later.append(("approval", event))
        for call in questions:
            call_id = call.get("id") or ""
            question = str((call.get("args") or {}).get("question") or "")
            pause = functools.partial(emit, "question", id=call_id, question=question)
            text = ask_until_valid(question_request(question), pause, answer_of)
            reviews[call_id] = {"type": "answer", "text": text}
            later.append(("answer", {"id": call_id, "preview": preview(text)}))
        update: dict[str, Any] = {"reviews": reviews}
        if edits:
            # (pending_tool_calls hands out the message's own call dicts, so identity finds them)
            edited = [{**c, "args": edits[id(c)]} if id(c) in edits else c for c in last.tool_calls or []]
            update["messages"] = [last.model_copy(update={"tool_calls": edited})]
        for kind, payload in later:
            emit(kind, **payload)
        return update

    return human
