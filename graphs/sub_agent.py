"""The ``sub_agent(task)`` tool for a caller's own list of tools: it runs a fresh child agent
loop with its own conversation and returns only the child's answer.

Nesting is bounded by ``max_agent_depth`` (children at the limit are not given
``sub_agent``) and concurrency by ``max_sub_agents`` (a semaphore per nesting level, so a
parent waiting on its child never holds the slot the child needs). The tools and the child
graphs are :class:`~smart_agent.graphs.delegation.SubAgents` (``graphs/delegation.py``, which
also has the background tools ``start_sub_agent`` / ``check_sub_agent`` / ``cancel_sub_agent``
that ``build_agent_graph`` offers with ``--sub-agents``); running a child and wrapping any
graph as a tool (``as_tool``) are in ``tools/agents.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from ..tools.agents import SUB_AGENT
from ..tools.registry import ToolRegistry
from .agent import build_agent_graph
from .delegation import SUB_AGENT_DESCRIPTION
from .delegation import SubAgents as _SubAgents

__all__ = ["SUB_AGENT_DESCRIPTION", "SubAgents", "sub_agent_tool"]


class SubAgents(_SubAgents):
    """:class:`graphs.delegation.SubAgents` whose children are ``build_agent_graph`` loops."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("build", build_agent_graph)
        super().__init__(**kwargs)


def sub_agent_tool(
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    tools: Iterable[BaseTool] | None = None,
    max_depth: int | None = None,
    max_concurrent: int | None = None,
    name: str = SUB_AGENT,
) -> BaseTool:
    """The ``sub_agent(task)`` tool. Children get ``registry`` (default: the built-in
    tools) plus ``tools``; limits default to the run's ``max_agent_depth`` / ``max_sub_agents``."""
    return SubAgents(
        model=model, registry=registry, tools=tools, max_depth=max_depth, max_concurrent=max_concurrent, name=name,
    ).tool
