"""How the CLI shows a run: one line per event (:func:`format_event`) and what the run
did, collected from its events (:class:`RunSummary`)."""

from __future__ import annotations

from .lines import event_line, short

__all__ = ["RunSummary", "format_event", "short"]


def format_event(ev: dict) -> str | None:
    """The event's line (cli/lines.py); a child agent's events (``agent``: its id, e.g.
    ``checker-1a2b3c4d``, or a fleet worker's ``w1``) are prefixed with ``[<id>]`` on each of
    their lines, so a sub-agent's work reads apart from its caller's."""
    line = event_line(ev)
    agent = ev.get("agent")
    if line is None or not agent or ev.get("event") == "sub_agent":
        return line
    return "\n".join(f"  [{agent}] {part[2:] if part.startswith('  ') else part}" for part in line.splitlines())


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
