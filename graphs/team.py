"""A team of agents sharing one thread, handing it to each other: the agent loop with
its ``handoff`` node (see ``build_agent_graph(agents=...)``)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from ..nodes.team import AgentSpec
from .agent import build_agent_graph

__all__ = ["AgentSpec", "build_team_graph"]


def build_team_graph(
    *,
    agents: dict[str, AgentSpec],
    default: str | None = None,
    model: BaseChatModel | None = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "team",
    **kwargs: Any,
):
    """Compile a team of ``agents`` (name -> AgentSpec); ``default`` (the first agent
    when None) holds a new thread. Other keyword arguments go to ``build_agent_graph``."""
    if not agents:
        raise ValueError("build_team_graph needs at least one agent")
    return build_agent_graph(
        agents=agents, default_agent=default, model=model, checkpointer=checkpointer, store=store, name=name, **kwargs
    )
