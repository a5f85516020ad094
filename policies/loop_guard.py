"""Loop detection: a cycle of 1 to 4 calls with the same effect, repeated ``loop_limit`` times
in a row, gives the next turn a notice; its next call finalizes the run (``route_after_tools``
in ``nodes/routes.py``, ``toolLimitFinalize``). State key: ``loop_guard`` (``state.AgentState``:
``limit``, the run's, copied at its start; ``calls``, ``runs``, ``cycle``); event ``loop_detected``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..config.fields import Settings, setting
from ..models.prompts import LOOP_CYCLE_FINALIZE_NOTICE, LOOP_CYCLE_NOTICE, LOOP_FINALIZE_NOTICE, LOOP_NOTICE
from ..models.tokens import unicode_json
from ..runs.events import emit
from ..state import count_of, joined_update, keep, kept_entries
from .base import Policy, ToolTurn


@dataclass(kw_only=True)
class LoopSettings(Settings):
    """Loop detection"""

    loop_limit: int = setting(
        3,
        help="Loop detection: the same tool call (same effect), or a cycle of up to 4 calls, repeated this many "
        "times in a row gives the next turn a notice that the model is repeating itself; its next call "
        "finalizes the run as at the tool limit (no tools, an answer). 0: off.",
        bounds=(0, 1000),
    )


# call_signature's encoders, built once: the same text as ``json.dumps`` with these options.
_args_text = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr).encode

#: A tool's canonical effect (``ToolMeta.canonical``): its arguments mapped to those that decide
#: what the call does (presentation-only arguments dropped, a URL without its fragment...).
Canonical = Callable[[Mapping[str, Any]], Any]


def call_signature(call: Mapping[str, Any], canonical: Canonical | None = None) -> str:
    """A tool call as text: its name and its arguments as canonical JSON (sorted keys), so
    two calls are "the same" exactly when their signatures are equal. ``canonical``: the
    tool's ``ToolMeta.canonical``, applied to the arguments first (a call whose arguments it
    cannot map, or that it fails on, keeps them as they are)."""
    name, args = call.get("name") or "", call.get("args")
    text = None
    if canonical is not None and isinstance(args, Mapping):
        try:
            text = _args_text(canonical(args))
        except Exception:  # a plugin's mapping that fails: the arguments as they are
            text = None
    if text is None:
        text = _args_text(args)
    return unicode_json([name, text])


# -- loop detection (``loop_limit``) ----------------------------------------------------------
# The same call made over and over, or the same few calls in turn (A,B,A,B...), is a cycle of
# period p (1 to LOOP_PERIODS calls). The state keeps the last LOOP_PERIODS signatures
# (``calls``, oldest first) and, for each period p, ``runs[p-1]``: the length of the
# run of calls ending with the last one in which every call equals the one p calls before it
# (counting the p calls that start it). A cycle of p calls made n times in a row is a run of
# n * p; each new call updates the runs with one comparison per period, whatever the limit.

#: The longest cycle of calls loop detection finds (runs_after's common case spells out its 4 runs).
LOOP_PERIODS: Final = 4

_STAGES: Final = ("none", "notice", "finalize")
_PERIODS: Final = tuple(range(1, LOOP_PERIODS + 1))


def loop_limit_of(state: Mapping[str, Any]) -> int:
    """The run's ``loop_limit`` (0: off)."""
    return count_of(kept_entries(state, "loop_guard"), "limit")


def loop_memory(state: Mapping[str, Any]) -> tuple[list[str], list[int]]:
    """The state's last calls and runs (``loop_guard``'s ``calls``, ``runs``); empty for what a run
    would not have written (a state from outside a run)."""
    guard = kept_entries(state, "loop_guard")
    window, runs = guard.get("calls"), guard.get("runs")
    if type(window) is not list:
        return [], []
    try:
        if type(runs) is list and type(sum(runs)) is int:  # (ints only: anything else raises or is no int)
            return window, runs
    except TypeError:
        pass
    return window, []


def runs_after(window: Sequence[str], runs: Sequence[int], signature: str) -> list[int]:
    """The runs after a call with ``signature``, from the previous ``window`` (the last
    signatures, oldest first) and ``runs``."""
    n = len(window)
    if n >= LOOP_PERIODS and len(runs) == LOOP_PERIODS:  # (every turn once the run has made 4 calls)
        a, b, c, d = runs
        w = window[-4:]
        return [
            a + 1 if w[3] == signature else 1,
            b + 1 if w[2] == signature else 2,
            c + 1 if w[1] == signature else 3,
            d + 1 if w[0] == signature else 4,
        ]
    if len(runs) < LOOP_PERIODS:  # (none yet: each run is as long as its period allows)
        runs = [*runs, *_PERIODS[len(runs) :]]
    return [
        runs[p - 1] + 1 if p <= n and window[-p] == signature else p if p <= n else n + 1 for p in _PERIODS
    ]


def window_after(window: Sequence[str], signature: str) -> list[str]:
    """The last calls after a call with ``signature``: the last :data:`LOOP_PERIODS` signatures."""
    return [*window[1 - LOOP_PERIODS :], signature]


def cycle_length(limit: int, period: int) -> int:
    """How many calls in a row make a cycle of ``period`` calls repeated ``limit`` times: a
    cycle of several calls counts from 2 repetitions (one pass of distinct calls is no loop)."""
    return (limit if period == 1 else max(limit, 2)) * period


def loop_stage(runs: Sequence[int], limit: int) -> tuple[Literal["none", "notice", "finalize"], int]:
    """``(stage, period)`` of loop detection (``loop_limit``; 0: off): a cycle of calls (one
    call, or a few in turn) made ``limit`` times in a row earns the next turn a notice; one
    more call of the cycle and the run is finalized like at the tool limit. ``period``: the
    shortest cycle at that stage (0 with "none")."""
    if limit <= 0 or not runs or (runs[0] < limit and max(runs) < 2 * max(limit, 2)):
        return "none", 0  # (the common case at once: no run is long enough for any period)
    notice = 0
    for p, run in enumerate(runs[:LOOP_PERIODS], start=1):
        need = cycle_length(limit, p)
        if run > need:
            return "finalize", p
        if run == need and not notice:
            notice = p
    return ("notice", notice) if notice else ("none", 0)


def past_limit(runs: Sequence[int], limit: int) -> bool:
    """Whether the last call goes beyond the one that finalizes its cycle: such a call of a
    turn is not run (so each call of a cycle runs at most ``limit`` + 1 times in a row)."""
    if limit <= 0 or not runs or (runs[0] <= limit + 1 and max(runs) <= 2 * max(limit, 2) + 1):
        return False  # (the common case at once: no run is past the shortest cycle of any period)
    return any(run > cycle_length(limit, p) + 1 for p, run in enumerate(runs[:LOOP_PERIODS], start=1))


def signature_tool(signature: str) -> str:
    """The tool name in a :func:`call_signature` ("" when none)."""
    try:
        name = json.loads(signature)[0]
    except (ValueError, LookupError, TypeError):
        return ""
    return name if isinstance(name, str) else ""


def cycle_found(
    stage: str, period: int, window: Sequence[str], runs: Sequence[int]
) -> dict[str, Any]:
    """The ``cycle`` (``loop_guard``) of a stage reached: the action, the period, how many times
    the cycle was (begun to be) made, and its tools in the order the cycle started with."""
    run = runs[period - 1]
    last = window[-period:]
    tools = [signature_tool(last[(c - run) % period]) for c in range(period)]
    return {"action": stage, "period": period, "repeats": -(-run // period), "tools": tools}


def stage_rank(stage: str) -> int:
    return _STAGES.index(stage) if stage in _STAGES else 0


def found_cycle(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """The cycle the state's ``loop_guard`` found ({} when none)."""
    cycle = kept_entries(state, "loop_guard").get("cycle")
    return cycle if isinstance(cycle, Mapping) else {}


def loop_limit_reached(state: Mapping[str, Any]) -> bool:
    """A cycle of tool calls was repeated beyond ``loop_limit`` (copied by the resolver)."""
    return loop_limit_of(state) > 0 and found_cycle(state).get("action") == "finalize"


REPEATED = (
    "Not run: the same {tool} call (same arguments) {count} times in a row, alone or in a cycle of calls "
    "made over and over; the result would be the same. Use the results you have, or answer."
)


def loop_notice(cycle: Mapping[str, Any], final: bool = False) -> str:
    """The system-prompt notice of a found ``cycle``: one call repeated, or a cycle of calls."""
    tools, count = list(cycle.get("tools") or []), cycle.get("repeats")
    if len(tools) == 1:
        return (LOOP_FINALIZE_NOTICE if final else LOOP_NOTICE).format(tool=tools[0], count=count)
    template = LOOP_CYCLE_FINALIZE_NOTICE if final else LOOP_CYCLE_NOTICE
    return template.format(period=len(tools), tools=", ".join(map(str, tools)), count=count)


def loop_event(cycle: Mapping[str, Any], limit: int) -> None:
    """The ``loop_detected`` event of a found ``cycle``: ``tool`` (the repeated tool; a cycle's
    tools comma-separated), ``repeats``, ``limit``, ``action``, and the cycle: ``period`` and
    ``cycle``, its tools in order."""
    tools = [str(t) for t in cycle.get("tools") or []]
    emit(
        "loop_detected", tool=", ".join(tools), repeats=cycle.get("repeats"), limit=limit,
        action=cycle.get("action"), period=cycle.get("period"), cycle=tools,
    )  # fmt: skip


Steps = list[tuple[list[str], list[int]]]


def loop_steps(state: Mapping[str, Any], signatures: Sequence[str]) -> Steps:
    """The last calls and the runs (``loop_guard``'s ``calls``, ``runs``) after each call of
    ``signatures``, made after the state's."""
    window, runs = loop_memory(state)
    steps: Steps = []
    for signature in signatures:
        runs = runs_after(window, runs, signature)
        window = window_after(window, signature)
        steps.append((window, runs))
    return steps


def track_repeats(
    state: Mapping[str, Any],
    calls: list[dict[str, Any]],
    signatures: Sequence[str] | None = None,
    steps: Steps | None = None,
) -> dict[str, Any]:
    """Loop detection's state after this turn's ``calls`` (``loop_guard``: the last calls'
    signatures ``calls``, the cycles' ``runs``, the ``cycle`` found).
    A cycle of calls (one call, or a few in turn) made ``loop_limit`` times in a row puts a
    notice in the next turn's system prompt and emits ``loop_detected``; a turn with no cycle
    clears that notice. A call of the turn going past the limit makes the cycle "finalize",
    even when the turn's later calls are others: ``route_after_tools`` finalizes the run.
    ``signatures``: the calls' ``call_signature`` when the caller has them; ``steps``: their
    :func:`loop_steps`, when the caller has those."""
    limit = loop_limit_of(state)
    if signatures is None:
        signatures = [call_signature(c) for c in calls]
    if not signatures:
        return {}
    if steps is None:
        steps = loop_steps(state, signatures)
    window, runs = steps[-1]
    before = found_cycle(state)
    found: dict[str, Any] = {}
    rank, quick = 0, 2 * max(limit, 2)  # (quick: loop_stage's own test for "none", on every call)
    for at, now in steps:
        if limit <= 0 or (now[0] < limit and max(now) < quick):
            continue
        stage, period = loop_stage(now, limit)
        if stage_rank(stage) > rank:  # (the turn's highest stage, where it was first reached)
            rank = stage_rank(stage)
            found = cycle_found(stage, period, at, now)
    guard = kept_entries(state, "loop_guard")
    update: dict[str, Any] = {}  # (only what changed: each entry written is work in a step)
    if window != guard.get("calls") or runs != guard.get("runs") or found != before:
        keep(update, loop_guard={"limit": limit, "calls": window, "runs": runs, "cycle": found})
    if found.get("action") == "notice":
        loop_event(found, limit)
        keep(update, notice=loop_notice(found))
    elif not found and before.get("action") == "notice":
        keep(update, notice="")
    return update


def loop_excess(
    state: Mapping[str, Any],
    calls: list[dict[str, Any]],
    signatures: Sequence[str] | None = None,
    steps: Steps | None = None,
) -> dict[int, int]:
    """Calls of this turn (by ``id()``) that go on with a cycle of calls (nodes/routes.py
    ``loop_stage``) past the call that finalizes it, counting on from the previous turns, each
    with how many times its cycle was (begun to be) made: they are not run, so a run executes
    each call of a cycle at most ``loop_limit`` + 1 times in a row even when a single turn
    repeats it (0: loop detection off). ``signatures``: the calls' ``call_signature`` (at least
    as many) when the caller has them; ``steps``: their :func:`loop_steps`, when it has those."""
    limit = loop_limit_of(state)
    if limit <= 0:
        return {}
    if steps is None:
        if signatures is None:
            signatures = [call_signature(c) for c in calls]
        steps = loop_steps(state, signatures[: len(calls)])
    excess: dict[int, int] = {}
    for call, (_, runs) in zip(calls, steps, strict=False):
        if past_limit(runs, limit):
            excess[id(call)] = max(-(-run // p) for p, run in enumerate(runs, start=1) if run > cycle_length(limit, p))
    return excess


def effect_signature(call: Mapping[str, Any], meta: Any) -> str:
    """:func:`call_signature` of a call by its tool's canonical effect (``meta``: the tool's
    ``ToolMeta``, whose ``canonical`` maps the arguments; None for a call to another name or a
    malformed call: as it is)."""
    canonical = getattr(meta, "canonical", None) if call.get("type") != "invalid_tool_call" else None
    return call_signature(call, canonical)


class LoopGuard(Policy):
    """Loop detection in the tools node: a call that goes on with a cycle past the call that
    finalizes it is not run (its answer says why); after the turn, the state tracks the cycles
    (``loop_guard``; the notice of the next turn). Finalizing the run is ``route_after_tools``'s
    (:func:`loop_limit_reached`)."""

    name = "loop_guard"

    def plan(self, turn: ToolTurn) -> None:
        for call in turn.calls:
            call.notes["signature"] = effect_signature(call.call, call.meta)
        # (a call past the per-turn cap is not a call of the turn; a call a person decided is)
        counted = [c for c in turn.calls if not c.notes.get("over_cap")]
        signatures = [c.notes["signature"] for c in counted]
        steps = loop_steps(turn.state, signatures)
        excess = loop_excess(turn.state, [c.call for c in counted], signatures, steps)
        if len(counted) == len(turn.calls):  # (nearly every turn: tracked after the turn the same way)
            turn.notes_of(self)["steps"] = (signatures, steps)
        for call in counted:
            count = excess.get(id(call.call))
            if count is not None and call.open:
                call.skip(
                    REPEATED.format(tool=call.name, count=count),
                    error="skipped_loop", note=f"skipped: the same call {count} times in a row",
                )

    async def after(self, turn: ToolTurn) -> None:
        signatures = [c.notes["signature"] for c in turn.calls]
        walked, steps = turn.notes_of(self).get("steps") or (None, None)
        known = steps if walked == signatures else None
        tracked = track_repeats(turn.state, [c.call for c in turn.calls], signatures, known)
        turn.update = joined_update(turn.update, tracked)
