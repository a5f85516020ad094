"""The context budget: every request (system prompt, messages, tool schemas) stays within
``context_token_limit``; before a turn that would exceed it, older history is compacted into a
summary (``summarize`` node, ``history/``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class ContextBudgetSettings(Settings):
    """Context budget"""

    context_token_limit: int = setting(
        24000,
        help="Token budget of every model request: system prompt, messages and tool schemas (4 characters per "
        "token unless a token counter is given). Before a turn that would exceed it, older history is compacted "
        "into a summary. Default 24000: room for a 32k-context model's answer, and far below the point where "
        "long prompts get slow, costly and less accurate on larger models.",
        bounds=(1000, 10_000_000),
        flag="--context-tokens",
        client="lower",
    )
    summary_token_limit: int = setting(
        1000,
        help="Largest size of one summary of compacted history, in tokens (at most 15% of context_token_limit). "
        "Default 1000: room for the facts, numbers, file names and archived execution ids a long task needs, "
        "while leaving the budget to recent turns.",
        bounds=(50, 1_000_000),
        flag="--summary-tokens",
    )
