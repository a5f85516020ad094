"""A person in the loop: tool calls that wait for a human's decision before they run, and the
``ask_user`` tool (the ``human`` node, ``nodes/human.py``; the interrupts are LangChain's HITL
middleware format, ``runs/approval.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.checks import APPROVE_NONE, approve_valid
from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class ReviewSettings(Settings):
    """Human in the loop"""

    approve: str = setting(
        APPROVE_NONE,
        help="Tool calls that wait for a human's decision before they run (a LangGraph interrupt in the format "
        "of LangChain's HITL middleware): 'none', 'side-effects' (every tool flagged side_effects), or a comma "
        "list of tool names (may include 'side-effects').",
        rule=(approve_valid, "'none', 'side-effects' or a comma list of tool names"),
        metavar="none|side-effects|LIST",
    )
    ask_user: bool = setting(
        False,
        help="Offer the ask_user tool: the model may ask the user a question (an interrupt {'question': ...}); "
        "the answer is its result. On in `smart-agent chat`.",
    )
