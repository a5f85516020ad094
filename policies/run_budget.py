"""The run's budgets of model calls, tokens and money (every graph; ``models/usage.py`` keeps
the count). The last turn a budget allows is offered no tools and answers."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class RunBudgetSettings(Settings):
    """Run budgets"""

    max_model_calls: int = setting(
        0,
        help="Most model calls of a run (every graph; a fleet's workers and sub-agents share it). Every request "
        "sent to a provider counts: the OpenAI client's own retries (model_max_retries) and each fallback "
        "model's call; a retry or fallback the budget has no call for is not sent. The last call allowed is "
        "offered no tools and answers. 0: no limit.",
        bounds=(0, 1_000_000),
        client="budget",
    )
    max_tokens: int = setting(
        0,
        help="Most input + output tokens of a run, from the provider's usage. When the next turn would exceed "
        "it, that turn answers without tools. 0: no limit.",
        bounds=(0, 1_000_000_000_000),
        client="budget",
    )
    max_cost_usd: float = setting(
        0.0,
        help="Most spend of a run in US dollars, from the price table (SMART_AGENT_PRICES adds prices); a run "
        "whose model has no price fails at start. 0: no limit.",
        bounds=(0.0, 1_000_000.0),
        flag="--max-cost",
        metavar="USD",
        client="budget",
    )
