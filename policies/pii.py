"""Personal data: emails, card numbers, IP and MAC addresses, URLs, or a pattern of the user's,
found and handled before a model or the thread sees them, with LangChain's ``PIIMiddleware``.

``--pii TYPE:STRATEGY`` (repeatable; types ``email``, ``credit_card``, ``ip``, ``mac_address``,
``url`` or ``NAME=REGEX``; strategies ``redact``, ``mask``, ``hash``, ``block``) applies to the
user's input in the ``resolver``, before any model call and before the thread or memory stores
it (the CLI also applies it to the task before the run starts, so the run's input checkpoint
never holds it). ``--pii-tool-results`` applies it to every tool result as the tools node gets
it, before the thread stores it. ``block`` refuses the input (one line, the CLI exits 2) or
answers the tool call with an error instead of its result. Event ``pii`` (type, strategy, where,
count) for each handling.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ..config.fields import Settings, setting
from ..runs.events import emit
from .base import Outcome, Policy, Run, ToolTurn, TurnCall

BUILT_IN = ("email", "credit_card", "ip", "mac_address", "url")
STRATEGIES = ("redact", "mask", "hash", "block")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
MAX_PATTERN_CHARS = 500


def rule_problem(text: str) -> str | None:
    """Why ``TYPE:STRATEGY`` cannot be a ``pii`` rule (None when it can)."""
    kind, sep, strategy = text.rpartition(":")
    if not sep or not kind:
        return f"{text!r} is not TYPE:STRATEGY (e.g. email:redact)"
    if strategy not in STRATEGIES:
        return f"{text!r}: the strategy must be one of {', '.join(STRATEGIES)}"
    name, eq, pattern = kind.partition("=")
    if not eq:
        return None if kind in BUILT_IN else f"{text!r}: the type must be one of {', '.join(BUILT_IN)} or NAME=REGEX"
    if not _NAME.fullmatch(name):
        return f"{text!r}: a custom type's NAME must be a word (letters, digits, _)"
    if not pattern or len(pattern) > MAX_PATTERN_CHARS:
        return f"{text!r}: the REGEX must have 1 to {MAX_PATTERN_CHARS} characters"
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"{text!r}: the REGEX does not compile ({exc})"
    return None


def _rules_problem(rules: Sequence[str]) -> bool:
    return all(rule_problem(r) is None for r in rules)


def pii_rule(text: str) -> str:
    """``--pii``: one ``TYPE:STRATEGY`` rule, checked."""
    problem = rule_problem(text.strip())
    if problem:
        raise ValueError(problem)
    return text.strip()


@dataclass(kw_only=True)
class PiiSettings(Settings):
    """Personal data (PII)"""

    pii: list[str] = setting(
        [],
        help="Personal data to handle before a model or the thread sees it: TYPE:STRATEGY rules, TYPE one of "
        "email, credit_card, ip, mac_address, url or NAME=REGEX, STRATEGY one of redact, mask, hash, block "
        "(LangChain's PIIMiddleware). Applies to the user's input; pii_tool_results extends it to tool results.",
        rule=(_rules_problem, "a list of TYPE:STRATEGY rules (e.g. email:redact)"),
        parse=pii_rule,
        repeat=True,
        metavar="TYPE:STRATEGY",
    )
    pii_tool_results: bool = setting(
        False, help="Apply the pii rules to every tool result too, before the thread stores it."
    )


class PiiBlocked(ValueError):
    """Input with personal data a ``block`` rule refuses; one line naming the type."""


@functools.lru_cache(maxsize=32)
def middleware_of(rules: tuple[str, ...], tool_results: bool) -> tuple[Any, ...]:
    """LangChain ``PIIMiddleware`` instances for ``rules`` (built once per set of rules)."""
    from langchain.agents.middleware import PIIMiddleware

    out = []
    for rule in rules:
        kind, _, strategy = rule.rpartition(":")
        name, eq, pattern = kind.partition("=")
        out.append(
            PIIMiddleware(
                name, strategy=strategy, detector=pattern if eq else None,  # type: ignore[arg-type]
                apply_to_input=True, apply_to_tool_results=tool_results,
            )
        )  # fmt: skip
    return tuple(out)


def _middleware(ctx: Any, *, tool_results: bool = False) -> tuple[Any, ...]:
    rules = tuple(getattr(ctx, "pii", None) or ())
    if not rules or (tool_results and not getattr(ctx, "pii_tool_results", False)):
        return ()
    return middleware_of(rules, bool(getattr(ctx, "pii_tool_results", False)))


def redact_text(text: str, ctx: Any) -> str:
    """``text`` (a user's input) with the run's ``pii`` rules applied (``PiiBlocked`` for a
    ``block`` rule that finds something)."""
    messages = redact_input([HumanMessage(content=text)], ctx)
    return str(messages[0].content)


def redact_input(messages: Sequence[BaseMessage], ctx: Any) -> list[BaseMessage]:
    """The user's new ``messages`` with the run's ``pii`` rules applied to each human message
    (each as the last user message ``PIIMiddleware`` handles); ``PiiBlocked`` for ``block``."""
    middleware = _middleware(ctx)
    if not middleware:
        return list(messages)
    from langchain.agents.middleware import PIIDetectionError

    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, HumanMessage) and message.content:
            for mw in middleware:
                try:
                    update = mw.before_model({"messages": [message]}, None)
                except PIIDetectionError:
                    raise PiiBlocked(f"the input holds {mw.pii_type} (--pii {mw.pii_type}:block)") from None
                if update:
                    message = update["messages"][-1]
                    emit("pii", type=mw.pii_type, strategy=mw.strategy, where="input")
        out.append(message)
    return out


class PiiToolResults(Policy):
    """Applies the run's ``pii`` rules to each tool result as it comes back (``pii_tool_results``),
    before the thread stores it; ``block``: the result is replaced by an error."""

    name = "pii"

    async def call(self, turn: ToolTurn, call: TurnCall, run: Run) -> Outcome:
        outcome = await run()
        middleware = _middleware(turn.ctx, tool_results=True)
        if not middleware or not outcome.content:
            return outcome
        from langchain.agents.middleware import PIIDetectionError

        asked = AIMessage(content="", tool_calls=[{"name": call.name, "args": {}, "id": call.id or "call"}])
        result = ToolMessage(content=outcome.content, tool_call_id=call.id or "call", name=call.name)
        for mw in middleware:
            try:
                update = mw.before_model({"messages": [asked, result]}, None)
            except PIIDetectionError:
                outcome.content = f"Result withheld: it holds {mw.pii_type} (pii {mw.pii_type}:block)."
                outcome.ok, outcome.error = False, "pii_blocked"
                emit("pii", type=mw.pii_type, strategy=mw.strategy, where="tool_result", tool=call.name)
                return outcome
            if update:
                result = update["messages"][-1]
                emit("pii", type=mw.pii_type, strategy=mw.strategy, where="tool_result", tool=call.name)
        outcome.content = str(result.content)
        return outcome
