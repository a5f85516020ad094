"""Routing decisions of the agent loop: small pure functions over the state.

Each returns the name of the next node; the graph file only wires them. The
limits they compare against are copied into the state by the resolver. The context
budget's decision measures the next request itself, from the state and the run's
context (``meter``, the graph's ``ContextBudget``): no node has to keep a prediction
of it up to date. :func:`measured` binds a route to the meter for the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.runtime import get_runtime

from ..config.context import AgentContext
from ..history.budget import BudgetSettings, RequestMeter
from ..history.markers import is_feedback
from ..models.messages import open_tool_calls, pending_tool_calls
from ..models.tokens import usable_tokens
from ..policies.loop_guard import loop_limit_reached
from ..policies.tool_budget import tool_limit_reached
from ..state import count_of, kept, run_setting
from ..tools.agents import (
    HANDOFF_PREFIX,  # transfer_to_<agent> hands the thread over (as_handoff)
)

END: Final = "__end__"


def route_after_agent(
    state: Mapping[str, Any], needs_human: bool = False
) -> Literal["human", "tools", "structuredOutput", "agent", "__end__"]:
    """Run tools when the model asked for them — through ``human`` first when one of the
    calls waits for a person (``needs_human``: approval or an ask_user question, judged by
    the graph's predicate, see :func:`reviewed`); otherwise the loop is over (after the
    answer is validated, when the run has an output schema). A middleware hook's jump
    (``jump_to``) goes first: "end" ends the run, "model" asks the model again."""
    jump = state.get("jump_to")
    if jump == "end" or kept(state, "stopped"):  # (stopped: at a tool-call limit, exit=end)
        return END
    if jump == "model":
        return "agent"
    messages = state.get("messages") or []
    reply, calls = open_tool_calls(messages)
    if calls and not kept(state, "finalize"):
        return "human" if needs_human else "tools"
    if reply is not None and reply is not messages[-1] and pending_tool_calls(reply):
        return "agent"  # a middleware answered every call of the reply: the model reads the results
    if run_setting(state, "output_schema") and messages and isinstance(messages[-1], AIMessage):
        return "structuredOutput"
    return END


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
    """Whether the next request exceeds ``usable_tokens(context_token_limit)`` (the run's,
    ``run_settings``; none: no budget, e.g. another graph).

    With a ``meter`` the request (system prompt + messages + tool schemas, as the agent
    will send them) is measured now, from ``state`` and ``ctx``. Without one — a route
    called on a hand-built state — its ``request_tokens`` is the caller's prediction (no
    state key: a state written with ``update_state``, which has no run context, counts as
    within the budget here, and the agent's own guard fits the request it sends).
    """
    limit = run_setting(state, "context_token_limit")
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
) -> Literal["memory_recall", "summarize", "agent", "tools", "__end__"]:
    """Recall memories before the first turn while the run's memory is on, or to clear the
    block an earlier run of the thread recalled; with memory off the run goes straight to its
    first turn (one checkpointed step less). A middleware ``before_agent`` hook's jump goes
    first: "end" ends the run before any model call, "tools" runs the last turn's calls."""
    jump = state.get("jump_to")
    if jump == "end":
        return END
    if jump == "tools":
        return "tools"
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


#: The keys of the state the agent's edge decides on (``route_after_agent`` and what the edge adds
#: to it: ``forwarded_first``, ``after_model_first``, ``reviewed`` with ``needs_human``, a team's
#: member): the edge reads only these (:func:`reading`).
AGENT_EDGE_READS: Final = (
    "messages", "bookkeeping", "jump_to", "run_settings", "approve", "ask_user", "active_agent",
)  # fmt: skip


class Edge(Runnable[Mapping[str, Any], str]):
    """A route as a conditional edge: ``decide(state)`` called where the graph runs - on the event
    loop in an async run (LangGraph would send a plain function to a worker thread), in sync calls
    such as ``update_state`` too - with nothing else per call (no callbacks, no signature
    inspection: a route is decided after every node).

    ``reads``: a state schema of the keys ``decide`` reads (a TypedDict of the graph's state), the
    edge's annotated input: LangGraph gives the edge only those keys, read from the state after its
    node's update, instead of every key of the state (each unset key costs it an exception each
    step). None: the whole state. Which keys it reads changes no decision, only the work of each
    step."""

    def __init__(self, decide: Callable[[Mapping[str, Any]], str], reads: type | None = None) -> None:
        self.func = decide
        self.name = decide.__name__
        self.reads = reads
        # (what LangGraph infers an edge's input from: its callable's annotated first parameter)
        self.__annotations__ = {"state": reads} if reads is not None else {}

    def __call__(self, state: Mapping[str, Any]) -> str:
        return self.func(state)

    def invoke(self, input: Mapping[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> str:
        # (the run's config is the one the route reads its context from: get_runtime)
        token = var_child_runnable_config.set(config)
        try:
            return self.func(input)
        finally:
            var_child_runnable_config.reset(token)

    async def ainvoke(self, input: Mapping[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> str:
        return self.invoke(input, config)


def edge(decide: Callable[[Mapping[str, Any]], Route], like: Callable[..., Any] | None = None) -> Edge:
    """``decide`` as a conditional edge (:class:`Edge`), named and documented as ``like`` (the
    route it binds) when given."""
    if like is not None:
        decide.__name__, decide.__doc__ = like.__name__, like.__doc__
    return Edge(decide)


def reading(route: Edge, reads: type) -> Edge:
    """``route`` given only the keys of ``reads`` (:class:`Edge`), a TypedDict of the keys it reads."""
    return Edge(route.func, reads)


def run_context() -> AgentContext | None:
    """The context of the run a route is decided in (LangGraph's public ``get_runtime``); None for a
    state written from outside a run (``update_state``: no runtime, no context)."""
    try:
        runtime = get_runtime()
    except RuntimeError:  # (outside any run)
        return None
    return None if runtime is None else AgentContext.of(runtime)


def reviewed(
    route: Callable[[Mapping[str, Any], bool], Route], needs_human: Callable[[Mapping[str, Any], AgentContext], bool]
) -> Edge:
    """``route`` as a graph edge told whether the last turn needs a human: ``needs_human(state,
    ctx)`` (nodes/human.py) under the run's context (a state written from outside a run is
    judged under the default context: no approval, no ask_user)."""

    def decide(state: Mapping[str, Any]) -> Route:
        return route(state, needs_human(state, run_context() or AgentContext()))

    return edge(decide, like=route)


def measured(
    route: Callable[[Mapping[str, Any], BudgetSettings | None, RequestMeter | None], Route], meter: RequestMeter
) -> Edge:
    """``route`` as a graph edge that measures the next request with ``meter`` from the
    state and the run's context. A state written from outside a run (``update_state``:
    no runtime, no context) is judged by the caller's ``request_tokens``, if any."""

    def decide(state: Mapping[str, Any]) -> Route:
        ctx = run_context()
        return route(state, None, None) if ctx is None else route(state, ctx, meter)

    return edge(decide, like=route)


def remembered(route: Edge) -> Edge:
    """``route`` (an :func:`edge`), whose END goes through ``memory_write`` when the run's memory
    is on (:func:`route_at_end`; a state written from outside a run: the environment's default)."""
    decide = route.func

    def end(state: Mapping[str, Any]) -> str:
        step = decide(state)
        return route_at_end(step, run_context()) if step == END else step  # (the context: at the end only)

    return edge(end, like=decide)


def after_model_first(route: Edge) -> Edge:
    """``route`` (the agent's edge) for a graph with an ``after_model`` node: the turn goes there
    first, unless a ``before_model`` hook jumped (``jump_to``: no model call to review)."""
    decide = route.func

    def first(state: Mapping[str, Any]) -> str:
        return decide(state) if state.get("jump_to") else "after_model"

    return edge(first, like=decide)
