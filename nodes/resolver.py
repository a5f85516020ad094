"""resolver: validate and normalize a run's input, reset per-run counters."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.runtime import Runtime

from ..config.context import AgentContext, validate_context
from ..models.usage import run_start_usages
from ..policies.hooks import Hooks
from ..policies.pii import PiiBlocked, redact_input
from ..state import AgentState, joined_update
from .routes import pending_tool_calls

if TYPE_CHECKING:
    from ..tools.registry import ToolRegistry


class InputError(ValueError):
    """The caller's input cannot start a run; the message says what to pass."""


INTERRUPTED_RESULT = "No result: the run that requested this tool call was interrupted before it finished."


def _new_turn_start(messages: list[AnyMessage]) -> int:
    """Index of the first message of the trailing block of human messages."""
    i = len(messages)
    while i > 0 and isinstance(messages[i - 1], HumanMessage):
        i -= 1
    return i


def unanswered_tool_calls(messages: list[AnyMessage], upto: int) -> tuple[AIMessage | None, list[dict]]:
    """The AI message before ``upto`` whose tool calls have no results, and those calls."""
    answered: set[str] = set()
    for msg in reversed(messages[:upto]):
        if isinstance(msg, ToolMessage):
            answered.add(msg.tool_call_id)
            continue
        if isinstance(msg, AIMessage):
            missing = [c for c in pending_tool_calls(msg) if c.get("id") not in answered]
            return (msg, missing) if missing else (None, [])
        return None, []
    return None, []


# Output keys (state.AgentOutputState) that a run may leave unwritten, and their empty values,
# written when a thread has none yet. LangGraph reads every output key after each step, and a key
# never written costs it two exceptions (EmptyChannelError) there at every step of every run.
# (``todos`` stays unset until used: the CLI's --json shows it then. A team's ``active_agent`` and
# ``handoffs`` are written by its own run start hook, nodes/team.py.)
UNSET_OUTPUTS: tuple[tuple[str, Callable[[], Any]], ...] = (
    ("compactions", int), ("memory_context", str), ("recalled_memories", list), ("thread_usage", dict),
)  # fmt: skip


def resolve_input(state: Mapping[str, Any], ctx: AgentContext) -> dict[str, Any]:
    errors = validate_context(ctx)
    if errors:
        raise InputError("Invalid configuration: " + "; ".join(errors))
    messages: list[AnyMessage] = list(state.get("messages") or [])
    task = state.get("task")
    update: dict[str, Any] = {}
    new_messages: list[BaseMessage] = []  # (RemoveMessage markers too)
    if task is not None and not isinstance(task, str):
        raise InputError(f"'task' must be a string, got {type(task).__name__}")
    if task and task.strip():
        new_messages.append(HumanMessage(content=task.strip()))
    if task is not None:
        update["task"] = ""  # consumed: a later run on this thread must not re-add it
    if not messages and not new_messages:
        raise InputError("Nothing to do: pass a non-empty 'task' string or 'messages' ending with a user message.")
    if not new_messages:
        last = messages[-1]
        if not isinstance(last, HumanMessage):
            raise InputError(
                "The conversation must end with a user message to start a run "
                f"(the last message is a {type(last).__name__}). Pass a new 'task' or user message."
            )
        if not str(last.content).strip() and not isinstance(last.content, list):
            raise InputError("The user message is empty.")

    # A previous run that died between the model's tool calls and their results
    # leaves calls without results; providers reject such a history. Answer them.
    start = _new_turn_start(messages)
    ai, missing = unanswered_tool_calls(messages, start)
    if missing:
        trailing = messages[start:]
        update_msgs: list[BaseMessage] = [RemoveMessage(id=m.id) for m in trailing if m.id]
        update_msgs += [
            ToolMessage(content=INTERRUPTED_RESULT, tool_call_id=c.get("id") or "", name=c.get("name"), status="error")
            for c in missing
        ]
        update_msgs += [HumanMessage(content=m.content, additional_kwargs=m.additional_kwargs) for m in trailing]
        new_messages = update_msgs + new_messages

    if new_messages and getattr(ctx, "pii", None):  # personal data: handled before anything stores it
        try:
            new_messages = redact_input(new_messages, ctx)
        except PiiBlocked as exc:
            raise InputError(f"Refused: {exc}") from None
    if new_messages:
        update["messages"] = new_messages
    update.update(
        answer="",
        tool_calls_made=0,
        turns=0,
        # (with what the run start hooks add)
        run_settings={"max_tool_calls": ctx.max_tool_calls},
        reviews={},
        approve=ctx.approve,
        ask_user=bool(ctx.ask_user),
        bookkeeping={
            "stopped": "", "run_tool_calls": {}, "finalize": False, "notice": "",
            "loop_guard": {"limit": ctx.loop_limit, "calls": [], "runs": [], "cycle": {}},
        },  # fmt: skip
        # per run (usage.py); a nested run starts from its caller's; the last run's joins thread_usage
        **run_start_usages(state),
    )
    for key, empty in UNSET_OUTPUTS:
        if key not in state and key not in update:
            update[key] = empty()
    return update


def add_run_start(update: dict[str, Any], added: Mapping[str, Any]) -> None:
    """Add a run start hook's keys to the resolver's ``update``; its ``run_settings`` and
    ``bookkeeping`` entries join the run's (one state key each, see ``state.AgentState``)."""
    update.update(joined_update(update, added))


RunStartHook = Callable[[Mapping[str, Any], dict, AgentContext], dict | Awaitable[dict]]


def make_resolver(
    *hooks: RunStartHook, preload: Sequence[ToolRegistry] = (), middleware: Hooks | None = None
) -> Callable:
    """The resolver node; each hook ``(state, update, ctx) -> dict`` (or an awaitable of one: a hook
    that reads files does it off the event loop) adds per-run keys (e.g. the context budget's
    limit, as ``{"run_settings": {...}}``: :func:`add_run_start`). ``preload``: registries
    whose pending steps (plugin discovery: folder reads, imports) run in a worker thread before
    anything on the event loop - the routes, the agent node - asks them for their tools.
    ``middleware``: the user's, whose ``before_agent`` hooks run on the state the run starts with."""
    middleware = middleware or Hooks()

    async def resolver(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
        waiting = [registry for registry in preload if registry.pending]
        if waiting:  # the first run of a process only
            await asyncio.to_thread(lambda: [registry.load() for registry in waiting])
        ctx = AgentContext.of(runtime)
        update = resolve_input(state, ctx)
        for hook in hooks:
            added = hook(state, update, ctx)
            add_run_start(update, (await added if inspect.isawaitable(added) else added) or {})
        if not middleware.before_agent:
            return update
        started = await middleware.run_state_hooks(middleware.before_agent, middleware.apply(state, update), runtime)
        writes = [update, *started.updates]
        if started.jump == "end" and middleware.after_agent:  # the run ends before its first turn
            ended = await middleware.run_state_hooks(middleware.after_agent, started.state, runtime)
            writes += ended.updates
        return middleware.node_output(writes, started.jump)

    return resolver


resolver = make_resolver()
