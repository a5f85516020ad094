"""Two-phase reasoning: a reasoning call first, then an action call that offers only the tools
the reasoning named (``nodes/reasoning.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..config.fields import Settings, setting

ReasoningMode = Literal["direct", "two_phase"]


def reasoning_mode(text: str) -> str:
    """``--reasoning``: ``direct`` or ``two-phase`` (also ``two_phase``)."""
    value = text.strip().replace("-", "_")
    if value not in ("direct", "two_phase"):
        raise ValueError(f"must be direct or two-phase (got {text!r})")
    return value


@dataclass(kw_only=True)
class ReasoningSettings(Settings):
    """Reasoning"""

    reasoning: ReasoningMode = setting(
        "direct",
        help="'direct': each agent turn is one model call. 'two_phase': the model first reasons with a single "
        "'reasoning' tool (situation, plan, done), then acts with only the tools its plan names (all when it "
        "names none; none when it says done).",
        parse=reasoning_mode,
        metavar="direct|two-phase",
    )
