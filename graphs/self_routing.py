"""A compiled graph whose nodes route themselves, and whose ``update_state`` still routes.

The agent loop's nodes return ``Command(update, goto)`` (``nodes/routes.py`` ``self_routed``):
LangGraph evaluates a conditional edge on a fresh copy of every channel of the graph, which
on the loop's state (some thirty keys) cost more than the turn's own work. A conditional edge
also decides where a thread goes after ``update_state(values, as_node=...)`` - how LangGraph
Studio edits a thread's state, and how a caller writes a state from outside a run. A node
that routes itself does not run there, so :class:`SelfRoutedGraph` does what the edge did: an
update as such a node becomes ``Command(update=values, goto=<the node's route on the state
after the update>)``, decided by the same route function (with no run context, as an edge
under ``update_state`` was).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateUpdate

from ..history.budget import apply_update

Route = Callable[[dict[str, Any], RunnableConfig], str]

__all__ = ["SelfRoutedGraph", "with_node_routes"]


class SelfRoutedGraph(CompiledStateGraph):
    """A compiled state graph; ``node_routes``: node name -> the route its node decides with."""

    def __init__(self, *, node_routes: Mapping[str, Route] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.node_routes = dict(node_routes or {})  # (kept by copy() and with_config(): they pass __dict__)

    def _routed(self, values: dict[str, Any], supersteps: Sequence[Sequence[StateUpdate]], last: str | None) -> list:
        """``supersteps`` with each plain update as a self-routed node turned into a Command
        going where the node's route sends the state after it (``values``: the state before)."""
        out = []
        for step in supersteps:
            updates = []
            for update in step:
                update = StateUpdate(*update)
                node = update.as_node or (last if len(step) == 1 else None)
                route = self.node_routes.get(node or "")
                if isinstance(update.values, Mapping):
                    values = apply_update(values, update.values)
                    if route is not None:
                        goto = route(values, {})  # no run context: as a conditional edge under update_state
                        update = StateUpdate(Command(update=update.values, goto=goto), node, update.task_id)  # type: ignore[arg-type]
                updates.append(update)
            out.append(updates)
        return out

    def _last_node(self, checkpoint: Any) -> str | None:
        """The node an update without ``as_node`` is applied as (LangGraph's own inference)."""
        if checkpoint is None:
            return None
        try:
            return self._infer_as_node(checkpoint.checkpoint["versions_seen"])
        except Exception:  # (a LangGraph without it: the update goes unrouted, as LangGraph decides)
            return None

    def bulk_update_state(self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]) -> Any:
        if self.node_routes and self.checkpointer is not None and not isinstance(self.checkpointer, bool):
            saved = self.checkpointer.get_tuple(config)
            values = dict(self.get_state(config).values) if saved else {}
            supersteps = self._routed(values, supersteps, self._last_node(saved))
        return super().bulk_update_state(config, supersteps)

    async def abulk_update_state(self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]) -> Any:
        if self.node_routes and self.checkpointer is not None and not isinstance(self.checkpointer, bool):
            saved = await self.checkpointer.aget_tuple(config)
            values = dict((await self.aget_state(config)).values) if saved else {}
            supersteps = self._routed(values, supersteps, self._last_node(saved))
        return await super().abulk_update_state(config, supersteps)


def with_node_routes(compiled: Any, routes: Mapping[str, Route]) -> SelfRoutedGraph:
    """``compiled`` (the same nodes, edges, schemas and drawing) as a :class:`SelfRoutedGraph`."""
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return SelfRoutedGraph(node_routes=routes, **attrs)
