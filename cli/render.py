"""How the CLI shows a run: one line per event (:func:`format_event`) and what the run
did, collected from its events (:class:`RunSummary`)."""

from __future__ import annotations

import json
from typing import Any

from ..events import clip


def short(value: Any, n: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return clip(text, n)


def format_event(ev: dict) -> str | None:
    """The event's line; a child agent's events (``agent``: its id, e.g. ``checker-1a2b3c4d``) are
    prefixed with ``[<id>]`` so a sub-agent's work reads apart from its caller's."""
    line = _event_line(ev)
    agent = ev.get("agent")
    if line is None or not agent or ev.get("event") == "sub_agent":
        return line
    return f"  [{agent}] {line.lstrip()}"


def _event_line(ev: dict) -> str | None:
    kind = ev.get("event")
    if kind == "tool_call":
        args = ev.get("args") or {}
        shown = ", ".join(f"{k}={short(v, 60)}" for k, v in args.items()) if isinstance(args, dict) else short(args)
        return f"  → {ev.get('name')}({shown})"
    if kind == "tool_result":
        status = "ok" if ev.get("ok") else f"error[{ev.get('error')}]"
        ms = float(ev.get("duration_s") or 0) * 1000
        return f"  ← {ev.get('name')} {status} {ms:.0f} ms: {short(ev.get('preview', ''))}"
    if kind == "tool_retry":
        return (
            f"  ↻ {ev.get('name')} failed ({ev.get('error')}): attempt {ev.get('attempt')} of {ev.get('of')} "
            f"in {float(ev.get('delay_s') or 0):.1f} s"
        )
    if kind == "model_fallback":
        return f"  ↻ model {ev.get('from')} failed ({short(ev.get('error', ''))}): trying {ev.get('to')}"
    if kind == "usage":
        return (
            f"  · model turn {ev.get('turn', '?')}: {ev.get('input_tokens', 0)} tokens in, "
            f"{ev.get('output_tokens', 0)} out"
        )
    if kind == "budget" and ev.get("action") == "finalize":
        used, limit = ev.get("consumed") or {}, ev.get("limit") or {}
        what = {
            "model_calls": f"{used.get('model_calls', 0)} of {limit.get('model_calls')} model calls",
            "tokens": f"{used.get('input_tokens', 0) + used.get('output_tokens', 0)} of {limit.get('tokens')} tokens",
            "cost": f"${float(used.get('cost_usd') or 0):.4f} of ${float(limit.get('cost_usd') or 0):.4f}",
        }.get(str(ev.get("reason")), str(ev.get("reason")))
        return f"  ! budget: {what} used: the next model call must answer"
    if kind == "budget":  # one per model call: shown as the run goes only when asked (--json has them all)
        return None
    if kind == "tool_limit":
        return f"  ! tool-call limit reached ({ev.get('limit')}): the next turn must answer"
    if kind == "loop_detected":
        then = "the next turn must answer" if ev.get("action") == "finalize" else "the model is told so"
        return (
            f"  ! loop detected: {ev.get('tool')} called {ev.get('repeats')} times in a row with the same "
            f"arguments: {then}"
        )
    if kind == "final_answer":
        return None  # printed once at the end
    if kind in ("approval_requested", "approval", "question", "answer"):
        return _review_line(ev)
    if kind == "summarization":
        if ev.get("action") == "archive":
            return f"  ⇣ archived {ev.get('tool')} output ({ev.get('chars')} chars) as {ev.get('execution_id')}"
        return (
            f"  ⇣ context {ev.get('action')}: {ev.get('tokens_before')} → {ev.get('tokens_after')} tokens"
            + (f" ({ev.get('strategy')}, {ev.get('compacted_messages')} messages)" if ev.get("strategy") else "")
        )
    if kind == "plan" and "subtasks" in ev:  # fleet
        return "  ☰ fleet: " + "; ".join(
            f"{t.get('id')}: {short(t.get('task', ''), 60)}" for t in ev.get("subtasks") or []
        )
    if kind == "plan":
        todos = ev.get("todos") or []
        done = sum(1 for t in todos if t.get("status") == "done")
        return (
            f"  ☰ plan: {done}/{len(todos)} done (+{len(ev.get('added') or [])} ~{len(ev.get('updated') or [])} "
            f"-{len(ev.get('removed') or [])})"
        )
    if kind == "step_start":  # planner steps, fleet workers, dual executions
        what = ev.get("tool") or ev.get("task") or ev.get("objective") or ""
        return f"  ▶ {ev.get('step')} {short(what, 80)}"
    if kind == "step_result":
        detail = ev.get("preview") if ev.get("ok") else ev.get("error")
        tries = f" after {ev['attempts']} attempts" if (ev.get("attempts") or 0) > 1 else ""
        ms = float(ev.get("duration_s") or 0) * 1000
        status = ev.get("status") or ("ok" if ev.get("ok") else "failed")
        return (
            f"  {'✓' if ev.get('ok') else '✗'} {ev.get('step')} {status}{tries} {ms:.0f} ms: {short(detail or '', 120)}"
        )
    if kind in ("memory_recall", "memory_write") and ev.get("memory") == "off":
        return f"  ◇ memory off: {ev.get('error')}"  # the memory file was refused (one line naming it)
    if kind == "memory_recall" and "error" not in ev:
        warning = f" ⚠ {ev['warning']}" if ev.get("warning") else ""  # damaged rows skipped
        return f"  ◇ memory: recalled {ev.get('count', 0)} ({ev.get('took_ms', 0):.0f} ms){warning}"
    if kind == "memory_write" and "error" not in ev and "skipped" not in ev:
        return f"  ◇ memory: {ev.get('action', 'stored')} {ev.get('key', '')} ({ev.get('took_ms', 0):.0f} ms)"
    payload = {k: v for k, v in ev.items() if k not in {"event", "ts"}}
    return f"  [{kind}] {short(payload, 200)}"


def _call_text(call: Any, step: bool) -> str:
    call = call if isinstance(call, dict) else {}
    label = f"{call.get('id')}: " if step else ""  # a planner step's id
    return f"{label}{call.get('name')}({short(call.get('args') or {}, 80)})"


def _review_line(ev: dict) -> str:
    """Human review (nodes/human.py, the planner's step review) and ask_user questions."""
    kind = ev.get("event")
    if kind == "approval_requested":  # the agent's calls (calls) or the planner's steps (requests)
        steps = "requests" in ev
        calls = ev.get("requests") if steps else ev.get("calls")
        return "  ⏸ waiting for approval: " + "; ".join(_call_text(c, steps) for c in calls or [])
    if kind == "approval":
        decision, name = ev.get("decision"), ev.get("name")
        if decision == "reject":
            return f"  ✗ rejected {name}" + (f": {short(ev['message'])}" if ev.get("message") else "")
        if decision == "edit":
            return f"  ✎ approved {name} with edited arguments {short(ev.get('args') or {}, 100)}"
        return f"  ✓ approved {name}"
    if kind == "question":
        return f"  ? the agent asks: {short(ev.get('question', ''), 200)}"
    return f"  ↳ answered: {short(ev.get('preview', ev.get('answer', '')), 120)}"


class RunSummary:
    """Collects what a run did, from its event stream."""

    def __init__(self) -> None:
        self.tool_calls: list[dict] = []
        self.usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "model_calls": 0}
        self.events: list[dict] = []
        self._by_id: dict[str, dict] = {}

    def add(self, ev: dict) -> None:
        self.events.append(ev)
        kind = ev.get("event")
        if kind == "tool_call":
            rec = {"id": ev.get("id"), "name": ev.get("name"), "args": ev.get("args"), "ok": None}
            self.tool_calls.append(rec)
            if ev.get("id"):
                self._by_id[ev["id"]] = rec
        elif kind == "tool_result" and ev.get("id") in self._by_id:
            self._by_id[ev["id"]].update(ok=ev.get("ok"), error=ev.get("error"))
        elif kind == "usage":
            self.usage["model_calls"] += 1
            for k in ("input_tokens", "output_tokens", "total_tokens"):
                self.usage[k] += int(ev.get(k) or 0)
