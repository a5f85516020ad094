"""summarize: keep every model request within the context budget.

``route_before_agent`` (nodes/routes.py) sends the loop here when the next request —
system prompt + messages + tool schemas, measured as the agent will send it — exceeds
the usable budget (``tokens.usable_tokens``). This node then:

1. groups the messages into units that are never split (``history.groups``);
2. keeps the run's task (its last user message) and the most recent units
   verbatim, as many as fit in the compaction target;
3. replaces everything older with one summary message placed right after the task
   (or before it, when only earlier runs are compacted): a deterministic digest
   (``history.digest``, no model call) when nothing would be lost, otherwise a
   model-written summary (``history.transcript``) — the digest again if that call
   fails, or if the run's budget (usage.py) would make the summary its last model call
   (strategy ``budget_digest``: the remaining call is the agent's answer): history is never
   replaced by an error text. The summary's header lists
   the archived execution ids it covers;
4. if a kept message is still too large (one huge message), archives its text and
   leaves a view of it (``history.shrink``), so the request fits and nothing is lost.

The agent node still guards every request (``ContextBudget.fit_request``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from ..cassette import ReplayMiss
from ..config.context import AgentContext
from ..history.budget import ContextBudget, apply_update
from ..history.digest import covered_ids, digest, fit_lines, summary_message
from ..history.groups import plan_compaction, rebuild
from ..history.markers import mark_of, task_index
from ..history.shrink import archive_oversized
from ..history.transcript import model_summary
from ..models.chat import aload_chat_model, model_fallbacks, model_options
from ..models.messages import message_text as text_of
from ..models.tokens import (
    CHARS_PER_TOKEN,
    compaction_target,
    count_messages,
    page_chars,
    summary_tokens,
    usable_tokens,
)
from ..models.usage import Meter, current_meter
from ..runs.events import emit
from ..state import AgentState, count_of
from .metering import metered_node


class SummarizeNode(Protocol):
    """The summarize node as ``StateGraph.add_node`` sees it (``runtime`` passable by name)."""

    async def __call__(self, state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]: ...


class BudgetLeft(Exception):
    """The summary call would be the last turn the run's budget allows."""


def _within_budget(meter: Meter | None, request_tokens: int) -> None:
    """Refuse a summary call after which the run's budget (usage.py) leaves no ordinary turn of
    the same size: the budget's last call is the agent's answer, never a summary."""
    if meter is not None and meter.stop(request_tokens):
        raise BudgetLeft


async def write_summary(
    compacted: Sequence[BaseMessage], task: str, ctx: AgentContext, budget: ContextBudget, s_tokens: int,
    model: BaseChatModel | None,
) -> tuple[str, str, str | None]:
    """``(body, strategy, error)``: the digest when it loses nothing, else the model's summary
    (the digest again when that call fails, ``budget_digest`` when the run's budget keeps its
    remaining call(s) for the agent's turns)."""
    lines, lossless = digest(compacted)
    header_chars = 200 + 60 * len(covered_ids(compacted))
    body = fit_lines(lines, max(400, s_tokens * CHARS_PER_TOKEN - header_chars))
    if lossless:
        return body, "digest", None
    meter = current_meter()
    try:
        llm = model if model is not None else await aload_chat_model(ctx.model, **model_options(ctx))
        spec = None if model else ctx.model
        usable = usable_tokens(ctx.context_token_limit)
        fallbacks = model_fallbacks(ctx)
        summary = await model_summary(
            llm, task, compacted, usable, budget.counter, s_tokens, spec=spec, fallbacks=fallbacks,
            before_call=functools.partial(_within_budget, meter),
        )
        return summary, "model", None
    except BudgetLeft:  # the run's budget keeps its last call for the answer: the digest instead
        return body, "budget_digest", None
    except ReplayMiss:  # --replay: the cassette does not hold this summary request; a digest would hide it
        raise
    except Exception as exc:  # never lose history to a failed (or timed-out) summary call
        return body, "fallback_digest", f"{type(exc).__name__}: {exc}"[:300]


def make_summarize_node(budget: ContextBudget, model: BaseChatModel | None = None) -> SummarizeNode:
    async def summarize(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        ctx = AgentContext.of(runtime)
        counter = budget.counter
        messages: list[BaseMessage] = list(state.get("messages") or [])
        limit = ctx.context_token_limit
        usable = usable_tokens(limit)
        before = budget.request_tokens(ctx, state)
        # As if get_tool_response were offered: compaction may archive the first output.
        fixed = budget.fixed_tokens(ctx, {**state, "archived": state.get("archived") or {"": {}}})
        s_tokens = summary_tokens(limit, ctx.summary_token_limit)
        t = task_index(messages)
        task_tokens = count_messages(counter, [messages[t]]) if t is not None else 0
        keep = max(0, min(compaction_target(limit), usable) - fixed - task_tokens - s_tokens)
        kept_from, t = plan_compaction(messages, counter, keep)
        compacted = [m for i, m in enumerate(messages[:kept_from]) if i != t]
        update: dict[str, Any] = {}
        info: dict[str, Any] = {"strategy": "none", "compacted_messages": 0, "execution_ids": []}
        new_messages = messages
        if compacted:
            task = text_of(messages[t]) if t is not None else ""
            body, strategy, error = await write_summary(compacted, task, ctx, budget, s_tokens, model)
            number = count_of(state, "compactions") + 1
            summary = summary_message(body, compacted, dict(state.get("archived") or {}), number)
            new_messages = rebuild(messages, kept_from, t, summary)
            update["compactions"] = number
            info = {
                "strategy": strategy,
                "compacted_messages": len(compacted),
                "execution_ids": mark_of(summary)["execution_ids"],
                "summary_tokens": count_messages(counter, [summary]),
            }
            if error:
                info["error"] = error
        # One message may still be too large for the budget: archive it and keep a view.
        new_messages, newly = await archive_oversized(
            new_messages, fixed, usable, counter, page_chars(limit), runtime.store
        )
        if newly:
            update["archived"] = newly
            info["archived_oversized"] = sorted(newly)
        if new_messages is not messages:
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new_messages]
        after = budget.request_tokens(ctx, apply_update(state, update))
        emit("summarization", action="summarize", tokens_before=before, tokens_after=after, limit=limit, **info)
        return update

    return metered_node(summarize)  # the summary call counts in the run's usage
