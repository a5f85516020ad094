"""Human review of tool calls and questions to the user: the interrupt payloads and the
checking of what a human sends back. Pure functions, except ``ask_until_valid``: the
``langgraph.types.interrupt`` the graphs' nodes call with these payloads.

The formats are LangChain's HITL middleware's, so Agent Chat UI and Studio understand them:

* review request (interrupt value)::

    {"action_requests": [{"name", "args", "description"}],
     "review_configs": [{"action_name", "allowed_decisions": ["approve", "edit", "reject"]}]}

  (``allowed_decisions``: what the run's ``approve`` setting allows for that tool, e.g.
  ``write_file=approve/reject``; by default approve, edit and reject)

* review response (resume value), one decision per request, in order::

    {"decisions": [{"type": "approve"}
                   | {"type": "edit", "edited_action": {"name", "args"}}
                   | {"type": "reject", "message": "..."}
                   | {"type": "respond", "message": "..."}]}

  (``respond``: the person answers in the tool's place; the call does not run and the model
  reads the message as its result). A decision the request does not allow is refused.

* a question (``ask_user``): interrupt value ``{"question": "..."}``; resume value the
  answer as text (or ``{"answer": "..."}``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt

from ..config.checks import APPROVE_SIDE_EFFECTS, DECISIONS, DEFAULT_DECISIONS, approve_rules, approve_tokens
from .events import clip, emit

DESCRIPTION = "Tool execution requires approval\n\nTool: {name}\nArgs: {args}"
REJECTED = "The user rejected the tool call {name!r} (id {id}): {message}"
REJECTED_NO_MESSAGE = "The user rejected the tool call {name!r} (id {id}); it was not run."
MAX_ANSWER_CHARS = 20_000
T = TypeVar("T")


class ReviewError(ValueError):
    """A resume value that does not answer the pending review (wrong shape, count or type)."""


def needs_approval(name: str, approve: str | None, side_effects: bool) -> bool:
    """Whether a call of tool ``name`` waits for a human under the run's ``approve`` setting."""
    tokens = approve_tokens(approve or "none")
    return name in tokens or (side_effects and APPROVE_SIDE_EFFECTS in tokens)


def allowed_decisions(name: str, approve: str | None, side_effects: bool) -> tuple[str, ...]:
    """The decisions a person may take about a call of ``name`` that waits for approval: its own
    entry's in the ``approve`` setting, else the 'side-effects' entry's (a tool with side
    effects), else approve, edit and reject."""
    rules = approve_rules(approve or "none")
    if name in rules:
        return rules[name]
    if side_effects and APPROVE_SIDE_EFFECTS in rules:
        return rules[APPROVE_SIDE_EFFECTS]
    return DEFAULT_DECISIONS


def args_text(args: Any, limit: int = 2000) -> str:
    try:
        text = json.dumps(args, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(args)
    return clip(text, limit)


def review_request(
    calls: Iterable[Mapping[str, Any]], allowed: Iterable[Iterable[str]] | None = None
) -> dict[str, Any]:
    """The interrupt value asking a human to review ``calls`` (each ``{"name", "args"}``);
    ``allowed``: the decisions a person may take about each (default: approve, edit, reject)."""
    calls = list(calls)
    choices = [list(a) for a in allowed] if allowed is not None else [list(DEFAULT_DECISIONS)] * len(calls)
    actions: list[dict[str, Any]] = [
        {
            "name": c.get("name") or "",
            "args": c.get("args") if isinstance(c.get("args"), dict) else {},
            "description": DESCRIPTION.format(name=c.get("name") or "", args=args_text(c.get("args"))),
        }
        for c in calls
    ]
    configs = [
        {"action_name": a["name"], "allowed_decisions": list(c)} for a, c in zip(actions, choices, strict=True)
    ]
    return {"action_requests": actions, "review_configs": configs}


def is_review_request(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("action_requests"), list)


def allowed_of(value: Any) -> list[tuple[str, ...]]:
    """The decisions each action of a review request allows (its ``review_configs``, by position;
    approve, edit and reject where it has none)."""
    configs = value.get("review_configs") if isinstance(value, Mapping) else None
    configs = configs if isinstance(configs, list) else []
    requests = value.get("action_requests") if isinstance(value, Mapping) else None
    out: list[tuple[str, ...]] = []
    for i in range(len(requests) if isinstance(requests, list) else 0):
        config = configs[i] if i < len(configs) and isinstance(configs[i], Mapping) else {}
        chosen = config.get("allowed_decisions")
        out.append(tuple(d for d in chosen if d in DECISIONS) if isinstance(chosen, list) else DEFAULT_DECISIONS)
    return out


def check_decisions(
    resume: Any, requests: list[Mapping[str, Any]], allowed: list[tuple[str, ...]] | None = None
) -> list[dict[str, Any]]:
    """The decisions of a resume value, checked against the ``requests`` they answer:
    ``{"decisions": [...]}`` (a bare list is accepted too), one per request, in order, each of a
    type its request allows (``allowed``, by position; default approve, edit, reject).
    Returns normalized decisions: ``{"type": "approve"}``, ``{"type": "edit", "name",
    "args"}``, ``{"type": "reject", "message"}`` or ``{"type": "respond", "message"}``.
    Anything else is a ``ReviewError``."""
    decisions = resume.get("decisions") if isinstance(resume, Mapping) else resume
    if not isinstance(decisions, list):
        raise ReviewError(
            'The resume value must be {"decisions": [...]} with one decision per pending tool call '
            f"(got {clip(repr(resume), 120)})"
        )
    if len(decisions) != len(requests):
        raise ReviewError(f"{len(requests)} tool call(s) wait for review but {len(decisions)} decision(s) were given")
    out: list[dict[str, Any]] = []
    choices = allowed if allowed is not None else [DEFAULT_DECISIONS] * len(requests)
    for i, (decision, request, ok) in enumerate(zip(decisions, requests, choices, strict=True), start=1):
        kind = decision.get("type") if isinstance(decision, Mapping) else None
        if kind not in ok:
            tool = clip(repr(request.get("name")), 80)
            raise ReviewError(
                f"decision {i}: type must be one of {', '.join(ok)} for {tool} (got {clip(repr(kind), 60)})"
            )
        assert isinstance(decision, Mapping)
        if kind == "approve":
            out.append({"type": "approve"})
        elif kind == "respond":
            said = decision.get("message")
            if not isinstance(said, str):
                raise ReviewError(f'decision {i}: a respond needs a "message": the text the model reads as the result')
            out.append({"type": "respond", "message": clip(said, MAX_ANSWER_CHARS)})
        elif kind == "reject":
            message = decision.get("message")
            if message is not None and not isinstance(message, str):
                raise ReviewError(f"decision {i}: a reject's message must be text")
            out.append({"type": "reject", "message": clip(message or "", MAX_ANSWER_CHARS)})
        else:
            edited = decision.get("edited_action")
            if not isinstance(edited, Mapping) or not isinstance(edited.get("args"), Mapping):
                raise ReviewError(f'decision {i}: an edit needs "edited_action": {{"name", "args": {{...}}}}')
            name = edited.get("name") or request.get("name")
            if name != request.get("name"):
                raise ReviewError(
                    f"decision {i}: an edit may change the arguments of {request.get('name')!r}, not call {name!r}"
                )
            out.append({"type": "edit", "name": name, "args": dict(edited["args"])})
    return out


def ask_until_valid(value: Any, on_pause: Callable[[], Any], check: Callable[[Any], T], *, node: str = "human") -> T:
    """``check(interrupt(value))``; ``on_pause`` runs only when the run actually pauses here
    (not when a resumed node re-runs and gets its resume value back).

    A resume value ``check`` refuses (a ``ReviewError``) does not fail the run: LangGraph
    keeps a task's resume values, so every later resume would replay it and fail again. The
    node asks again instead (the next interrupt of the node, the same value), and the one-line
    error is an ``error`` event of ``node`` when it pauses (so a replay of the bad value stays quiet)."""
    problem = ""
    while True:
        try:
            resume = interrupt(value)
        except GraphInterrupt:
            if problem:
                emit("error", node=node, error=problem)
            on_pause()
            raise
        try:
            return check(resume)
        except ReviewError as exc:
            problem = str(exc)


def rejection_text(name: str, call_id: str, message: str) -> str:
    """The tool result of a rejected call: what the model reads instead of an output."""
    message = (message or "").strip()
    if message:
        return REJECTED.format(name=name, id=call_id, message=message)
    return REJECTED_NO_MESSAGE.format(name=name, id=call_id)


def question_request(question: str) -> dict[str, Any]:
    """The interrupt value of ``ask_user``."""
    return {"question": question}


def is_question(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("question"), str) and "action_requests" not in value


def answer_of(resume: Any) -> str:
    """The user's answer from a resume value: text, or ``{"answer": text}``."""
    if isinstance(resume, Mapping):
        resume = resume.get("answer", resume.get("text"))
    if not isinstance(resume, str):
        got = clip(repr(resume), 120)
        raise ReviewError(f'The answer to a question must be text or {{"answer": text}} (got {got})')
    return clip(resume, MAX_ANSWER_CHARS)
