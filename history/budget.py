"""The context budget: the size of the next request, measured as the agent will send
it, and the hooks that keep requests within ``usable_tokens(context_token_limit)``.

* :meth:`ContextBudget.request_tokens` — system prompt + messages + the tools on
  offer, counted with the graph's token counter. The loop's routes call it where the
  decision is made (``nodes/routes.py``), so no node has to keep a prediction up to date.
* :meth:`ContextBudget.after_tools` — tool outputs over the archive threshold become
  a view plus an execution id.
* :meth:`ContextBudget.fit_request` — the agent node's guard: a request still over
  budget is cut deterministically (never splitting a tool call from its results).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.tools import BaseTool

from ..models.prompts import build_system_prompt
from ..models.tokens import (
    CHARS_PER_TOKEN,
    ENVELOPE_TOKENS,
    TokenCounter,
    approx_counter,
    archive_threshold,
    count_messages,
    count_request,
    has_orphan_results,
    page_chars,
    resolve_counter,
    system_request_chars,
    usable_tokens,
)
from ..replies.structured import schema_of
from ..runs.events import emit
from ..state import merge_messages
from .groups import drop_old_units, drop_orphan_results
from .shrink import archivable, archive_tool_outputs, shrink_texts

SIZES_KEPT = 64  # requests whose size a budget remembers (runs of one graph at once, each a few)

# The tools the agent node offers on a turn: (the run's context, state) -> tools
# (nodes/agent.py offered_tools).
OfferedTools = Callable[[Any, dict[str, Any]], Sequence[BaseTool]]


class BudgetSettings(Protocol):
    """The context fields the budget reads (every graph context that runs the agent loop has them)."""

    @property
    def context_token_limit(self) -> int: ...
    @property
    def summary_token_limit(self) -> int: ...
    @property
    def archive_threshold_chars(self) -> int: ...
    @property
    def output_schema(self) -> dict[str, Any] | None: ...


class ContextBudgetError(ValueError):
    """Even the fixed part of a request (system prompt, tool schemas) exceeds the budget."""


class RequestMeter(Protocol):
    """Measures the next model request of a state (what the loop's routes need)."""

    def request_tokens(self, ctx: BudgetSettings, state: Mapping[str, Any]) -> int: ...


def apply_update(state: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """The state after ``update`` (messages through the state's reducer, ``merge_messages``)."""
    after = dict(state)
    for key, value in update.items():
        if key == "messages":
            after[key] = merge_messages(state.get("messages") or [], value)
        elif key == "archived":
            after[key] = {**(state.get("archived") or {}), **(value or {})}
        else:
            after[key] = value
    return after


class ContextBudget:
    """Counts requests as the agent node will send them, and keeps them in budget.

    ``offered`` gives the tools a turn offers (the agent node's own function), so the
    measured request is the one the agent sends; ``token_counter`` is resolved by
    :func:`tokens.resolve_counter`; ``output_schema`` is the graph's default schema
    of the final answer."""

    def __init__(self, offered: OfferedTools, token_counter: Any = None, output_schema: Any = None) -> None:
        self.offered = offered
        self.counter: TokenCounter = resolve_counter(token_counter)
        self.output_model = output_schema if isinstance(output_schema, type) else None
        self.default_schema = schema_of(output_schema)
        self._sizes: dict[tuple, tuple[int, list[Any]]] = {}
        # The last assembly, for the state and context objects it was made of (:meth:`assemble`).
        self._assembled: tuple[Any, Any, str, tuple[BaseTool, ...]] | None = None

    def count(
        self,
        request: Sequence[BaseMessage],
        tools: Sequence[BaseTool],
        ids: tuple[int, ...] | None = None,
    ) -> int:
        """``count_request`` of a request, measured once: the route that decides on the next
        turn and the agent node's guard measure the same request (the same system prompt,
        message and tool objects), so the second asks the counter again for nothing.
        (``ids``: those of the request's messages after the first, when the caller has them.)"""
        head = request[0] if request else None
        if isinstance(head, SystemMessage) and isinstance(head.content, str):
            return self._count(head.content, request[1:], tools, head, ids)
        return count_request(self.counter, request, tools)

    def _count(
        self,
        system: str,
        messages: Sequence[BaseMessage],
        tools: Sequence[BaseTool],
        head: BaseMessage | None = None,
        ids: tuple[int, ...] | None = None,
    ) -> int:
        """Tokens of the request ``system`` prompt (as ``head``, the message, when the caller has
        one) + ``messages`` (``ids``: theirs, when the caller has them) + ``tools``, remembered by
        the identity of its parts."""
        if ids is None:
            ids = tuple(map(id, messages))
        key = (system, ids, tuple(map(id, tools)))
        hit = self._sizes.get(key)
        if hit is not None:
            return hit[0]
        if self.counter is approx_counter and (head is None or type(head) is SystemMessage and not head.name):
            chars = system_request_chars(system, messages, tools, ids)  # (no system message to build)
            tokens = math.ceil(chars / CHARS_PER_TOKEN) + ENVELOPE_TOKENS
        else:
            tokens = count_request(self.counter, [head or SystemMessage(content=system), *messages], tools)
        if len(self._sizes) >= SIZES_KEPT:
            self._sizes.pop(next(iter(self._sizes)), None)
        # The objects are kept with their ids, so no other object can take an id of the key.
        self._sizes[key] = (tokens, [*messages, *tools])
        return tokens

    # -- the request ------------------------------------------------------
    def assemble(
        self, ctx: BudgetSettings, state: Mapping[str, Any], *, take: bool = False
    ) -> tuple[str, list[BaseTool]]:
        """The system prompt and the tools of the next turn. Made once for a state and a context:
        the agent's step after a tool turn measures the request (``route_after_tools``), then its
        turn sends it, both from the same state and context objects (nothing changes either in
        place: a node's input is LangGraph's, a hook's changes come as a new state).
        ``take``: the turn's call, the last for that state: the budget keeps nothing of it (no
        run's state stays alive here after its turn)."""
        last = self._assembled
        if last is not None and last[0] is state and last[1] is ctx:
            if take:
                self._assembled = None
            return last[2], list(last[3])
        system, tools = build_system_prompt(ctx, state), tuple(self.offered(ctx, cast(dict[str, Any], state)))
        if not take:
            self._assembled = (state, ctx, system, tools)  # (one tuple: a concurrent run's replaces it whole)
        return system, list(tools)

    def fixed_tokens(self, ctx: BudgetSettings, state: Mapping[str, Any]) -> int:
        """Tokens of the request without its messages (system prompt, tool schemas, envelope)."""
        system, tools = self.assemble(ctx, state)
        return count_request(self.counter, [SystemMessage(content=system)], tools)

    def request_tokens(self, ctx: BudgetSettings, state: Mapping[str, Any]) -> int:
        """Tokens of the next request: system prompt + messages + tool schemas."""
        system, tools = self.assemble(ctx, state)
        return self._count(system, state.get("messages") or [], tools)

    # -- hooks of the loop's nodes -----------------------------------------
    def on_run_start(self, state: Mapping[str, Any], update: Mapping[str, Any], ctx: BudgetSettings) -> dict[str, Any]:
        """Resolver hook: copy the budget into the state and reset per-run keys."""
        schema = ctx.output_schema if ctx.output_schema is not None else self.default_schema
        return {
            "run_settings": {"context_token_limit": ctx.context_token_limit, "output_schema": schema},
            "bookkeeping": {"retrievals_made": 0, "output_retries": 0},
            "structured_response": None,
        }

    def archives(self, ctx: BudgetSettings, update: Mapping[str, Any]) -> bool:
        """Whether :meth:`after_tools` archives a result of ``update`` (nearly every turn: no)."""
        threshold = archive_threshold(ctx.context_token_limit, ctx.archive_threshold_chars)
        return bool(threshold) and any(archivable(m, threshold) for m in update.get("messages") or ())

    async def after_tools(
        self, ctx: BudgetSettings, state: Mapping[str, Any], update: dict[str, Any], store: Any = None
    ) -> dict[str, Any]:
        """Tools hook: archive large outputs (view + execution id)."""
        if not self.archives(ctx, update):  # (nothing to copy)
            return update
        threshold = archive_threshold(ctx.context_token_limit, ctx.archive_threshold_chars)
        last = (state.get("messages") or [None])[-1]
        out, archived = await archive_tool_outputs(
            update.get("messages") or [], last, threshold, page_chars(ctx.context_token_limit), store
        )
        update = {**update, "messages": out}
        if archived:
            update["archived"] = archived
        return update

    # -- the agent node's guard ---------------------------------------------
    def fit_request(
        self, ctx: BudgetSettings, request: list[BaseMessage], tools: Sequence[BaseTool]
    ) -> list[BaseMessage]:
        """The request, cut deterministically if it is over budget (pairs never split)."""
        usable = usable_tokens(ctx.context_token_limit)
        messages = request[1:]
        ids: tuple[int, ...] | None = tuple(map(id, messages))  # (both questions below look them up by id)
        if has_orphan_results(messages, ids):  # (nearly never: the request goes as it is)
            request = [request[0], *drop_orphan_results(messages)]
            ids = None
        before = self.count(request, tools, ids)
        if before <= usable:
            return request
        fixed = count_request(self.counter, request[:1], tools)
        if fixed > usable:
            raise ContextBudgetError(
                f"The system prompt and {len(tools)} tool schemas alone take about {fixed} tokens, more than "
                f"the {usable} a request may use (context_token_limit={ctx.context_token_limit}). Raise "
                "--context-tokens (context_token_limit) or offer fewer tools (--tools)."
            )
        messages = shrink_texts(request[1:], fixed, usable, self.counter)
        messages = drop_old_units(messages, fixed, usable, self.counter)
        after = fixed + count_messages(self.counter, messages)
        emit("summarization", action="truncate", tokens_before=before, tokens_after=after, messages=len(messages))
        if after > usable:
            raise ContextBudgetError(
                f"The request cannot be cut to the context budget ({after} > {usable} tokens). "
                "Raise --context-tokens (context_token_limit)."
            )
        return [request[0], *messages]
