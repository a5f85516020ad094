"""A person in the loop: tool calls that wait for a human's decision before they run, and the
``ask_user`` tool. The ``human`` node (``nodes/human.py``) asks (the interrupts are LangChain's
HITL middleware format, ``runs/approval.py``) and writes the decisions to the state
(``reviews``: call id -> ``{"type": "reject"|"answer"|"refuse", ...}``); the tools node answers
those calls without running them (:class:`Review`) and clears ``reviews``. State keys:
``approve``, ``ask_user`` (the run's, copied at its start: a resume reviews the same calls),
``reviews``; events ``approval_requested``, ``approval``, ``question``, ``answer``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import ToolMessage

from ..config.checks import APPROVE_NONE, approve_valid
from ..config.fields import Settings, setting
from ..runs.approval import rejection_text
from ..runs.events import preview
from .base import Policy, ToolTurn

C = TypeVar("C", bound="ReviewSettings")


@dataclass(kw_only=True)
class ReviewSettings(Settings):
    """Human in the loop"""

    approve: str = setting(
        APPROVE_NONE,
        help="Tool calls that wait for a human's decision before they run (a LangGraph interrupt in the format "
        "of LangChain's HITL middleware): 'none', 'side-effects' (every tool flagged side_effects), or a comma "
        "list of tool names (may include 'side-effects'). An entry may name the decisions a person may take "
        "about its calls, NAME=DECISION/DECISION from approve, edit, reject, respond (e.g. "
        "'write_file=approve/reject'); without one: approve, edit or reject.",
        rule=(approve_valid, "'none', 'side-effects' or a comma list of tool names, each optionally "
              "=DECISION/DECISION (approve, edit, reject, respond)"),
        metavar="none|side-effects|LIST",
    )
    ask_user: bool = setting(
        False,
        help="Offer the ask_user tool: the model may ask the user a question (an interrupt {'question': ...}); "
        "the answer is its result. On in `smart-agent chat`.",
    )


def review_context(state: Mapping[str, Any], ctx: C) -> C:
    """``ctx`` with the ``approve`` and ``ask_user`` of the run that made the turn (the
    resolver copies them into the state at run start): a resume carries a context of its
    own — none at all from some clients — and must not change which calls wait for a
    decision, nor let a call run whose decision it ignored."""
    approve, ask = review_settings(state, ctx)
    changes: dict[str, Any] = {}
    if approve != ctx.approve:
        changes["approve"] = approve
    if ask != ctx.ask_user:
        changes["ask_user"] = ask
    return dataclasses.replace(ctx, **changes) if changes else ctx


def review_settings(state: Mapping[str, Any], ctx: Any) -> tuple[str, bool]:
    """``(approve, ask_user)`` of the run that made the turn: the state's (copied there by the
    resolver) where it holds them, else the context's."""
    approve, ask = state.get("approve"), state.get("ask_user")
    return (approve if isinstance(approve, str) else ctx.approve), (ask if isinstance(ask, bool) else ctx.ask_user)


def reviewed_message(call: Mapping[str, Any], review: Mapping[str, Any]) -> ToolMessage:
    """The tool result of a call a human decided (the tools node does not run it)."""
    call_id, name = call.get("id") or "", call.get("name") or ""
    if review.get("type") == "answer":
        return ToolMessage(content=str(review.get("text") or ""), tool_call_id=call_id, name=name)
    if review.get("type") == "reject":
        text = rejection_text(name, call_id, str(review.get("message") or ""))
    else:
        text = str(review.get("message") or "Not run.")
    return ToolMessage(content=text, tool_call_id=call_id, name=name, status="error")


class Review(Policy):
    """Answers the calls a person decided (rejected, refused, or an ``ask_user`` answered)
    without running them and without spending the tool budget; an edited call runs as edited
    (the human node rewrote the message)."""

    name = "review"

    def plan(self, turn: ToolTurn) -> None:
        reviews: Mapping[str, Mapping[str, Any]] = turn.state.get("reviews") or {}
        if not reviews:
            return
        for call in turn.calls:
            review = reviews.get(call.id)
            if review is None or call.notes.get("over_cap"):
                continue
            message = reviewed_message(call.call, review)
            call.answer = message
            # A call a person answered or rejected is still one of the run's tool calls (its summary
            # and --json list it): ``reviewed`` says it did not run as a tool.
            kind = str(review.get("type"))
            failed = message.status == "error"
            call.events = [
                ("tool_call", {"id": call.call.get("id"), "name": call.call.get("name"), "args": call.call.get("args"),
                               "reviewed": kind}),
                ("tool_result", {"id": call.call.get("id"), "name": call.call.get("name"), "ok": not failed,
                                 "error": kind if failed else None, "duration_s": 0.0,
                                 "preview": preview(str(message.content))}),
            ]  # fmt: skip
        turn.update["reviews"] = {}
