"""Policies: the agent loop's concerns, each whole in one module, and the user's middleware.

A concern's module holds its settings (a settings class, registered in the context classes of
``config/context.py``), its state keys, its hooks (a :class:`policies.base.Policy`) and its
events. The tools node runs :func:`tool_policies` in this order; ``policies/hooks.py`` runs a
user's LangChain ``AgentMiddleware`` in the same nodes.
"""

from __future__ import annotations

from .archive import Archive
from .base import Policy
from .loop_guard import LoopGuard
from .pii import PiiToolResults
from .review import Review
from .tool_budget import ToolBudget
from .tool_retry import BACKOFF_BASE_S, ToolRetry
from .turn_limits import TurnLimits

__all__ = ["Policy", "tool_policies"]


def tool_policies(*, budget: object = None, backoff_base_s: float = BACKOFF_BASE_S) -> list[Policy]:
    """The tools node's policies, in the order they plan a turn (a call one policy answers, the
    next ones see answered): the per-turn cap and argument size, a person's decisions, loop
    detection, the free archive reads, then the run's tool budget over what is left; around each
call the retry, then the personal-data rules on its result. ``budget``:
    the graph's ``ContextBudget`` (the archive); ``backoff_base_s``: the first wait of a retry."""
    return [
        TurnLimits(),
        Review(),
        LoopGuard(),
        Archive(budget),
        ToolBudget(),
        ToolRetry(backoff_base_s),
        PiiToolResults(),
    ]
