"""What a run did, collected from its event stream (:class:`RunSummary`): its tool calls,
its steps and its model usage, for every graph.

* the agent loop (and a team's or a fleet worker's agents): one ``tool_call`` event per call,
  its ``tool_result`` gives the outcome (a call a person answered - ``ask_user`` - or rejected
  is one too: its ``tool_call`` has ``reviewed``, the decision);
* the planner (also inside the dual graph): a step is a tool call made ``attempts`` times,
  reported by one ``step_result`` event carrying ``tool``;
* steps: every ``step_result`` - a planner step, a fleet worker, a dual execution.
"""

from __future__ import annotations

from typing import Any


class RunSummary:
    """Collects what a run did, from its event stream."""

    def __init__(self) -> None:
        #: ``{"id", "name", "args", "ok", "error"}`` per call; a planner step's also has ``step``,
        #: ``attempts`` (each attempt is a tool execution) and ``status``.
        self.tool_calls: list[dict[str, Any]] = []
        #: ``{"step", "ok", "status", "agent"}`` per finished step of any graph.
        self.steps: list[dict[str, Any]] = []
        #: What the ``usage`` events counted (cached input tokens: those the provider reported).
        self.usage = {
            "input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "model_calls": 0, "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        }
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
        elif kind == "step_result":
            self._add_step(ev)
        elif kind == "usage":
            self.usage["model_calls"] += 1
            for k in ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens"):
                self.usage[k] += _count(ev.get(k))

    def _add_step(self, ev: dict) -> None:
        status = ev.get("status") or ("ok" if ev.get("ok") else "failed")
        self.steps.append(
            {"step": ev.get("step"), "ok": bool(ev.get("ok")), "status": status, "agent": ev.get("agent")}
        )
        attempts = int(ev.get("attempts") or 0)
        if ev.get("tool") and attempts:  # a planner step that ran its tool (skipped steps never did)
            self.tool_calls.append({
                "id": ev.get("step"), "name": ev.get("tool"), "args": ev.get("args"), "ok": bool(ev.get("ok")),
                "error": ev.get("error"), "step": ev.get("step"), "attempts": attempts, "status": status,
            })

    @property
    def tool_executions(self) -> int:
        """Tool calls seen: one per agent tool call (answered or rejected ones too), every attempt
        of a planner step."""
        return sum(int(t.get("attempts") or 1) for t in self.tool_calls)


def _count(value: Any) -> int:
    """A token count of an event (anything else: 0)."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0
