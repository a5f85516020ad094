"""What a run used, and its budgets: model calls, tokens and money.

* The usage record ``{model_calls, input_tokens, output_tokens, cost_usd, cache_read_tokens,
  cache_write_tokens}`` of a run (state key ``usage`` of every graph, the ``--json`` output);
  ``cost_usd`` is ``None`` once a call was made with a model that has no price (unknown, not
  free). ``input_tokens`` counts every input token; ``cache_read_tokens`` / ``cache_write_tokens``
  are those of them the provider read from / wrote to its prompt cache
  (``usage_metadata.input_token_details.cache_read`` / ``cache_creation``; docs/cost.md).
* The price of a call from the price table (prices.py: built-in prices plus
  ``SMART_AGENT_PRICES``), cached input tokens at the ``cached_input`` price.
* :func:`budget_problem`: the start-of-run check (``max_cost_usd`` needs a price).
* :func:`budget_stop`: the pure decision "the next turn must answer without tools".
* :class:`Meter`: the live count of one run. :func:`models.invoke_model`, the one place
  every model call goes through, adds each call to the meter of the current context
  (a ``ContextVar``). A node that calls a model enters :func:`metered`, seeded from its
  state's ``usage``, and returns ``meter.total()`` as the new ``usage``. A graph run inside
  a node (a fleet worker, the dual graph's planner, a sub-agent) inherits the meter, so the
  budget is the whole run's; the fleet's parallel workers share one through
  :func:`shared_meter`.
* The run's tool budget (``max_tool_calls``) lives on the meter too, so nested runs share it
  the same way: a meter holds the tool executions counted on it (``tool_calls``, its children's
  included) and may hold a limit (``tool_limit``); a call is reserved with
  :meth:`Meter.take_tools` before it runs, against every limit of the meter's chain, so
  parallel workers never overshoot. A run started in a node reads what is left with
  :meth:`Meter.tools_left` and adds what it spent to its caller's meter as it goes.

A call whose provider reports no usage still counts as a call; its tokens are estimated
like the context budget's (serialized request / 4 characters per token in, reply text /
4 out), so ``max_tokens`` and ``max_cost_usd`` keep working with such providers.

A provider's usage is untrusted (:func:`checked_usage`, on every reply): a count that is not
a whole number from 0 to :data:`MAX_REPORTED_TOKENS` (negative, fractional, ``10**30``, a
string...) makes the reply's usage invalid. It is then treated like unreported usage: the
estimate is counted (a negative count no longer keeps a budget from tripping), the reply
carries the estimate as its ``usage_metadata`` and not the provider's raw ``token_usage`` (an
integer past 64 bits cannot be checkpointed), and an ``error`` event says so.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from ..state import run_setting
from .messages import MAX_REPORTED_TOKENS, valid_count
from .prices import HOW_TO_PRICE, Price, PriceTableError, call_cost, price_of

#: The keys of a usage record; all counts (ints >= 0) but ``cost_usd`` (a float, or None).
USAGE_KEYS = ("model_calls", "input_tokens", "output_tokens", "cost_usd", "cache_read_tokens", "cache_write_tokens")
COUNT_KEYS = tuple(k for k in USAGE_KEYS if k != "cost_usd")

#: Output tokens allowed for one turn when predicting whether the next turn fits a
#: ``max_tokens`` / ``max_cost_usd`` budget (a typical reply with a tool call or a short answer).
OUTPUT_ALLOWANCE = 256


#: Added to the system prompt of a turn the budget makes the last one.
BUDGET_NOTICE = (
    "The run's budget (model calls, tokens or cost) is nearly spent: no tools are available now. "
    "Answer the user with what you have."
)
BUDGET_SPENT_ANSWER = "I reached the run's budget (model calls, tokens or cost) before I could finish."

# --------------------------------------------------------------------------- the record
def empty_usage() -> dict[str, Any]:
    return {
        "model_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }


def _number(value: Any, kind: type) -> Any:
    try:
        number = kind(value or 0)
    except (TypeError, ValueError):
        return kind(0)
    return number if math.isfinite(number) and number > 0 else kind(0)


def as_usage(value: Any) -> dict[str, Any]:
    """A usage record from anything a state may hold (missing or bad numbers: 0). ``cost_usd``
    ``None`` (present, null) means unknown: a call was made with a model the price table lacks."""
    if type(value) is dict and len(value) == len(USAGE_KEYS) and _is_record(value):
        return dict(value)  # (already one: a meter's, a node's; every turn reads a few)
    value = value if isinstance(value, Mapping) else {}
    unknown = "cost_usd" in value and value["cost_usd"] is None
    return {
        k: (None if unknown else _number(value.get(k), float)) if k == "cost_usd" else _number(value.get(k), int)
        for k in USAGE_KEYS
    }


def _is_record(value: dict[str, Any]) -> bool:
    """Whether ``value`` is what :func:`as_usage` would return for it (counts: ints >= 0;
    cost: a finite float >= 0, or None)."""
    for key in COUNT_KEYS:
        count = value.get(key)
        if type(count) is not int or count < 0:
            return False
    cost = value.get("cost_usd", 0)
    return cost is None or (type(cost) is float and 0.0 <= cost < math.inf)


def add_usage(total: Mapping[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    """The sum of two records; the cost is unknown (None) when either's is."""
    a, b = as_usage(total), as_usage(more)
    known = a["cost_usd"] is not None and b["cost_usd"] is not None
    return {
        k: (round(a[k] + b[k], 10) if known else None) if k == "cost_usd" else a[k] + b[k] for k in USAGE_KEYS
    }


def cost_of(usage: Mapping[str, Any]) -> float:
    """The record's cost for a budget decision (an unknown cost counts as 0: a run with
    ``max_cost_usd`` has a price for every model it may call, checked at its start)."""
    return float(as_usage(usage)["cost_usd"] or 0.0)


@dataclass(frozen=True)
class Limits:
    """A run's budgets (0: no limit)."""

    model_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def any(self) -> bool:
        return bool(self.model_calls or self.tokens or self.cost_usd)

    def as_dict(self) -> dict[str, Any]:
        return {"model_calls": self.model_calls, "tokens": self.tokens, "cost_usd": self.cost_usd}


def _field(ctx: Any, name: str, default: Any) -> Any:
    """Field ``name`` of a context: an attribute, or a mapping's entry (a dict context)."""
    value = getattr(ctx, name, None)  # (first: a context object, every node's meter; no ABC check)
    if value is None and isinstance(ctx, Mapping):
        value = ctx.get(name)
    return default if value is None else value


NO_LIMITS = Limits()  # (what a context without budgets gets: every turn's check sees it at once)


def limits_of(ctx: Any) -> Limits:
    """The budgets of a context (any class, a dict, or None)."""
    calls, tokens = _field(ctx, "max_model_calls", 0), _field(ctx, "max_tokens", 0)
    cost = _field(ctx, "max_cost_usd", 0)
    if not (calls or tokens or cost):
        return NO_LIMITS
    return Limits(int(calls or 0), int(tokens or 0), float(cost or 0.0))


def budget_problem(ctx: Any) -> str | None:
    """One line when the run cannot keep its budget: ``max_cost_usd`` is set and its model
    (or a fallback model) has no price; also a malformed SMART_AGENT_PRICES."""
    if not limits_of(ctx).cost_usd:
        return None
    specs = [_field(ctx, "model", None), *(_field(ctx, "fallback_models", []) or [])]
    try:
        for spec in specs:
            if isinstance(spec, str) and price_of(spec) is None:
                return f"max_cost_usd (--max-cost): no price for model {spec!r}; " + HOW_TO_PRICE.format(spec=spec)
    except PriceTableError as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------- decisions
def budget_spent(usage: Mapping[str, Any], limits: Limits) -> str | None:
    """Which budget leaves no model call at all ("model_calls" / "tokens" / "cost"), or None."""
    u = as_usage(usage)
    if limits.model_calls and u["model_calls"] >= limits.model_calls:
        return "model_calls"
    if limits.tokens and u["input_tokens"] + u["output_tokens"] >= limits.tokens:
        return "tokens"
    if limits.cost_usd and cost_of(u) >= limits.cost_usd:
        return "cost"
    return None


def budget_stop(
    usage: Mapping[str, Any], limits: Limits, next_request_tokens: int, price: Price | tuple[float, float] | None = None
) -> str | None:
    """Whether the next turn must answer without tools, and why ("model_calls", "tokens",
    "cost"), or None.

    * model calls: the next call is the last one allowed (``made + 1 >= max``);
    * tokens / cost: a turn is its request (``next_request_tokens``, as the context budget
      measures it) plus :data:`OUTPUT_ALLOWANCE` output tokens; after the next turn there
      must be room for one more turn at least as large (requests only grow), else this
      one is the last. ``price``: the model's (input, output) USD per 1M tokens; the turn is
      priced without a cache discount (what its cached share will be is not known before).
    """
    u = as_usage(usage)
    if limits.model_calls and u["model_calls"] + 1 >= limits.model_calls:
        return "model_calls"
    turn_in, turn_out = max(0, int(next_request_tokens)), OUTPUT_ALLOWANCE
    if limits.tokens and u["input_tokens"] + u["output_tokens"] + 2 * (turn_in + turn_out) > limits.tokens:
        return "tokens"
    turn_cost = call_cost(price, turn_in, turn_out)
    if limits.cost_usd and price is not None and cost_of(u) + 2 * turn_cost > limits.cost_usd:
        return "cost"
    return None


# --------------------------------------------------------------------------- the live count
class Meter:
    """The usage of a run as it happens. ``parent``: the meter a child adds to as well (a
    fleet worker's own count within the shared one); decisions read the root's total.
    ``reserved_calls``: calls kept back for the caller (the fleet's aggregation, the dual
    graph's final decision) while nested work runs."""

    def __init__(
        self, usage: Any = None, limits: Limits | None = None, spec: str | None = None, parent: Meter | None = None
    ) -> None:
        # A clean record is kept as it is (no copy): a meter never changes its record in place.
        clean = type(usage) is dict and len(usage) == len(USAGE_KEYS) and _is_record(usage)
        self.usage: dict[str, Any] = usage if clean else as_usage(usage)
        self.limits: Limits = limits or (parent.limits if parent else NO_LIMITS)
        self.spec: str | None = spec or (parent.spec if parent else None)
        self.parent = parent
        # The top meter, whose total decisions read: a child's (a root meter does not refer to
        # itself, which would leave every run's meter to the garbage collector).
        self._top: Meter | None = None if parent is None else parent.root
        self.reserved_calls = 0
        # Tool executions counted here (a child meter's as well) and this meter's own limit, if any
        # (a run's max_tool_calls; None: only the limits of the meters above it apply).
        self.tool_calls = 0
        self.tool_limit: int | None = None
        # The run's prompt_cache_key (models/prompt_cache.py sets it on a root meter; "": none).
        self.cache_key: str | None = None

    @property
    def root(self) -> Meter:
        """The meter decisions read (this one, or the top of its parents)."""
        return self._top or self

    def total(self) -> dict[str, Any]:
        """The run's usage (the root's)."""
        return dict(self.root.usage)

    def effective_limits(self) -> Limits:
        root = self.root
        calls = root.limits.model_calls
        if not calls or not root.reserved_calls:  # (the usual case: the root's own, no new object)
            return root.limits
        return Limits(max(1, calls - root.reserved_calls), root.limits.tokens, root.limits.cost_usd)

    def _add(
        self, calls: int = 0, input_tokens: int = 0, output_tokens: int = 0, cost: float | None = 0.0,
        cache_read: int = 0, cache_write: int = 0,
    ) -> None:
        """Add to this meter and its parents: :func:`add_usage` of their records (each one a
        clean record: built by :func:`as_usage`, then only here) and these clean counts."""
        meter: Meter | None = self
        while meter is not None:
            u = meter.usage
            known = cost is not None and u["cost_usd"] is not None
            meter.usage = {  # a new record: a caller may hold the old one (fleet.py)
                "model_calls": u["model_calls"] + calls,
                "input_tokens": u["input_tokens"] + input_tokens,
                "output_tokens": u["output_tokens"] + output_tokens,
                "cost_usd": round(u["cost_usd"] + cost, 10) if known else None,
                "cache_read_tokens": u["cache_read_tokens"] + cache_read,
                "cache_write_tokens": u["cache_write_tokens"] + cache_write,
            }
            meter = meter.parent

    def begin_call(self) -> None:
        """A request is about to be sent (counted now, so parallel callers see it)."""
        self._add(calls=1)

    def end_call(
        self, input_tokens: int, output_tokens: int, spec: str | None = None, cache_read: int = 0,
        cache_write: int = 0,
    ) -> None:
        """A reply: its tokens (``cache_read`` / ``cache_write``: those of its input tokens the
        provider read from / wrote to its prompt cache) and their cost."""
        # (a provider's counts are ints >= 0 nearly always: _number only for anything else)
        tokens_in = input_tokens if type(input_tokens) is int and input_tokens >= 0 else _number(input_tokens, int)
        tokens_out = output_tokens if type(output_tokens) is int and output_tokens >= 0 else _number(output_tokens, int)
        # Cached tokens are some of the input tokens: never more (a provider's counts are untrusted).
        read = min(_number(cache_read, int), tokens_in) if cache_read else 0
        write = min(_number(cache_write, int), tokens_in - read) if cache_write else 0
        price = _safe_price(spec or self.spec)
        # None: unknown (no price for the model)
        cost = _number(call_cost(price, tokens_in, tokens_out, read, write), float) if price is not None else None
        self._add(0, tokens_in, tokens_out, cost, read, write)
        limits = self.root.limits
        if limits is not NO_LIMITS and limits.any():
            from ..runs.events import emit

            emit("budget", consumed=self.total(), limit=limits.as_dict(), action="ok")

    def stop(self, next_request_tokens: int | Callable[[], int]) -> str | None:
        """:func:`budget_stop` for the run's next turn. ``next_request_tokens`` may be a
        function: it measures the request only when a token or cost budget needs its size."""
        if self.root.limits is NO_LIMITS:  # (no budgets: every turn)
            return None
        limits = self.effective_limits()
        if not limits.any():
            return None
        size = next_request_tokens
        if callable(size):
            size = size() if (limits.tokens or limits.cost_usd) else 0
        return budget_stop(self.total(), limits, size, _safe_price(self.spec))

    def spent(self) -> str | None:
        """:func:`budget_spent`: no model call is left for this caller."""
        if self.root.limits is NO_LIMITS:
            return None
        limits = self.effective_limits()
        return budget_spent(self.root.usage, limits) if limits.any() else None

    def finalize_event(self, reason: str, **extra: Any) -> None:
        from ..runs.events import emit

        emit("budget", consumed=self.total(), limit=self.root.limits.as_dict(), action="finalize", reason=reason,
             **extra)

    def seed_tools(self, made: int, limit: int | None) -> Meter:
        """Start this meter's tool count at ``made`` (executions the run made before it) with the
        run's ``limit`` (``max_tool_calls``); returns the meter."""
        self.tool_calls = max(0, int(made))
        self.tool_limit = None if limit is None else max(0, int(limit))
        return self

    def tools_left(self) -> int | None:
        """Tool executions the run may still start: the least room of this meter and the meters
        above it that have a limit (None: no tool budget on the chain)."""
        left: int | None = None
        meter: Meter | None = self
        while meter is not None:
            if meter.tool_limit is not None:
                room = max(0, meter.tool_limit - meter.tool_calls)
                left = room if left is None else min(left, room)
            meter = meter.parent
        return left

    def take_tools(self, calls: int) -> int:
        """Reserve up to ``calls`` tool executions (counted now, on this meter and the meters above
        it, so parallel callers see them); returns how many the budget granted. No ``await``
        between the check and the count: concurrent workers of one event loop cannot overshoot."""
        left = self.tools_left()
        granted = max(0, calls if left is None else min(calls, left))
        meter: Meter | None = self
        while granted and meter is not None:
            meter.tool_calls += granted
            meter = meter.parent
        return granted

    def release_tools(self, calls: int) -> None:
        """Give back ``calls`` reserved with :meth:`take_tools` (or seeded) that never ran."""
        meter: Meter | None = self
        while meter is not None:
            meter.tool_calls = max(0, meter.tool_calls - calls)
            meter = meter.parent

    @contextlib.contextmanager
    def reserve(self, calls: int = 1) -> Iterator[None]:
        """Keep ``calls`` back (while nested work runs) when a call budget is set."""
        root = self.root
        root.reserved_calls += calls
        try:
            yield
        finally:
            root.reserved_calls -= calls


def _safe_price(spec: str | None) -> Price | None:
    try:
        return price_of(spec)
    except PriceTableError:  # checked at run start when it matters (budget_problem)
        return None


_METER: ContextVar[Meter | None] = ContextVar("smart_agent_meter", default=None)


def current_meter() -> Meter | None:
    return _METER.get()


class metered:  # (lower case: used as a function, ``with metered(state, ctx) as meter``)
    """The meter of the current run: the one of an enclosing run or node when there is one
    (nested graphs share their caller's budget), else a new one seeded from the state's
    ``usage`` with the context's budgets, current until the block ends. (A class, not a
    generator context manager: every model turn and tool turn enters one.)"""

    __slots__ = ("meter", "token")

    def __init__(self, state: Mapping[str, Any] | None, ctx: Any) -> None:
        existing = _METER.get()
        self.token: Token[Meter | None] | None = None
        if existing is not None:
            self.meter = existing
        else:
            state = state or {}
            held = run_meter_holder()
            run = held.meter if held is not None else None
            if run is not None:  # work of the run outlives its nodes: the run's meter counts it all (RunMeter)
                self.meter = Meter(parent=run)
            else:
                self.meter = Meter(state.get("usage"), limits_of(ctx), _field(ctx, "model", None))
            # The run's tool budget, for the runs this node starts (sub-agents, a planner)
            self.meter.seed_tools(_count(state.get("tool_calls_made")), tool_limit_of(state, ctx))

    def __enter__(self) -> Meter:
        if self.meter is not _METER.get():
            self.token = _METER.set(self.meter)
        return self.meter

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _METER.reset(self.token)
            self.token = None


class RunMeter:
    """The meter of a whole top-level run, once work outlives the node that started it (a
    background sub-agent, ``runs/background.py``). Each node of a top-level run starts a meter of
    its own, seeded from the state's ``usage``: work still spending on the meter of a node that
    ended would not be seen by the run's later nodes, nor theirs by it. Once :func:`hold_run_meter`
    made the current node's meter the run's, the meter of every later node of the run is a child of
    it: the run's usage and tool budget live there, and both sides see what the other spent at once.
    The run's scope makes the holder current for every node of the run (:func:`using_run_meter`)."""

    __slots__ = ("meter",)

    def __init__(self) -> None:
        self.meter: Meter | None = None


_RUN: ContextVar[RunMeter | None] = ContextVar("smart_agent_run_meter", default=None)

#: The key of a run's ``configurable`` that carries its :class:`RunMeter` (``runs/background.py``
#: ``with_run_scope``: a run driven from several tasks, a served graph's, finds it there).
RUN_METER_KEY = "__smart_agent_run_meter"


def run_meter_holder() -> RunMeter | None:
    """The current run's :class:`RunMeter`: made current here (:func:`using_run_meter`), else the
    one the run's config carries (None: neither)."""
    held = _RUN.get()
    if held is not None:
        return held
    try:
        found = (_get_config()().get("configurable") or {}).get(RUN_METER_KEY)
    except RuntimeError:  # (not inside a run)
        return None
    return found if isinstance(found, RunMeter) else None


@functools.cache
def _get_config() -> Callable[[], Any]:
    """LangGraph's ``get_config``, imported once (every node's meter asks for the run's config)."""
    from langgraph.config import get_config

    return get_config


@contextlib.contextmanager
def using_run_meter(holder: RunMeter) -> Iterator[RunMeter]:
    """Make ``holder`` the current run's :class:`RunMeter` for the block."""
    token = _RUN.set(holder)
    try:
        yield holder
    finally:
        _RUN.reset(token)


def hold_run_meter() -> bool:
    """Make the current node's meter its run's (:class:`RunMeter`) when it is a top-level run's own
    (a nested run's meter lives as long as that run); False when there is no run scope or meter."""
    holder, meter = run_meter_holder(), _METER.get()
    if holder is None or meter is None:
        return False
    if holder.meter is None and meter.parent is None:
        holder.meter = meter
    return True


@contextlib.contextmanager
def using(meter: Meter) -> Iterator[Meter]:
    """Make ``meter`` current for the block (a fleet worker's child meter)."""
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


_shared: weakref.WeakValueDictionary[str, Meter] = weakref.WeakValueDictionary()


def shared_meter(
    key: str, usage: Any, ctx: Any, reserve_calls: int = 0, tools: tuple[int, int | None] | None = None
) -> Meter:
    """The meter parallel workers of one round share (``key``: the round's), created by the first
    of them; it lives while they run. A root meter from ``usage`` and the context's budgets (one
    model call kept back when ``reserve_calls``), or, when the round runs inside another run's
    node (a fleet or a planner as a tool), a child of that run's meter, whose budgets it shares.
    ``tools``: ``(made, limit)``, the run's tool executions before the round and its
    ``max_tool_calls`` (:meth:`Meter.seed_tools`)."""
    meter = _shared.get(key)
    if meter is None:
        enclosing = _METER.get()
        if enclosing is not None:
            meter = Meter(parent=enclosing)
        else:
            meter = Meter(usage, limits_of(ctx), _field(ctx, "model", None))
            meter.reserved_calls = reserve_calls if meter.limits.model_calls else 0
        if tools is not None:
            meter.seed_tools(*tools)
        _shared[key] = meter
    return meter


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def tool_limit_of(state: Mapping[str, Any] | None, ctx: Any) -> int | None:
    """The run's ``max_tool_calls``: the state's (the loop's ``run_settings``, a planner's own
    key; copied at run start), else the context's (None: neither has one)."""
    state = state or {}
    value = run_setting(state, "max_tool_calls", state.get("max_tool_calls"))
    if value is None:
        value = _field(ctx, "max_tool_calls", None)
    return None if value is None else _count(value)


def child_meter() -> Meter | None:
    """A meter for a run started in the current node (a sub-agent, a planner step's work): it
    counts that run's own usage and tool executions and adds them to the current meter's, whose
    budgets it shares. None outside a metered node."""
    meter = _METER.get()
    return Meter(parent=meter) if meter is not None else None


def run_start_usage() -> dict[str, Any]:
    """The ``usage`` a run starts with: the enclosing run's when nested, else zero."""
    meter = _METER.get()
    return meter.total() if meter is not None else empty_usage()


def run_start_usages(state: Mapping[str, Any]) -> dict[str, Any]:
    """The usage keys a run's first node writes: ``usage`` (:func:`run_start_usage`) and, for a
    run of its own thread (not nested in another run), ``thread_usage``: the thread's earlier runs,
    the one before this included (its ``usage`` is still the state's)."""
    update: dict[str, Any] = {"usage": run_start_usage()}
    last = state.get("usage")
    if _METER.get() is None and isinstance(last, Mapping) and last:
        update["thread_usage"] = add_usage(state.get("thread_usage") or {}, last)
    return update


def thread_total(state: Mapping[str, Any]) -> dict[str, Any]:
    """What a thread's runs used, the latest run's included."""
    return add_usage(state.get("thread_usage") or {}, state.get("usage") or {})


def estimate_tokens(messages: Any, response: Any) -> tuple[int, int]:
    """Tokens of a call whose provider reported none: request JSON / 4 and reply text / 4."""
    from .messages import message_text
    from .tokens import CHARS_PER_TOKEN, approx_counter

    try:
        tokens_in = approx_counter(list(messages or []))
    except Exception:  # never fail a run over an estimate
        tokens_in = math.ceil(len(str(messages)) / CHARS_PER_TOKEN)
    text = message_text(response) if hasattr(response, "content") else ""
    args = "".join(json.dumps(c.get("args"), default=str) for c in getattr(response, "tool_calls", None) or [])
    return tokens_in, math.ceil(len(text + args) / CHARS_PER_TOKEN)


@functools.cache
def _usage_of() -> Callable[[Any], dict[str, int]]:
    """``messages.usage_of``, imported by the first reply (this module stays free of LangChain
    imports) and not again by every one (an import statement costs more than the lookup)."""
    from .messages import usage_of

    return usage_of


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def usage_problem(message: Any) -> str | None:
    """Which count of a reply's usage is invalid (``"input_tokens=-5"``), or None: the counts of
    its ``usage_metadata`` (and their details) and the integers of the provider's raw
    ``response_metadata["token_usage"]`` must pass :func:`valid_count`. (Every reply asks: one
    pass over a few numbers, a path built only for a bad one.)"""
    meta = getattr(message, "usage_metadata", None)
    if meta is not None and not isinstance(meta, dict):
        return f"usage_metadata={_shown(meta)}"
    for key, value in (meta or {}).items():
        if value is None or (type(value) is int and 0 <= value <= MAX_REPORTED_TOKENS):
            continue
        if isinstance(value, dict) and key.endswith("_details"):
            for k, v in value.items():
                if v is not None and not valid_count(v):
                    return f"{key}.{k}={_shown(v)}"
            continue
        return f"{key}={_shown(value)}"
    raw = (getattr(message, "response_metadata", None) or {}).get("token_usage")
    bad = _bad_int(raw, 0) if isinstance(raw, dict) else None
    return None if bad is None else f"token_usage.{'.'.join(bad[0])}={_shown(bad[1])}"


def _bad_int(value: dict[str, Any], depth: int) -> tuple[list[str], Any] | None:
    """``(path, integer)`` of the first integer of a provider's raw usage that is not a
    :func:`valid_count` (nested dicts to 4 levels; other values are not counts), or None."""
    for key, item in value.items():
        if type(item) is int:
            if not 0 <= item <= MAX_REPORTED_TOKENS:
                return [str(key)], item
        elif isinstance(item, dict) and depth < 3:
            bad = _bad_int(item, depth + 1)
            if bad is not None:
                return [str(key), *bad[0]], bad[1]
    return None


def checked_usage(response: Any, messages: Any) -> Any:
    """``response`` (a reply, or structured output's ``{"raw": reply, ...}``) as it is when its
    usage is valid (:func:`usage_problem`); else with the estimate of the call
    (:func:`estimate_tokens`) as its ``usage_metadata``, without the provider's ``token_usage``,
    and an ``error`` event naming the invalid count."""
    raw: Any = response.get("raw") if isinstance(response, dict) and "raw" in response else response
    problem = usage_problem(raw)
    if problem is None or not hasattr(raw, "model_copy"):  # (nearly every reply)
        return response
    from ..runs.events import emit

    tokens_in, tokens_out = estimate_tokens(messages, raw)
    emit("error", node="model", error=f"the provider reported invalid token usage ({problem}); the estimate "
         f"({tokens_in} in, {tokens_out} out) is counted instead")
    metadata = {k: v for k, v in (raw.response_metadata or {}).items() if k != "token_usage"}
    estimate = {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}
    fixed = raw.model_copy(update={"usage_metadata": estimate, "response_metadata": metadata})
    return {**response, "raw": fixed} if raw is not response else fixed


def record_start() -> Meter | None:
    """:func:`models.invoke_model`, before each request: count it on the current meter."""
    meter = _METER.get()
    if meter is not None:
        meter.begin_call()
    return meter


def record_end(meter: Meter | None, messages: Any, response: Any, spec: str | None) -> None:
    """:func:`models.invoke_model`, after a reply: its tokens (estimated when unreported) and cost."""
    if meter is None:
        return
    raw = response.get("raw") if isinstance(response, dict) and "raw" in response else response
    usage = getattr(raw, "usage_metadata", None)
    if type(usage) is dict and "input_token_details" not in usage:  # (nearly every reply: two counts)
        tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        counted = type(tokens_in) is int and type(tokens_out) is int and (tokens_in or tokens_out)
        if counted and valid_count(tokens_in) and valid_count(tokens_out):
            meter.end_call(int(tokens_in or 0), int(tokens_out or 0), spec)
            return
    reported = _usage_of()(raw)
    tokens_in, tokens_out = reported["input_tokens"], reported["output_tokens"]
    if not tokens_in and not tokens_out:
        tokens_in, tokens_out = estimate_tokens(messages, raw)
    meter.end_call(
        tokens_in, tokens_out, spec, reported.get("cache_read_tokens", 0), reported.get("cache_write_tokens", 0)
    )


# --------------------------------------------------------------------------- the client's own retries
#: The header the OpenAI client sends with every attempt of a request: 0, then 1, 2... for its retries.
RETRY_COUNT_HEADER = "x-stainless-retry-count"


@functools.cache
def retry_refused_error() -> type[Exception]:
    """The error :func:`count_model_retry` raises: an ``openai.OpenAIError``, which the OpenAI
    client passes on as it is instead of retrying the request again."""
    import openai

    class RetryRefused(openai.OpenAIError):
        pass

    return RetryRefused


async def count_model_retry(request: Any) -> None:
    """A request hook of the OpenAI-compatible HTTP clients this module builds: every request that
    reaches the provider is one model call of the run. The client's own retries
    (``model_max_retries``: after a timeout, a connection error, HTTP 408/409/429/5xx) happen
    inside one ``ainvoke``, where :func:`invoke_model` counts the first attempt only; this counts
    each retry on the run's meter before it is sent, and refuses it (nothing is sent) when the
    run's ``max_model_calls`` (or token / cost budget) has no call left."""
    try:
        retry = int(request.headers.get(RETRY_COUNT_HEADER) or 0) > 0
    except ValueError:
        retry = False
    meter = current_meter() if retry else None
    if meter is None:
        return
    if meter.spent():
        limits = meter.root.limits
        raise retry_refused_error()(
            f"the model request failed and the run's budget leaves no call for its retry "
            f"(max_model_calls={limits.model_calls}, {meter.total()['model_calls']} requests sent)"
        )
    meter.begin_call()


def budget_hooks() -> dict[str, list[Callable[[Any], Any]]]:
    """``event_hooks`` for an async HTTP client of an OpenAI-compatible model (:func:`count_model_retry`)."""
    return {"request": [count_model_retry]}
