"""One turn's calls planned before any runs (the ``tools`` node's pure part): the per-turn cap
and the argument size limit (:func:`bounded_turn`), loop detection (:func:`loop_excess`,
:func:`track_repeats`), the free archive reads and the run's budget; and the common turn
that needs none of that planning (:func:`lone_call`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage

from ..models.prompts import LOOP_CYCLE_FINALIZE_NOTICE, LOOP_CYCLE_NOTICE, LOOP_FINALIZE_NOTICE, LOOP_NOTICE
from ..replies import MAX_JSON_CHARS
from ..runs.events import emit
from ..state import count_of
from ..tools.context_tools import GET_TOOL_RESPONSE, STATE_TAG
from ..tools.registry import ToolRegistry
from .routes import (
    call_signature,
    cycle_found,
    cycle_length,
    found_cycle,
    loop_memory,
    loop_stage,
    past_limit,
    runs_after,
    stage_rank,
    window_after,
)


def plan_calls(calls: list[dict], made: int, limit: int) -> tuple[list[dict], list[dict]]:
    """Split a turn's calls into those to execute and those over the budget."""
    remaining = max(0, limit - made)
    return calls[:remaining], calls[remaining:]


TOO_MANY_IN_TURN = (
    "skipped: too many tool calls in one turn ({count} calls; at most {cap} run per turn). "
    "This call and the {dropped} after it were not run; call what you still need in a later turn."
)
REPEATED = (
    "Not run: the same {tool} call (same arguments) {count} times in a row, alone or in a cycle of calls "
    "made over and over; the result would be the same. Use the results you have, or answer."
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


def bounded_turn(
    message: AIMessage, cap: int, max_chars: int
) -> tuple[AIMessage | None, list[dict[str, Any]], int, dict[int, int]]:
    """``(replacement or None, calls kept, calls dropped, sizes)`` for one turn's AI message:
    at most ``cap`` calls plus one answered "too many", oversized arguments shrunk.
    ``sizes``: :func:`arg_chars` of each kept call, by ``id()``."""
    valid: list[dict[str, Any]] = [dict(c) for c in message.tool_calls or []]
    invalid: list[dict[str, Any]] = [dict(c) for c in message.invalid_tool_calls or []]
    total = len(valid) + len(invalid)
    keep = cap + 1 if total > cap else total
    kept_valid = valid[:keep]
    kept_invalid = invalid[: max(0, keep - len(kept_valid))]
    changed = len(kept_valid) + len(kept_invalid) < total
    shrunk_valid: list[dict[str, Any]] = []
    shrunk_invalid: list[dict[str, Any]] = []
    sizes: dict[int, int] = {}
    for c in kept_valid:
        n = sizes[id(c)] = arg_chars(c)
        shrunk_valid.append({**c, "args": {"_truncated": f"{n} chars"}} if n > max_chars else c)
        changed |= n > max_chars
    for c in kept_invalid:  # (too long to be parsed at all is shrunk whatever the limit)
        n = sizes[id(c)] = arg_chars(c)
        big = n > min(max_chars, MAX_JSON_CHARS)
        shrunk_invalid.append({**c, "args": json.dumps({"_truncated": f"{n} chars"})} if big else c)
        changed |= big
    calls = [*kept_valid, *kept_invalid]
    if not changed:
        return None, calls, 0, sizes
    replacement = message.model_copy(update={"tool_calls": shrunk_valid, "invalid_tool_calls": shrunk_invalid})
    return replacement, calls, total - len(calls), sizes


def loop_notice(cycle: Mapping[str, Any], final: bool = False) -> str:
    """The system-prompt notice of a ``loop_cycle``: one call repeated, or a cycle of calls."""
    tools, count = list(cycle.get("tools") or []), cycle.get("repeats")
    if len(tools) == 1:
        return (LOOP_FINALIZE_NOTICE if final else LOOP_NOTICE).format(tool=tools[0], count=count)
    template = LOOP_CYCLE_FINALIZE_NOTICE if final else LOOP_CYCLE_NOTICE
    return template.format(period=len(tools), tools=", ".join(map(str, tools)), count=count)


def loop_event(cycle: Mapping[str, Any], limit: int) -> None:
    """The ``loop_detected`` event of a ``loop_cycle``: ``tool`` (the repeated tool; a cycle's
    tools comma-separated), ``repeats``, ``limit``, ``action``, and the cycle: ``period`` and
    ``cycle``, its tools in order."""
    tools = [str(t) for t in cycle.get("tools") or []]
    emit(
        "loop_detected", tool=", ".join(tools), repeats=cycle.get("repeats"), limit=limit,
        action=cycle.get("action"), period=cycle.get("period"), cycle=tools,
    )  # fmt: skip


def track_repeats(
    state: Mapping[str, Any], calls: list[dict[str, Any]], signatures: Sequence[str] | None = None
) -> dict[str, Any]:
    """Loop detection's state after this turn's ``calls`` (nodes/routes.py: the last calls'
    signatures ``loop_calls``, the cycles' runs ``loop_runs``, the cycle found ``loop_cycle``).
    A cycle of calls (one call, or a few in turn) made ``loop_limit`` times in a row puts a
    notice in the next turn's system prompt and emits ``loop_detected``; a turn with no cycle
    clears that notice. A call of the turn going past the limit makes the cycle "finalize",
    even when the turn's later calls are others: ``route_after_tools`` finalizes the run.
    ``signatures``: the calls' ``call_signature`` when the caller has them."""
    limit = count_of(state, "loop_limit")
    if signatures is None:
        signatures = [call_signature(c) for c in calls]
    if not signatures:
        return {}
    window, runs = loop_memory(state)
    before = found_cycle(state)
    found: dict[str, Any] = {}
    rank, quick = 0, 2 * max(limit, 2)  # (quick: loop_stage's own test for "none", on every call)
    for signature in signatures:
        runs = runs_after(window, runs, signature)
        window = window_after(window, signature)
        if limit <= 0 or (runs[0] < limit and max(runs) < quick):
            continue
        stage, period = loop_stage(runs, limit)
        if stage_rank(stage) > rank:  # (the turn's highest stage, where it was first reached)
            rank = stage_rank(stage)
            found = cycle_found(stage, period, window, runs)
    update: dict[str, Any] = {}  # (only what changed: each key written is a channel update a step)
    if window != state.get("loop_calls"):
        update["loop_calls"] = window
    if runs != state.get("loop_runs"):
        update["loop_runs"] = runs
    if found != before:
        update["loop_cycle"] = found
    if found.get("action") == "notice":
        loop_event(found, limit)
        update["notice"] = loop_notice(found)
    elif not found and before.get("action") == "notice":
        update["notice"] = ""
    return update


def loop_excess(
    state: Mapping[str, Any], calls: list[dict[str, Any]], signatures: Sequence[str] | None = None
) -> dict[int, int]:
    """Calls of this turn (by ``id()``) that go on with a cycle of calls (nodes/routes.py
    ``loop_stage``) past the call that finalizes it, counting on from the previous turns, each
    with how many times its cycle was (begun to be) made: they are not run, so a run executes
    each call of a cycle at most ``loop_limit`` + 1 times in a row even when a single turn
    repeats it (0: loop detection off). ``signatures``: the calls' ``call_signature`` (at least
    as many) when the caller has them."""
    limit = count_of(state, "loop_limit")
    if limit <= 0:
        return {}
    window, runs = loop_memory(state)
    if signatures is None:
        signatures = [call_signature(c) for c in calls]
    excess: dict[int, int] = {}
    for call, signature in zip(calls, signatures, strict=False):
        runs = runs_after(window, runs, signature)
        window = window_after(window, signature)
        if past_limit(runs, limit):
            excess[id(call)] = max(-(-run // p) for p, run in enumerate(runs, start=1) if run > cycle_length(limit, p))
    return excess


def effect_signature(registry: ToolRegistry, call: Mapping[str, Any]) -> str:
    """:func:`call_signature` of a call by its tool's canonical effect (``ToolMeta.canonical``
    of a tool of the registry; a call to another name or a malformed call: as it is)."""
    entry = registry.entry(call.get("name") or "") if call.get("type") != "invalid_tool_call" else None
    return call_signature(call, entry[1].canonical if entry is not None else None)


def split_free_retrievals(calls: list[dict], used: int, quota: int) -> tuple[list[dict], list[dict]]:
    """get_tool_response calls within the run's free quota, and every other call.

    Reading back an archived output changes nothing and is how the model recovers what
    compaction hid, so it does not spend the tool budget; it has its own bound."""
    free: list[dict] = []
    counted: list[dict] = []
    for c in calls:
        if c.get("name") == GET_TOOL_RESPONSE and c.get("type") != "invalid_tool_call" and used + len(free) < quota:
            free.append(c)
        else:
            counted.append(c)
    return free, counted


def updates_state(registry: ToolRegistry, call: Mapping[str, Any]) -> bool:
    """Whether the call is to a tool that updates the run's state (a Command): such calls
    run one at a time, after the others."""
    if call.get("type") == "invalid_tool_call":
        return False
    entry = registry.entry(call.get("name") or "")
    return entry is not None and STATE_TAG in entry[1].tags


def lone_call(
    message: Any, state: Mapping[str, Any], registry: ToolRegistry, cap: int, max_chars: int, made: int, limit: int
) -> tuple[dict[str, Any], str] | None:
    """``(call, its effect_signature)`` when the turn is the common one: a single valid call
    (no malformed one) that the plan would run as it is, so the tools node runs it without
    planning. That is: the per-turn ``cap`` admits it, its arguments are within ``max_chars``
    (:func:`bounded_turn` changes nothing), no review is pending (``state["reviews"]`` empty,
    nothing to clear), it does not repeat past the loop limit (:func:`loop_excess`), the run's
    budget (``made`` of ``limit``) runs it, it is not a ``get_tool_response`` (whose free quota
    the plan decides) nor a call to a tool that updates the state. None for any other turn."""
    if not isinstance(message, AIMessage) or message.invalid_tool_calls:
        return None
    calls = cast(list[dict[str, Any]], message.tool_calls)
    if len(calls) != 1 or cap < 1 or made >= limit or state.get("reviews"):
        return None
    call = calls[0]
    if call.get("name") == GET_TOOL_RESPONSE or updates_state(registry, call) or arg_chars(call) > max_chars:
        return None
    signature = effect_signature(registry, call)
    # (loop_excess for one call: the call is past the limit when it goes on with a cycle beyond it)
    loop_limit = count_of(state, "loop_limit")
    if loop_limit > 0 and past_limit(runs_after(*loop_memory(state), signature), loop_limit):
        return None
    return call, signature
