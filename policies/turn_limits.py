"""Limits of one model turn's tool calls: how many run (the rest are answered "skipped" and
dropped from the AI message) and how large a call's arguments may be (larger: refused before it
runs, shrunk in the history)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class TurnLimitSettings(Settings):
    """Turn limits"""

    max_tool_calls_per_turn: int = setting(
        32,
        help="Most tool calls run from one model turn; the rest are answered 'skipped' (also bounded by "
        "max_tool_calls).",
        bounds=(1, 1000),
        client="lower",
    )
    max_tool_arg_chars: int = setting(
        100_000,
        help="Largest tool-call arguments (characters of JSON) a call may carry; larger calls are refused and "
        "shrunk in the history.",
        bounds=(100, 10_000_000),
        client="lower",
    )
