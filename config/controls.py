"""Run controls every graph shares: human approval of tool calls, ``ask_user``, and the
run's budgets of model calls, tokens and money.

A mixin of ``context.BaseContext`` (kept here so context.py stays one screenful per
graph). Defaults come from ``SMART_AGENT_<FIELD>`` like every other field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, get_type_hints

from .checks import APPROVE_NONE, env_field


@cache
def _types() -> dict[str, Any]:
    return get_type_hints(RunControls)


def _env(name: str, default: Any) -> Any:
    return env_field(name, _types()[name], default)


def _d(description: str) -> dict[str, Any]:
    return {"description": description}


@dataclass(kw_only=True)
class RunControls:
    """Approval, ask_user and budgets (see docs in README 'Human in the loop and budgets')."""

    approve: str = field(
        default_factory=lambda: _env("approve", APPROVE_NONE),
        metadata=_d(
            "Tool calls that wait for a human's decision before they run (a LangGraph interrupt in the "
            "format of LangChain's HITL middleware): 'none', 'side-effects' (every tool flagged "
            "side_effects), or a comma list of tool names (may include 'side-effects')."
        ),
    )
    ask_user: bool = field(
        default_factory=lambda: _env("ask_user", False),
        metadata=_d(
            "Offer the ask_user tool: the model may ask the user a question (an interrupt "
            "{'question': ...}); the answer is its result. On in `smart-agent chat`."
        ),
    )
    max_model_calls: int = field(
        default_factory=lambda: _env("max_model_calls", 0),
        metadata=_d(
            "Most model calls of a run (every graph; a fleet's workers and sub-agents share it). Every "
            "request sent to a provider counts: the OpenAI client's own retries (model_max_retries) "
            "and each fallback model's call; a retry or fallback the budget has no call for is not "
            "sent. The last call allowed is offered no tools and answers. 0: no limit."
        ),
    )
    max_tokens: int = field(
        default_factory=lambda: _env("max_tokens", 0),
        metadata=_d(
            "Most input + output tokens of a run, from the provider's usage. When the next turn "
            "would exceed it, that turn answers without tools. 0: no limit."
        ),
    )
    max_cost_usd: float = field(
        default_factory=lambda: _env("max_cost_usd", 0.0),
        metadata=_d(
            "Most spend of a run in US dollars, from the price table (SMART_AGENT_PRICES adds "
            "prices); a run whose model has no price fails at start. 0: no limit."
        ),
    )
