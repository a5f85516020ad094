"""Tool-call limits per tool, per run and per thread, with the semantics of LangChain's
``ToolCallLimitMiddleware``: ``--tool-call-limit [TOOL:]run=N/thread=M/exit=continue|error|end``
(repeatable; no TOOL or ``*``: every tool).

They apply to a model reply, before anything runs or waits for a person (the ``agent`` node,
:func:`limit_reply`). Each limit counts the reply's calls of its tool in order; a call that
would pass the run's or the thread's limit is blocked: answered "Tool call limit exceeded. Do
not call ... again." without running. The run count includes blocked calls (they were tried);
the thread count only those allowed. Then by ``exit``:

* ``continue`` (default): the other calls run; the model reads the refusals and goes on;
* ``end``: none of the reply's calls runs and the run ends with a message saying which limit
  was reached (no structured answer is made);
* ``error``: the run fails with LangChain's ``ToolCallLimitExceededError``.

State keys: ``run_tool_calls`` (reset at each run start) and ``thread_tool_calls`` (kept across
the thread's runs), each limit's key (its tool, ``*`` for all) -> calls counted. Event
``tool_call_limit`` (tool, limit, count, exit) when a limit blocks calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain_core.messages import AIMessage, ToolMessage

from ..config.checks import TOOL_NAME
from ..config.fields import Settings, setting
from ..runs.events import emit
from ..state import keep, kept_entries

EXITS = ("continue", "error", "end")
ALL = "*"
BLOCKED = "Tool call limit exceeded. Do not call '{tool}' again."
BLOCKED_ALL = "Tool call limit exceeded. Do not make additional tool calls."
NOT_RUN = "Not run: the run stopped at a tool call limit."


@dataclass(frozen=True)
class CallLimit:
    """One limit: ``tool`` (None: every tool), ``run``/``thread`` (None: none), ``exit``."""

    tool: str | None
    run: int | None = None
    thread: int | None = None
    exit: str = "continue"

    @property
    def key(self) -> str:
        return self.tool or ALL

    def exceeded(self, thread: int, run: int) -> bool:
        """Whether one more call passes a limit."""
        return (self.thread is not None and thread + 1 > self.thread) or (self.run is not None and run + 1 > self.run)

    def matches(self, call: Mapping[str, Any]) -> bool:
        return self.tool is None or call.get("name") == self.tool


def parse_limit(text: str) -> CallLimit:
    """``[TOOL:]run=N/thread=M/exit=E`` as a :class:`CallLimit` (``ValueError``: why not)."""
    spec = text.strip()
    tool, colon, rest = spec.partition(":") if ":" in spec else ("", "", spec)
    tool = tool.strip()
    if colon and tool != ALL and not TOOL_NAME.fullmatch(tool):
        raise ValueError(f"{text!r}: TOOL must be a tool name or *")
    values: dict[str, str] = {}
    for part in (p.strip() for p in rest.split("/")):
        key, eq, value = part.partition("=")
        if not eq or key not in ("run", "thread", "exit") or key in values:
            raise ValueError(f"{text!r} is not [TOOL:]run=N/thread=N/exit=continue|error|end (e.g. calculator:run=1)")
        values[key] = value.strip()
    limits: dict[str, int | None] = {}
    for key in ("run", "thread"):
        if key in values:
            if not values[key].isdigit() or int(values[key]) < 1:
                raise ValueError(f"{text!r}: {key} must be a whole number of at least 1")
            limits[key] = int(values[key])
    if not limits:
        raise ValueError(f"{text!r}: give run=N, thread=N or both")
    exit_ = values.get("exit", "continue")
    if exit_ not in EXITS:
        raise ValueError(f"{text!r}: exit must be one of {', '.join(EXITS)}")
    run, thread = limits.get("run"), limits.get("thread")
    if run is not None and thread is not None and run > thread:
        raise ValueError(f"{text!r}: run ({run}) cannot exceed thread ({thread})")
    return CallLimit(None if tool in ("", ALL) else tool, run, thread, exit_)


def limit_rule(text: str) -> str:
    """``--tool-call-limit``: one limit, checked."""
    parse_limit(text)
    return text.strip()


def _limits_valid(rules: Sequence[str]) -> bool:
    try:
        return all(isinstance(r, str) and parse_limit(r) for r in rules)
    except ValueError:
        return False


@dataclass(kw_only=True)
class ToolCallLimitSettings(Settings):
    """Tool-call limits"""

    tool_call_limits: list[str] = setting(
        [],
        help="Limits on the calls of one tool (or of all: no TOOL, or *) per run and per thread, as LangChain's "
        "ToolCallLimitMiddleware has them: [TOOL:]run=N/thread=N/exit=E, exit continue (the calls over the "
        "limit are answered 'limit exceeded', the rest run), end (the run stops) or error (the run fails).",
        rule=(_limits_valid, "a list of [TOOL:]run=N/thread=N/exit=continue|error|end limits"),
        parse=limit_rule,
        repeat=True,
        metavar="[TOOL:]run=N/thread=N/exit=E",
        flag="--tool-call-limit",
        client="superset",
    )


def call_limits_of(ctx: Any) -> list[CallLimit]:
    """The run's tool-call limits (``tool_call_limits``), parsed."""
    return [parse_limit(r) for r in getattr(ctx, "tool_call_limits", None) or ()]


def _final_text(limit: CallLimit, thread: int, run: int) -> str:
    what = f"'{limit.tool}' tool" if limit.tool else "Tool"
    parts = []
    if limit.thread is not None and thread > limit.thread:
        parts.append(f"thread limit exceeded ({thread}/{limit.thread} calls)")
    if limit.run is not None and run > limit.run:
        parts.append(f"run limit exceeded ({run}/{limit.run} calls)")
    return f"{what} call limit reached: {' and '.join(parts)}."


def limit_reply(state: Mapping[str, Any], ctx: Any, reply: AIMessage, calls: list[dict]) -> dict[str, Any]:
    """The state update the run's limits make of a model reply's ``calls`` (none: {}): the
    counts, and the answers of blocked calls (``messages``, after the reply). With ``exit=end``
    every call is answered, the reply's final message and ``answer`` follow, and ``stopped`` is
    set; with ``exit=error``, ``ToolCallLimitExceededError``."""
    limits = call_limits_of(ctx)
    if not limits or not calls:
        return {}
    run_counts = dict(kept_entries(state, "run_tool_calls"))
    thread_counts = dict(kept_entries(state, "thread_tool_calls"))
    blocked: dict[str, CallLimit] = {}  # call id -> the (first) limit that blocked it
    stop: tuple[CallLimit, int, int] | None = None
    for limit in limits:
        thread, run = thread_counts.get(limit.key, 0), run_counts.get(limit.key, 0)
        over = 0
        for call in calls:
            if not limit.matches(call):
                continue
            if limit.exceeded(thread, run):
                over += 1
                blocked.setdefault(call.get("id") or "", limit)
            else:
                thread, run = thread + 1, run + 1
        thread_counts[limit.key], run_counts[limit.key] = thread, run + over
        if over:
            emit("tool_call_limit", tool=limit.tool or ALL, run=run + over, thread=thread, exit=limit.exit,
                 blocked=over)  # fmt: skip
            if limit.exit == "error":
                raise ToolCallLimitExceededError(thread, run + over, limit.thread, limit.run, limit.tool)
            if limit.exit == "end" and stop is None:
                stop = (limit, thread, run + over)
    update: dict[str, Any] = keep({}, run_tool_calls=run_counts, thread_tool_calls=thread_counts)
    answers: list[Any] = []
    for call in calls:
        call_id, name = call.get("id") or "", call.get("name") or ""
        blocker = blocked.get(call_id)
        if blocker is not None:
            text = BLOCKED.format(tool=blocker.tool) if blocker.tool else BLOCKED_ALL
        elif stop is not None:
            text = NOT_RUN
        else:
            continue
        answers.append(ToolMessage(content=text, tool_call_id=call_id, name=name, status="error"))
    if stop is not None:
        final = _final_text(*stop)
        answers.append(AIMessage(content=final))
        keep(update, stopped="tool_call_limit")
        update["answer"] = final
    if answers:
        update["messages"] = answers
    return update
