"""A node that may call a model (or run a graph that does) counts those calls in the
run's usage: :func:`metered_node` runs it inside the run's meter (usage.py) and returns
the run's new ``usage`` with its update when the node used anything."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from langgraph.runtime import Runtime

from ..config.context import BaseContext
from ..models.usage import Meter, as_usage, metered, run_start_usages

Node = TypeVar("Node", bound=Callable[..., Awaitable[dict[str, Any]]])


def metered_node(node: Node, *, run_start: bool = False) -> Node:
    """``node(state, runtime)`` with its model calls (its sub-agents', too) counted.
    ``run_start``: the node starts the run, so the count starts from zero (from the
    caller's when nested) instead of the thread's last ``usage``."""

    async def wrapped(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any]:
        start = run_start_usages(state) if run_start else {}  # (before the run's own meter is on)
        seed = {**state, "usage": start["usage"]} if run_start else state
        with metered(seed, BaseContext.of(runtime)) as meter:
            update = await node(state, runtime)
            if run_start:
                return {**(update or {}), **start, "usage": meter.total()}
            return with_run_usage(update or {}, meter, state)

    wrapped.__name__ = getattr(node, "__name__", "node")
    wrapped.__doc__ = node.__doc__
    return cast(Node, wrapped)


def with_run_usage(update: dict[str, Any], meter: Meter, state: Mapping[str, Any]) -> dict[str, Any]:
    """``update``, and the run's ``usage`` when ``meter`` counted what the state's ``usage`` does
    not hold (the node's tools or sub-agents called a model; a new meter that counted nothing
    still holds the state's own record)."""
    usage = state.get("usage")
    if meter.root.usage is not usage and meter.total() != as_usage(usage):
        return {**update, "usage": meter.total()}
    return update
