"""What a policy is: one concern of the agent loop, with its settings, state keys, hooks and events.

A policy module holds its concern whole: the settings class that declares its context fields
(``config/fields.py``), the state keys it reads and writes, and a :class:`Policy` whose hooks
the loop's nodes run. The ``tools`` node (``nodes/tools.py``) is a short runner of the tool
hooks, for every model turn that calls tools:

1. :meth:`Policy.plan` - in the order of :data:`policies.TOOL_POLICIES`, before any call runs:
   a policy may answer a call instead of running it (``call.answer``: too many in the turn, past
   the tool budget, a loop, a person's rejection), give it an outcome without running it
   (``call.refuse``: arguments too large), let it run free of the budget, or write state.
2. :meth:`Policy.call` - around each call that runs, the first policy outermost (a retry).
3. :meth:`Policy.after` - in order, once every call ran: counters, loop tracking, the archive.

A user's LangChain middleware runs in the same turn (``policies/hooks.py``): its
``wrap_tool_call`` layers wrap each call's execution, outside the policies' own ``call`` hooks.

Policies are core code: what they need of the tools and the registry (a call's ``ToolMeta``,
whether it updates the state) the runner puts on each :class:`TurnCall`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, ToolMessage

__all__ = ["Outcome", "Policy", "ToolTurn", "TurnCall", "policy_hooks"]

#: A call's outcome (``tools/invoke.py`` ``ToolOutcome``: ``ok``, ``content``, ``error``,
#: ``retryable``, ``to_message()``...): what the runner and a ``call`` hook pass on.
Outcome = Any
Run = Callable[[], Awaitable[Outcome]]


@dataclass(eq=False)
class TurnCall:
    """One tool call of a model turn, as the tools node plans and runs it.

    ``meta``: its tool's ``ToolMeta`` (None for a name no tool has, or a malformed call);
    ``updates_state``: its tool returns a state update (such calls run one at a time, last).
    A policy sets ``answer`` (the call does not run; the message is its result, ``events``
    are emitted for it), ``refusal`` (an outcome given instead of running it: the call counts as
    made) or ``free`` (it runs without spending the tool budget). ``outcome``: after it ran."""

    call: dict[str, Any]
    meta: Any = None
    updates_state: bool = False
    free: bool = False
    answer: ToolMessage | None = None
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    refusal: tuple[str, str, Any] | None = None  # (what the model reads, error, the arguments its event shows)
    outcome: Outcome = None
    notes: dict[str, Any] = field(default_factory=dict)  # what a policy keeps of the call for later hooks

    @property
    def id(self) -> str:
        return self.call.get("id") or ""

    @property
    def name(self) -> str:
        return self.call.get("name") or ""

    @property
    def malformed(self) -> bool:
        return self.call.get("type") == "invalid_tool_call"

    @property
    def open(self) -> bool:
        """Not answered by a policy: it runs (or is refused) in this turn."""
        return self.answer is None

    def refuse(self, content: str, error: str, shown_args: Any) -> None:
        """Give the call an error outcome instead of running it (it still counts as a call made);
        its ``tool_call`` event shows ``shown_args``."""
        self.refusal = (content, error, shown_args)

    def skip(self, content: str, *, error: str, note: str) -> None:
        """Answer the call without running it: an error result the model reads, and one
        ``tool_result`` event (``note``: its short preview)."""
        self.answer = ToolMessage(content=content, tool_call_id=self.id, name=self.call.get("name"), status="error")
        self.events = [("tool_result", {
            "id": self.call.get("id"), "name": self.call.get("name"), "ok": False, "error": error,
            "duration_s": 0.0, "preview": note,
        })]  # fmt: skip


@dataclass(eq=False)
class ToolTurn:
    """The tool calls of one model turn and what the turn writes to the state.

    ``message``: the AI message that made the calls (``replacement``: the same message as the
    turn keeps it in the history - fewer calls, shrunk arguments - when a policy changed it);
    ``calls``: the calls the turn answers, in order; ``update``: the state keys the policies
    write; ``meter``: the run's usage meter (``models/usage.py``: the shared tool budget).
    ``extra_attempt``: takes one more execution of a call from the run's tool budget (a retry;
    a middleware calling its handler again), False when the budget has none left."""

    state: Mapping[str, Any]
    ctx: Any
    meter: Any
    message: AIMessage | None
    calls: list[TurnCall]
    replacement: AIMessage | None = None
    update: dict[str, Any] = field(default_factory=dict)
    extra_attempt: Callable[[], bool] = lambda: True
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def notes_of(self, policy: Policy) -> dict[str, Any]:
        """What ``policy`` keeps of this turn between its hooks."""
        return self.notes.setdefault(policy.name, {})

    def open_calls(self) -> list[TurnCall]:
        return [c for c in self.calls if c.answer is None]


class Policy:
    """A concern of the loop. Override the hooks it needs; the runner calls only those."""

    #: Its name in events and errors.
    name: ClassVar[str] = "policy"

    def plan(self, turn: ToolTurn) -> None:
        """Before any call of the turn runs."""

    async def call(self, turn: ToolTurn, call: TurnCall, run: Run) -> Outcome:
        """Around one call's execution: ``await run()`` runs it (again, for a retry)."""
        return await run()

    async def after(self, turn: ToolTurn) -> None:
        """After every call of the turn ran."""


def policy_hooks(policies: list[Policy], hook: str) -> list[Policy]:
    """The policies that implement ``hook`` (their own, not :class:`Policy`'s)."""
    base = getattr(Policy, hook)
    return [p for p in policies if getattr(type(p), hook) is not base]


def last_ai_message(messages: list[Any]) -> tuple[AIMessage | None, set[str]]:
    """The last AI message of ``messages`` and the ids of the tool calls already answered after it
    (a middleware's ``after_model`` may answer some: those do not run)."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message, answered
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
    return None, answered
