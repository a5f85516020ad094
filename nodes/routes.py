"""Routing decisions of the agent loop: small pure functions over the state.

Each returns the name of the next node; the graph file only wires them. The
limits they compare against are copied into the state by the resolver. The context
budget's decision measures the next request itself, from the state and the run's
context (``meter``, the graph's ``ContextBudget``): no node has to keep a prediction
of it up to date. :func:`measured` binds a route to the meter for the graph.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any, Final, Literal, Protocol, TypeVar, cast

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import (  # where langgraph.runtime finds it
    CONF,
    CONFIG_KEY_RUNTIME,
)
from langgraph.types import Command

from ..config.context import AgentContext
from ..history.budget import BudgetSettings, RequestMeter, apply_update
from ..history.markers import is_feedback
from ..models.messages import pending_tool_calls
from ..models.tokens import unicode_json, usable_tokens
from ..state import AgentState, count_of
from ..tools.agents import (
    HANDOFF_PREFIX,  # transfer_to_<agent> hands the thread over (as_handoff)
)

END: Final = "__end__"


def route_after_agent(
    state: Mapping[str, Any], needs_human: bool = False
) -> Literal["human", "tools", "structuredOutput", "__end__"]:
    """Run tools when the model asked for them — through ``human`` first when one of the
    calls waits for a person (``needs_human``: approval or an ask_user question, judged by
    the graph's predicate, see :func:`reviewed`); otherwise the loop is over (after the
    answer is validated, when the run has an output schema)."""
    messages = state.get("messages") or []
    if messages and not state.get("finalize") and pending_tool_calls(messages[-1]):
        return "human" if needs_human else "tools"
    if state.get("output_schema") and messages and isinstance(messages[-1], AIMessage):
        return "structuredOutput"
    return END


def tool_limit_reached(state: Mapping[str, Any]) -> bool:
    limit = state.get("max_tool_calls")
    return limit is not None and count_of(state, "tool_calls_made") >= int(limit)


# call_signature's encoders, built once: the same text as ``json.dumps`` with these options.
_args_text = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr).encode

#: A tool's canonical effect (``ToolMeta.canonical``): its arguments mapped to those that decide
#: what the call does (presentation-only arguments dropped, a URL without its fragment...).
Canonical = Callable[[Mapping[str, Any]], Any]


def call_signature(call: Mapping[str, Any], canonical: Canonical | None = None) -> str:
    """A tool call as text: its name and its arguments as canonical JSON (sorted keys), so
    two calls are "the same" exactly when their signatures are equal. ``canonical``: the
    tool's ``ToolMeta.canonical``, applied to the arguments first (a call whose arguments it
    cannot map, or that it fails on, keeps them as they are)."""
    name, args = call.get("name") or "", call.get("args")
    text = None
    if canonical is not None and isinstance(args, Mapping):
        try:
            text = _args_text(canonical(args))
        except Exception:  # a plugin's mapping that fails: the arguments as they are
            text = None
    if text is None:
        text = _args_text(args)
    if type(name) is str:  # (the pair as json.dumps writes a list of two strings)
        return "[" + encode_basestring(name) + ", " + encode_basestring(text) + "]"
    return unicode_json([name, text])


# -- loop detection (``loop_limit``) ----------------------------------------------------------
# The same call made over and over, or the same few calls in turn (A,B,A,B...), is a cycle of
# period p (1 to LOOP_PERIODS calls). The state keeps the last LOOP_PERIODS signatures
# (``loop_calls``, oldest first) and, for each period p, ``loop_runs[p-1]``: the length of the
# run of calls ending with the last one in which every call equals the one p calls before it
# (counting the p calls that start it). A cycle of p calls made n times in a row is a run of
# n * p; each new call updates the runs with one comparison per period, whatever the limit.

#: The longest cycle of calls loop detection finds (runs_after's common case spells out its 4 runs).
LOOP_PERIODS: Final = 4

_STAGES: Final = ("none", "notice", "finalize")
_PERIODS: Final = tuple(range(1, LOOP_PERIODS + 1))


def loop_memory(state: Mapping[str, Any]) -> tuple[list[str], list[int]]:
    """The state's ``(loop_calls, loop_runs)``; empty for what a run would not have written (a
    state from outside a run)."""
    window, runs = state.get("loop_calls"), state.get("loop_runs")
    if type(window) is not list:
        return [], []
    try:
        if type(runs) is list and type(sum(runs)) is int:  # (ints only: anything else raises or is no int)
            return window, runs
    except TypeError:
        pass
    return window, []


def runs_after(window: Sequence[str], runs: Sequence[int], signature: str) -> list[int]:
    """``loop_runs`` after a call with ``signature``, from the previous ``window`` (the last
    signatures, oldest first) and ``runs``."""
    n = len(window)
    if n >= LOOP_PERIODS and len(runs) == LOOP_PERIODS:  # (every turn once the run has made 4 calls)
        a, b, c, d = runs
        w = window[-4:]
        return [
            a + 1 if w[3] == signature else 1,
            b + 1 if w[2] == signature else 2,
            c + 1 if w[1] == signature else 3,
            d + 1 if w[0] == signature else 4,
        ]
    if len(runs) < LOOP_PERIODS:  # (none yet: each run is as long as its period allows)
        runs = [*runs, *_PERIODS[len(runs) :]]
    return [
        runs[p - 1] + 1 if p <= n and window[-p] == signature else p if p <= n else n + 1 for p in _PERIODS
    ]


def window_after(window: Sequence[str], signature: str) -> list[str]:
    """``loop_calls`` after a call with ``signature``: the last :data:`LOOP_PERIODS` signatures."""
    return [*window[1 - LOOP_PERIODS :], signature]


def cycle_length(limit: int, period: int) -> int:
    """How many calls in a row make a cycle of ``period`` calls repeated ``limit`` times: a
    cycle of several calls counts from 2 repetitions (one pass of distinct calls is no loop)."""
    return (limit if period == 1 else max(limit, 2)) * period


def loop_stage(runs: Sequence[int], limit: int) -> tuple[Literal["none", "notice", "finalize"], int]:
    """``(stage, period)`` of loop detection (``loop_limit``; 0: off): a cycle of calls (one
    call, or a few in turn) made ``limit`` times in a row earns the next turn a notice; one
    more call of the cycle and the run is finalized like at the tool limit. ``period``: the
    shortest cycle at that stage (0 with "none")."""
    if limit <= 0 or not runs or (runs[0] < limit and max(runs) < 2 * max(limit, 2)):
        return "none", 0  # (the common case at once: no run is long enough for any period)
    notice = 0
    for p, run in enumerate(runs[:LOOP_PERIODS], start=1):
        need = cycle_length(limit, p)
        if run > need:
            return "finalize", p
        if run == need and not notice:
            notice = p
    return ("notice", notice) if notice else ("none", 0)


def past_limit(runs: Sequence[int], limit: int) -> bool:
    """Whether the last call goes beyond the one that finalizes its cycle: such a call of a
    turn is not run (so each call of a cycle runs at most ``limit`` + 1 times in a row)."""
    return limit > 0 and any(run > cycle_length(limit, p) + 1 for p, run in enumerate(runs[:LOOP_PERIODS], start=1))


def signature_tool(signature: str) -> str:
    """The tool name in a :func:`call_signature` ("" when none)."""
    try:
        name = json.loads(signature)[0]
    except (ValueError, LookupError, TypeError):
        return ""
    return name if isinstance(name, str) else ""


def cycle_found(
    stage: str, period: int, window: Sequence[str], runs: Sequence[int]
) -> dict[str, Any]:
    """The ``loop_cycle`` of a stage reached: the action, the period, how many times the cycle
    was (begun to be) made, and its tools in the order the cycle started with."""
    run = runs[period - 1]
    last = window[-period:]
    tools = [signature_tool(last[(c - run) % period]) for c in range(period)]
    return {"action": stage, "period": period, "repeats": -(-run // period), "tools": tools}


def stage_rank(stage: str) -> int:
    return _STAGES.index(stage) if stage in _STAGES else 0


def found_cycle(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """The state's ``loop_cycle`` ({} when none)."""
    cycle = state.get("loop_cycle")
    return cycle if isinstance(cycle, Mapping) else {}


def loop_limit_reached(state: Mapping[str, Any]) -> bool:
    """A cycle of tool calls was repeated beyond ``loop_limit`` (copied by the resolver)."""
    return count_of(state, "loop_limit") > 0 and found_cycle(state).get("action") == "finalize"


def last_ai_message(messages: Sequence[Any]) -> AIMessage | None:
    for message in reversed(messages or []):
        if isinstance(message, AIMessage):
            return message
    return None


def handoff_requested(state: Mapping[str, Any]) -> bool:
    """The last model turn asked to transfer the thread (only in a team: ``active_agent`` is set)."""
    if not state.get("active_agent"):
        return False
    ai = last_ai_message(state.get("messages") or [])
    return any((c.get("name") or "").startswith(HANDOFF_PREFIX) for c in pending_tool_calls(ai))


def route_after_tools(
    state: Mapping[str, Any], ctx: BudgetSettings | None = None, meter: RequestMeter | None = None
) -> Literal["handoff", "toolLimitFinalize", "summarize", "agent"]:
    """Transfers first; once the tool-call budget is spent or the model repeats a cycle of
    calls beyond ``loop_limit``, finalize; otherwise give the model the results."""
    if handoff_requested(state):
        return "handoff"
    if tool_limit_reached(state) or loop_limit_reached(state):
        return "toolLimitFinalize"
    return route_before_agent(state, ctx, meter)


def route_after_handoff(
    state: Mapping[str, Any], ctx: BudgetSettings | None = None, meter: RequestMeter | None = None
) -> Literal["toolLimitFinalize", "summarize", "agent"]:
    """The new agent takes the next turn (unless the tool budget is spent)."""
    return "toolLimitFinalize" if tool_limit_reached(state) else route_before_agent(state, ctx, meter)


def request_over_budget(
    state: Mapping[str, Any], ctx: BudgetSettings | None = None, meter: RequestMeter | None = None
) -> bool:
    """Whether the next request exceeds ``usable_tokens(context_token_limit)`` (copied
    into the state by the resolver; none: no budget, e.g. another graph).

    With a ``meter`` the request (system prompt + messages + tool schemas, as the agent
    will send them) is measured now, from ``state`` and ``ctx``. Without one — a route
    called on a hand-built state — ``state["request_tokens"]`` is the caller's prediction.
    """
    limit = state.get("context_token_limit")
    if not limit:
        return False
    if meter is not None:
        tokens = meter.request_tokens(ctx if ctx is not None else AgentContext(), state)
    else:
        tokens = count_of(state, "request_tokens")
    return tokens > usable_tokens(int(limit))


def route_before_agent(
    state: Mapping[str, Any], ctx: BudgetSettings | None = None, meter: RequestMeter | None = None
) -> Literal["summarize", "agent"]:
    """Compact the history first when the next request would be over the budget."""
    return "summarize" if request_over_budget(state, ctx, meter) else "agent"


def remembers(ctx: Any) -> bool:
    """Whether the run's long-term memory is on (``memory``; outside a run, with no context:
    the environment's default). A value the resolver would refuse counts as on: the memory
    nodes report it."""
    from ..memory.service import memory_enabled

    try:
        return memory_enabled(ctx)
    except ValueError:
        return True


def route_after_resolver(
    state: Mapping[str, Any], ctx: BudgetSettings | None = None, meter: RequestMeter | None = None
) -> Literal["memory_recall", "summarize", "agent"]:
    """Recall memories before the first turn while the run's memory is on, or to clear the
    block an earlier run of the thread recalled; with memory off the run goes straight to its
    first turn (one checkpointed step less)."""
    if remembers(ctx) or state.get("memory_context") or state.get("recalled_memories"):
        return "memory_recall"
    return route_before_agent(state, ctx, meter)


def route_at_end(step: str, ctx: Any) -> str:
    """A run that ends (``step`` is END) writes its memory first while memory is on; with memory
    off it ends there (one checkpointed step less). Other steps are kept."""
    return "memory_write" if step == END and remembers(ctx) else step


def route_after_structured_output(
    state: Mapping[str, Any], ctx: BudgetSettings | None = None, meter: RequestMeter | None = None
) -> Literal["summarize", "agent", "__end__"]:
    """A validated answer ends the run; an invalid one (answered by a feedback message
    carrying the validation errors) goes back to the model."""
    messages = state.get("messages") or []
    if messages and is_feedback(messages[-1]):
        return route_before_agent(state, ctx, meter)
    return END


Route = TypeVar("Route", bound=str)


def _run_context(config: RunnableConfig) -> AgentContext | None:
    runtime = (config.get(CONF) or {}).get(CONFIG_KEY_RUNTIME)
    return None if runtime is None else AgentContext.of(runtime)


def reviewed(
    route: Callable[[Mapping[str, Any], bool], Route], needs_human: Callable[[Mapping[str, Any], AgentContext], bool]
) -> Callable[[dict[str, Any], RunnableConfig], Route]:
    """``route`` as a graph edge told whether the last turn needs a human: ``needs_human(state,
    ctx)`` (nodes/human.py) under the run's context (a state written from outside a run is
    judged under the default context: no approval, no ask_user)."""

    def edge(state: Mapping[str, Any], config: RunnableConfig) -> Route:
        return route(state, needs_human(state, _run_context(config) or AgentContext()))

    edge.__name__ = route.__name__
    edge.__doc__ = route.__doc__
    return edge


def measured(
    route: Callable[[Mapping[str, Any], BudgetSettings | None, RequestMeter | None], Route], meter: RequestMeter
) -> Callable[[dict[str, Any], RunnableConfig], Route]:
    """``route`` as a graph edge that measures the next request with ``meter`` from the
    state and the run's context. A state written from outside a run (``update_state``:
    no runtime, no context) is judged by the caller's ``request_tokens``, if any."""

    def edge(state: Mapping[str, Any], config: RunnableConfig) -> Route:
        ctx = _run_context(config)
        return route(state, None, None) if ctx is None else route(state, ctx, meter)

    edge.__name__ = route.__name__
    edge.__doc__ = route.__doc__
    return edge


Edge = Callable[[dict[str, Any], RunnableConfig], Route]


def remembered(edge: Edge) -> Callable[[dict[str, Any], RunnableConfig], str]:
    """``edge``, whose END goes through ``memory_write`` when the run's memory is on
    (:func:`route_at_end`; a state written from outside a run: the environment's default)."""

    def end(state: dict[str, Any], config: RunnableConfig) -> str:
        step = edge(state, config)
        return route_at_end(step, _run_context(config)) if step == END else step  # (the context: at the end only)

    end.__name__ = edge.__name__
    end.__doc__ = edge.__doc__
    return end


class RoutedNode(Protocol):
    """A node that takes the run's config and returns where to go (:func:`self_routed`)."""

    def __call__(self, state: AgentState, config: RunnableConfig) -> Awaitable[Command]: ...


def self_routed(
    node: Callable[..., Awaitable[dict[str, Any] | None]], edge: Callable[[dict[str, Any], RunnableConfig], str]
) -> RoutedNode:
    """``node`` that routes itself: ``edge`` (a route as a graph edge) decides on the state
    after the node's own update, and the node returns ``Command(update, goto)``. The graph
    wires it with ``add_node(..., destinations=...)``, which draws the same edges.

    Why: LangGraph evaluates a conditional edge on a fresh copy of every channel of the graph
    (``local_read``), and the agent loop's state has some thirty keys; on the loop's two
    edges per turn that copy cost more than the turn's own routing. The decision is the same
    function on the same state (the update applied through the state's reducers)."""

    takes_runtime = len(inspect.signature(node).parameters) > 1  # node(state) or node(state, runtime)

    async def routed(state: AgentState, config: RunnableConfig) -> Command:
        if takes_runtime:  # (the runtime LangGraph would pass the node, as _run_context finds it)
            update = await node(state, (config.get(CONF) or {})[CONFIG_KEY_RUNTIME])
        else:
            update = await node(state)
        update = update or {}
        return Command(update=update, goto=edge(cast(dict[str, Any], apply_update(state, update)), config))

    routed.__name__ = getattr(node, "__name__", "node")
    routed.__doc__ = node.__doc__
    return routed
