"""summarize: keep every model request within the context budget.

``route_before_agent`` (nodes/routes.py) sends the loop here when the predicted
next request — system prompt + messages + tool schemas, as the agent will send it
— exceeds the usable budget (``tokens.usable_tokens``). This node then:

1. groups the messages into *units* that are never split: an AI message with tool
   calls together with all of its tool results; every other message alone;
2. keeps the run's task (its last user message) and the most recent units
   verbatim, as many as fit in the compaction target;
3. replaces everything older with one summary message placed right after the task
   (or before it, when only earlier runs are compacted):

   * a deterministic *digest* (no model call) when nothing would be lost: the old
     units are tool calls whose outputs are archived (readable again with
     ``get_tool_response``) or short, and short texts;
   * otherwise a model-written summary, asked for in a request that itself fits the
     budget; if that call fails or returns nothing usable, the digest is used —
     history is never replaced by an error text;

   either way the summary's header lists the archived execution ids it covers;
4. if a kept message is still too large (one huge message), archives its text and
   leaves a view of it, so the request fits and nothing is lost.

The agent node still guards every request (:meth:`ContextBudget.fit_request`): a
request over budget is cut deterministically (never split pairs) instead of sent.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from typing import Any, Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.runtime import Runtime

from smart_agent.archive import ARCHIVE_KEY, ToolArchive, clip_text, make_view
from smart_agent.context import AgentContext
from smart_agent.messages import message_text as text_of
from smart_agent.events import emit
from smart_agent.models import invoke_model, load_chat_model, model_options
from smart_agent.nodes.routes import pending_tool_calls
from smart_agent.structured_output import schema_of
from smart_agent.tokens import (
    CHARS_PER_TOKEN,
    archive_threshold,
    compaction_target,
    count_messages,
    count_request,
    page_chars,
    resolve_counter,
    summary_tokens,
    usable_tokens,
)
from smart_agent.tools.context_tools import GET_TOOL_RESPONSE
from smart_agent.tools.registry import ToolRegistry
from ..state import count_of

MARK = "smart_agent"  # additional_kwargs key of messages the framework writes
SUMMARY_KIND = "summary"
FEEDBACK_KIND = "output_feedback"
DIGEST_ITEM_CHARS = 300  # a text this short goes into a digest verbatim
SUMMARY_TAGS = ["nostream", "smart_agent:summary"]

SUMMARY_SYSTEM_PROMPT = (
    "You compact the working history of an AI agent so it can continue its task with less "
    "context. Write a faithful, dense summary of the history you are given: what was done, "
    "every fact, number, name, path and result the task may still need, decisions taken, "
    "errors met, and what remains open. Mention execution ids (ex_...) next to what they "
    "contain. Do not invent anything; do not address the user; no preamble."
)


class ContextBudgetError(ValueError):
    """Even the fixed part of a request (system prompt, tool schemas) exceeds the budget."""


# --------------------------------------------------------------------------- messages


def mark_of(message: BaseMessage) -> dict:
    value = (getattr(message, "additional_kwargs", None) or {}).get(MARK)
    return value if isinstance(value, dict) else {}


def is_summary(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and mark_of(message).get("kind") == SUMMARY_KIND


def task_index(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the run's task: the last user message the framework did not write."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, HumanMessage) and not mark_of(m):
            return i
    return None


def group_units(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """``[start, end)`` slices that compaction never splits: an AI message with tool
    calls plus its tool results; any other message alone."""
    units: list[tuple[int, int]] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        calls = pending_tool_calls(m)
        if calls:
            ids = {c.get("id") for c in calls}
            j = i + 1
            while j < n and isinstance(messages[j], ToolMessage) and messages[j].tool_call_id in ids:
                j += 1
            units.append((i, j))
            i = j
        else:
            units.append((i, i + 1))
            i += 1
    return units


def pairing_problems(messages: Sequence[BaseMessage]) -> list[str]:
    """Tool results without their AI tool call and tool calls without results (empty: fine)."""
    problems: list[str] = []
    open_calls: dict[str, str] = {}
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls:
                problems.append(f"tool result {m.tool_call_id!r} without its tool call")
            open_calls.pop(m.tool_call_id, None)
            continue
        if open_calls:
            problems.extend(f"tool call {cid!r} without a result" for cid in open_calls)
            open_calls = {}
        for c in pending_tool_calls(m):
            open_calls[c.get("id") or ""] = c.get("name") or ""
    problems.extend(f"tool call {cid!r} without a result" for cid in open_calls)
    return problems


def drop_orphan_results(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Remove tool results whose AI tool call is not right before them (never sendable)."""
    out: list[BaseMessage] = []
    open_ids: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id in open_ids:
                out.append(m)
            continue
        open_ids = {c.get("id") for c in pending_tool_calls(m)}
        out.append(m)
    return out


def _args_text(args: Any, n: int = 80) -> str:
    if not isinstance(args, dict):
        return clip_text(str(args), n, "cut")
    parts = []
    for k, v in args.items():
        if isinstance(v, str):
            parts.append(f"{k}={json.dumps(clip_text(v, n, 'cut'), ensure_ascii=False)}")
        else:
            parts.append(f"{k}={clip_text(json.dumps(v, ensure_ascii=False, default=str), n, 'cut')}")
    return ", ".join(parts)


def _covered_ids(messages: Sequence[BaseMessage]) -> list[str]:
    ids: list[str] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            eid = (m.additional_kwargs or {}).get(ARCHIVE_KEY, {}).get("execution_id")
            if eid:
                ids.append(eid)
        elif is_summary(m):
            ids.extend(mark_of(m).get("execution_ids") or [])
        elif isinstance(m, HumanMessage):
            eid = (m.additional_kwargs or {}).get(ARCHIVE_KEY, {}).get("execution_id")
            if eid:
                ids.append(eid)
    return list(dict.fromkeys(ids))


def summary_body(message: HumanMessage) -> str:
    """A summary message's text without its header line."""
    text = text_of(message)
    return text.split("\n", 1)[1] if text.startswith("[Context summary") and "\n" in text else text


# --------------------------------------------------------------------------- digest
def digest(messages: Sequence[BaseMessage]) -> tuple[list[str], bool]:
    """One line per step of the compacted history, and whether nothing was lost."""
    lines: list[str] = []
    lossless = True

    def short(text: str) -> str:
        nonlocal lossless
        text = " ".join(text.split())
        if len(text) > DIGEST_ITEM_CHARS:
            lossless = False
            return clip_text(text, DIGEST_ITEM_CHARS, "cut")
        return text

    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    for m in messages:
        if is_summary(m):
            body = summary_body(m).strip()
            if body:
                lines.extend(body.splitlines())
        elif isinstance(m, HumanMessage):
            archived = (m.additional_kwargs or {}).get(ARCHIVE_KEY)
            lines.append(f"- user (archived as {archived['execution_id']})" if archived else f"- user: {short(text_of(m))}")
        elif isinstance(m, AIMessage):
            said = text_of(m).strip()
            if said:
                lines.append(f"- assistant: {short(said)}")
            for call in pending_tool_calls(m):
                name = call.get("name") or "?"
                head = f"- {name}({_args_text(call.get('args'))})"
                res = results.get(call.get("id") or "")
                if res is None:
                    lines.append(f"{head} → (no result)")
                    continue
                archived = (res.additional_kwargs or {}).get(ARCHIVE_KEY)
                status = " error:" if res.status == "error" else ""
                if archived:
                    lines.append(f"{head} →{status} archived as {archived['execution_id']} ({archived.get('chars', '?')} chars)")
                elif name == GET_TOOL_RESPONSE and res.status != "error":
                    args = call.get("args") or {}
                    start = int(args.get("offset") or 0)
                    end = start + len(text_of(res).split("\n\n[Page: ", 1)[0])
                    lines.append(_PAGE_LINE.format(start=start, end=end, eid=args.get("execution_id")))
                else:
                    lines.append(f"{head} →{status} {short(text_of(res))}")
        elif isinstance(m, ToolMessage):
            continue  # shown with its call
        else:
            lines.append(f"- {m.type}: {short(text_of(m))}")
    return _merge_page_lines(lines), lossless


_PAGE_LINE = "- get_tool_response: read characters {start}-{end} of {eid} (can be read again)"
_PAGE_RE = re.compile(r"^- get_tool_response: read characters (\d+)-(\d+) of (\S+) \(can be read again\)$")


def _merge_page_lines(lines: list[str]) -> list[str]:
    """Consecutive pages of one archived output become one line."""
    out: list[str] = []
    prev = None
    for line in lines:
        m = _PAGE_RE.match(line)
        if m and prev and out and prev.group(3) == m.group(3) and prev.group(2) == m.group(1):
            line = _PAGE_LINE.format(start=prev.group(1), end=m.group(2), eid=m.group(3))
            out[-1] = line
            prev = _PAGE_RE.match(line)
            continue
        out.append(line)
        prev = m
    return out


def fit_lines(lines: list[str], max_chars: int) -> str:
    """Keep the newest lines that fit; say how many older ones were dropped."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > max_chars:
            break
        kept.append(line)
        used += len(line) + 1
    dropped = len(lines) - len(kept)
    body = "\n".join(reversed(kept))
    if dropped:
        body = f"- ({dropped} older steps omitted; their archived outputs are listed above)\n" + body
    return body


# --------------------------------------------------------------------------- transcript
def _render(m: BaseMessage) -> str:
    if is_summary(m):
        return "EARLIER SUMMARY: " + summary_body(m)
    if isinstance(m, HumanMessage):
        return "USER: " + text_of(m)
    if isinstance(m, AIMessage):
        calls = "; ".join(f"{c.get('name')}({_args_text(c.get('args'), 200)})" for c in pending_tool_calls(m))
        said = text_of(m).strip()
        return "ASSISTANT: " + (said + (" " if said and calls else "")) + (f"[calls {calls}]" if calls else "")
    if isinstance(m, ToolMessage):
        archived = (m.additional_kwargs or {}).get(ARCHIVE_KEY)
        tag = f" [archived as {archived['execution_id']}]" if archived else ""
        return f"TOOL RESULT {m.name or ''}{tag}: " + text_of(m)
    return f"{m.type.upper()}: " + text_of(m)


def transcript(messages: Sequence[BaseMessage], max_chars: int) -> str:
    """The messages as text, each clipped to an equal share when all would not fit."""
    items = [_render(m) for m in messages]
    total = sum(len(t) + 2 for t in items)
    floor = 40
    if items and sum(min(len(t), floor) + 2 for t in items) > max_chars:
        # Too many items even at the floor: keep the newest that fit.
        kept, used = [], 60
        for t in reversed(items):
            if used + min(len(t), floor) + 2 > max_chars:
                break
            kept.append(t)
            used += min(len(t), floor) + 2
        omitted = len(items) - len(kept)
        items = [f"({omitted} older items omitted)", *[clip_text(t, floor, "cut") for t in reversed(kept)]]
        return "\n\n".join(items)
    if total > max_chars:
        lo, hi = floor, max(len(t) for t in items)
        while lo < hi:  # the largest per-item cap that fits
            mid = (lo + hi + 1) // 2
            if sum(min(len(t), mid) + 2 for t in items) <= max_chars:
                lo = mid
            else:
                hi = mid - 1
        items = [clip_text(t, lo, "cut") for t in items]
    return "\n\n".join(items)


# --------------------------------------------------------------------------- budget
def apply_update(state: dict, update: dict) -> dict:
    """The state after ``update`` (messages through ``add_messages``)."""
    after = {**state, **{k: v for k, v in update.items() if k not in ("messages", "archived")}}
    if "messages" in update:
        after["messages"] = add_messages(list(state.get("messages") or []), list(update["messages"]))
    if "archived" in update:
        after["archived"] = {**(state.get("archived") or {}), **(update["archived"] or {})}
    return after


class ContextBudget:
    """Counts requests as the agent node will send them, and keeps them in budget."""

    def __init__(self, registry: ToolRegistry, token_counter: Any = None, output_schema: Any = None) -> None:
        self.registry = registry
        self.counter = resolve_counter(token_counter)
        self.output_model = output_schema if isinstance(output_schema, type) else None
        self.default_schema = schema_of(output_schema)

    # -- the request ------------------------------------------------------
    def assemble(self, ctx: AgentContext, state: dict) -> tuple[str, list]:
        from smart_agent.nodes.agent import offered_tools
        from smart_agent.prompts import build_system_prompt

        return build_system_prompt(ctx, state), offered_tools(ctx, self.registry, state)

    def fixed_tokens(self, ctx: AgentContext, state: dict) -> int:
        system, tools = self.assemble(ctx, state)
        return count_request(self.counter, [SystemMessage(content=system)], tools)

    def request_tokens(self, ctx: AgentContext, state: dict) -> int:
        system, tools = self.assemble(ctx, state)
        return count_request(self.counter, [SystemMessage(content=system), *(state.get("messages") or [])], tools)

    def measure(self, ctx: AgentContext, state: dict, update: dict) -> int:
        """Predicted tokens of the next request once ``update`` is applied."""
        return self.request_tokens(ctx, apply_update(state, update))

    # -- hooks of the loop's nodes -----------------------------------------
    def on_run_start(self, state: dict, update: dict, ctx: AgentContext) -> dict[str, Any]:
        """Resolver hook: copy the budget into the state, reset per-run keys, predict."""
        extra: dict[str, Any] = {
            "context_token_limit": ctx.context_token_limit,
            "retrievals_made": 0,
            "output_retries": 0,
            "structured_response": None,
            "output_schema": ctx.output_schema if ctx.output_schema is not None else self.default_schema,
        }
        extra["request_tokens"] = self.measure(ctx, state, {**update, **extra})
        return extra

    async def after_tools(self, ctx: AgentContext, state: dict, update: dict, store: Any = None) -> dict[str, Any]:
        """Tools hook: archive large outputs (view + execution id), then predict."""
        threshold = archive_threshold(ctx.context_token_limit, ctx.archive_threshold_chars)
        if threshold:
            archive = ToolArchive(store=store)
            page = page_chars(ctx.context_token_limit)
            calls = {}
            last = (state.get("messages") or [None])[-1]
            for c in pending_tool_calls(last):
                calls[c.get("id")] = c
            out, archived = [], {}
            for m in update.get("messages") or []:
                text = text_of(m) if isinstance(m, ToolMessage) else ""
                if isinstance(m, ToolMessage) and m.name != GET_TOOL_RESPONSE and len(text) > threshold:
                    call = calls.get(m.tool_call_id) or {}
                    meta = {"tool": m.name, "args": _args_text(call.get("args")), "chars": len(text)}
                    eid = await archive.put(text, meta)
                    view = make_view(text, eid, m.name or "tool", page)
                    m = m.model_copy(update={"content": view, "additional_kwargs": {**m.additional_kwargs, ARCHIVE_KEY: {"execution_id": eid, "chars": len(text)}}})
                    archived[eid] = meta
                    emit("summarization", action="archive", execution_id=eid, tool=m.name, chars=len(text), view_chars=len(view))
                out.append(m)
            update = {**update, "messages": out}
            if archived:
                update["archived"] = archived
        update["request_tokens"] = self.measure(ctx, state, update)
        return update

    # -- the agent node's guard ---------------------------------------------
    def fit_request(self, ctx: AgentContext, request: list[BaseMessage], tools: list) -> list[BaseMessage]:
        """The request, cut deterministically if it is over budget (pairs never split)."""
        usable = usable_tokens(ctx.context_token_limit)
        request = [request[0], *drop_orphan_results(list(request[1:]))]
        before = count_request(self.counter, request, tools)
        if before <= usable:
            return request
        fixed = count_request(self.counter, request[:1], tools)
        if fixed > usable:
            raise ContextBudgetError(
                f"The system prompt and {len(tools)} tool schemas alone take about {fixed} tokens, more than "
                f"the {usable} a request may use (context_token_limit={ctx.context_token_limit}). Raise "
                "--context-tokens (context_token_limit) or offer fewer tools (--tools)."
            )
        messages = shrink_texts(list(request[1:]), fixed, usable, self.counter)
        messages = drop_old_units(messages, fixed, usable, self.counter)
        after = fixed + count_messages(self.counter, messages)
        emit("summarization", action="truncate", tokens_before=before, tokens_after=after, messages=len(messages))
        if after > usable:
            raise ContextBudgetError(
                f"The request cannot be cut to the context budget ({after} > {usable} tokens). "
                "Raise --context-tokens (context_token_limit)."
            )
        return [request[0], *messages]


# --------------------------------------------------------------------------- shrinking
def _largest_text(messages: list[BaseMessage], skip: set[int] = frozenset()) -> int | None:
    best, best_len = None, 0
    for i, m in enumerate(messages):
        if i in skip or not isinstance(m.content, str):
            continue
        if len(m.content) > best_len:
            best, best_len = i, len(m.content)
    return best


def shrink_texts(messages: list[BaseMessage], fixed: int, target: int, counter: Callable, note: str = "cut to fit the context budget") -> list[BaseMessage]:
    """Clip the largest message texts (head + tail) until the messages fit ``target``."""
    messages = list(messages)
    for _ in range(4 * len(messages) + 4):
        excess = fixed + count_messages(counter, messages) - target
        if excess <= 0:
            break
        i = _largest_text(messages)
        if i is None:
            break
        text = messages[i].content
        new_len = max(200, len(text) - excess * CHARS_PER_TOKEN - 120)
        if new_len >= len(text):
            break
        messages[i] = messages[i].model_copy(update={"content": clip_text(text, new_len, note)})
    return messages


def drop_old_units(messages: list[BaseMessage], fixed: int, target: int, counter: Callable) -> list[BaseMessage]:
    """Drop the oldest units (never the task or the last unit) until the messages fit."""
    messages = list(messages)
    dropped = 0
    while fixed + count_messages(counter, messages) > target:
        t = task_index(messages)
        units = [u for u in group_units(messages)[:-1] if not (t is not None and u[0] <= t < u[1])]
        units = [u for u in units if not (isinstance(messages[u[0]], HumanMessage) and mark_of(messages[u[0]]).get("kind") == "omitted")]
        if not units:
            break
        a, b = units[0]
        dropped += b - a
        messages = messages[:a] + messages[b:]
    if dropped:
        note = HumanMessage(content=f"[{dropped} earlier messages omitted to fit the context budget.]", additional_kwargs={MARK: {"kind": "omitted"}})
        messages = [note, *messages]
    return messages


# --------------------------------------------------------------------------- the node
def plan_compaction(messages: Sequence[BaseMessage], counter: Callable, keep_tokens: int) -> tuple[int, int | None]:
    """``(kept_from, task)``: messages from ``kept_from`` on (and the task) stay verbatim."""
    units = group_units(messages)
    t = task_index(messages)
    kept_from = len(messages)
    used = 0
    last = units[-1] if units else None
    for a, b in reversed(units):
        if t is not None and a <= t < b:
            continue
        size = count_messages(counter, messages[a:b])
        most_recent_turn = (a, b) == last and (t is None or a > t)  # the results the model is waiting for
        if most_recent_turn or used + size <= keep_tokens:
            used += size
            kept_from = a
        else:
            break
    return kept_from, t


def rebuild(messages: Sequence[BaseMessage], kept_from: int, t: int | None, summary: BaseMessage) -> list[BaseMessage]:
    if t is None or t >= kept_from:
        return [summary, *messages[kept_from:]]
    return [messages[t], summary, *messages[kept_from:]]


def summary_message(body: str, compacted: Sequence[BaseMessage], archived: dict[str, dict], number: int) -> HumanMessage:
    ids = _covered_ids(compacted)
    previous = sum(int(mark_of(m).get("compacted") or 0) for m in compacted if is_summary(m))
    total = previous + sum(1 for m in compacted if not is_summary(m))
    header = f"[Context summary #{number}: {total} earlier messages were compacted."
    if ids:
        named = []
        for eid in ids:
            meta = archived.get(eid) or {}
            what = f"{meta.get('tool')}({meta.get('args', '')})" if meta.get("tool") else ""
            named.append(f"{eid} {what}".strip())
        header += " Archived outputs they cover (read any in full with get_tool_response): " + "; ".join(named) + "."
    header += "]"
    return HumanMessage(
        content=f"{header}\n{body}".rstrip(),
        id=f"summary-{uuid.uuid4().hex[:12]}",
        additional_kwargs={MARK: {"kind": SUMMARY_KIND, "execution_ids": ids, "compacted": total}},
    )


async def model_summary(
    llm: BaseChatModel, task: str, compacted: Sequence[BaseMessage], ctx: AgentContext, counter: Callable, max_tokens: int,
    *, spec: str | None = None,
) -> str:
    """A model-written summary; the request is bounded like every other request and sent
    through :func:`invoke_model` like every other model call (a timeout, an unreachable
    service or a garbage body is a one-line error; lone surrogates are replaced)."""
    usable = usable_tokens(ctx.context_token_limit)
    words = max(30, int(max_tokens * 0.7))
    system = SystemMessage(content=SUMMARY_SYSTEM_PROMPT)

    def prompt(history: str) -> HumanMessage:
        return HumanMessage(
            content=(
                f"The agent's task: {clip_text(task, 1500, 'cut')}\n\n"
                f"History to summarize (oldest first):\n\n{history}\n\n"
                f"Write the summary now, in at most {words} words."
            )
        )

    room = int((usable - count_request(counter, [system, prompt("")])) * CHARS_PER_TOKEN * 0.9)
    request = [system, prompt(transcript(compacted, room))]
    while count_request(counter, request) > usable and room > 200:
        room = int(room * 0.75)
        request = [system, prompt(transcript(compacted, room))]
    if count_request(counter, request) > usable:
        raise ValueError("the history cannot be put in a summary request within the budget")
    response = await invoke_model(llm.with_config(tags=SUMMARY_TAGS), request, spec=spec)
    text = text_of(response).strip() if isinstance(response, BaseMessage) else str(response).strip()
    if getattr(response, "tool_calls", None) or not text:
        raise ValueError("the summary model returned no text")
    return clip_text(text, max_tokens * CHARS_PER_TOKEN, "cut to the summary budget")


def make_summarize_node(budget: ContextBudget, model: BaseChatModel | None = None) -> Callable:
    async def summarize(state: dict, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        ctx = AgentContext.of(runtime)
        counter = budget.counter
        messages: list[AnyMessage] = list(state.get("messages") or [])
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
        archived_meta = dict(state.get("archived") or {})
        update: dict[str, Any] = {}
        info: dict[str, Any] = {"strategy": "none", "compacted_messages": 0, "execution_ids": []}
        new_messages = messages
        if compacted:
            lines, lossless = digest(compacted)
            strategy, error = "digest", None
            header_chars = 200 + 60 * len(_covered_ids(compacted))
            body = fit_lines(lines, max(400, s_tokens * CHARS_PER_TOKEN - header_chars))
            if not lossless:
                try:
                    llm = model or await asyncio.to_thread(load_chat_model, ctx.model, **model_options(ctx))
                    body = await model_summary(
                        llm, text_of(messages[t]) if t is not None else "", compacted, ctx, counter, s_tokens,
                        spec=None if model else ctx.model,
                    )
                    strategy = "model"
                except Exception as exc:  # never lose history to a failed (or timed-out) summary call
                    strategy, error = "fallback_digest", f"{type(exc).__name__}: {exc}"[:300]
            number = count_of(state, "compactions") + 1
            summary = summary_message(body, compacted, archived_meta, number)
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
        new_messages, newly = await archive_oversized(new_messages, fixed, usable, counter, ctx, runtime.store)
        if newly:
            update["archived"] = newly
            info["archived_oversized"] = sorted(newly)
        if new_messages is not messages:
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new_messages]
        after_state = apply_update(state, update)
        update["request_tokens"] = budget.request_tokens(ctx, after_state)
        emit("summarization", action="summarize", tokens_before=before, tokens_after=update["request_tokens"], limit=limit, **info)
        return update

    return summarize


async def archive_oversized(
    messages: list[BaseMessage], fixed: int, target: int, counter: Callable, ctx: AgentContext, store: Any
) -> tuple[list[BaseMessage], dict[str, dict]]:
    """Replace the largest texts by archived views until the messages fit (reversible)."""
    if fixed + count_messages(counter, messages) <= target:
        return messages, {}
    archive = ToolArchive(store=store)
    page = page_chars(ctx.context_token_limit)
    out = list(messages)
    newly: dict[str, dict] = {}
    done: set[int] = set()
    for _ in range(len(out)):
        excess = fixed + count_messages(counter, out) - target
        if excess <= 0:
            break
        i = _largest_text(out, done)
        if i is None:
            break
        m = out[i]
        text = m.content
        room = max(300, len(text) - excess * CHARS_PER_TOKEN - 400)
        if room >= len(text):
            break
        if isinstance(m, ToolMessage) and m.name == GET_TOOL_RESPONSE:
            # A page of an archived output: cut it; the same page can be read again.
            out[i] = m.model_copy(update={"content": clip_text(text, room, "cut to fit the context budget; read this page again with a smaller max_chars")})
        else:
            kind = m.name if isinstance(m, ToolMessage) and m.name else m.type
            eid = await archive.put(text, {"tool": kind, "chars": len(text)})
            head = max(100, (room - 450) * 2 // 3)
            view = make_view(text, eid, kind, page, head=head, tail=max(50, (room - 450) - head))
            kwargs = {**m.additional_kwargs, ARCHIVE_KEY: {"execution_id": eid, "chars": len(text)}}
            out[i] = m.model_copy(update={"content": view, "additional_kwargs": kwargs})
            newly[eid] = {"tool": kind, "args": "", "chars": len(text)}
        done.add(i)
    return out, newly
