"""Limits of one model turn's tool calls: how many run (one more is answered "too many in one
turn" for all the others, which are dropped from the AI message, so no later request carries
them) and how large a call's arguments may be (larger: refused before it runs, its arguments
shrunk to a placeholder in the history). The caps also bound who is asked for approval
(``nodes/human.py``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.fields import Settings, setting
from ..replies import MAX_JSON_CHARS
from .base import Policy, ToolTurn


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


TOO_MANY_IN_TURN = (
    "skipped: too many tool calls in one turn ({count} calls; at most {cap} run per turn). "
    "This call and the {dropped} after it were not run; call what you still need in a later turn."
)
OVERSIZED = (
    "Refused: the arguments are {chars} characters of JSON, more than the {limit} allowed "
    "(max_tool_arg_chars). The call was not run; pass smaller arguments."
)


# arg_chars' encoder, built once: json.dumps's text with these options.
_args_text = json.JSONEncoder(ensure_ascii=False, default=str).encode


def arg_chars(call: Mapping[str, Any]) -> int:
    """Size of a call's arguments as JSON text (a malformed call's raw string)."""
    args = call.get("args")
    if isinstance(args, str):
        return len(args)
    try:
        return len(_args_text(args))
    except (ValueError, RecursionError):
        return len(str(args))


class TurnLimits(Policy):
    """The per-turn cap and the argument size limit, planned before anything runs."""

    name = "turn_limits"

    def plan(self, turn: ToolTurn) -> None:
        if turn.message is None or not turn.calls:
            return
        cap, max_chars = int(turn.ctx.max_tool_calls_per_turn), int(turn.ctx.max_tool_arg_chars)
        total = len(turn.calls)  # (the message's calls in its order: the valid ones, then the malformed)
        keep = cap + 1 if total > cap else total
        turn.calls, dropped = turn.calls[:keep], total - keep
        sizes = [arg_chars(call.call) for call in turn.calls]
        # (a malformed call too long to be parsed at all is shrunk whatever the limit)
        limits = [min(max_chars, MAX_JSON_CHARS) if call.malformed else max_chars for call in turn.calls]
        if total <= cap and all(size <= limit for size, limit in zip(sizes, limits, strict=True)):
            return  # every call within both limits (nearly every turn): nothing to change
        changed = dropped > 0
        valid: list[dict[str, Any]] = []
        invalid: list[dict[str, Any]] = []
        for call, size, limit in zip(turn.calls, sizes, limits, strict=True):
            shrink = size > limit
            changed |= shrink
            placeholder = {"_truncated": f"{size} chars"}
            if call.malformed:
                invalid.append({**call.call, "args": json.dumps(placeholder)} if shrink else call.call)
            else:
                valid.append({**call.call, "args": placeholder} if shrink else call.call)
            if size > max_chars:
                call.refuse(OVERSIZED.format(chars=size, limit=max_chars), "args_too_large", placeholder)
        for call in turn.calls[cap:]:  # the one kept to answer for the dropped ones
            call.notes["over_cap"] = True
            call.skip(
                TOO_MANY_IN_TURN.format(count=total, cap=cap, dropped=dropped),
                error="skipped_turn_limit", note=f"skipped: {dropped + 1} calls over the per-turn limit",
            )
        if changed:  # the history keeps the message as the turn answers it (same id: it replaces it)
            turn.replacement = turn.message.model_copy(update={"tool_calls": valid, "invalid_tool_calls": invalid})
