"""How the CLI shows a run: one line per event (:func:`format_event`); what the run did,
collected from its events, is :class:`RunSummary` (cli/summary.py)."""

from __future__ import annotations

from ..runs.redact import redact_value
from .lines import event_line, short
from .summary import RunSummary

__all__ = ["RunSummary", "format_event", "short"]


def format_event(ev: dict) -> str | None:
    """The event's line (cli/lines.py); a child agent's events (``agent``: its id, e.g.
    ``checker-1a2b3c4d``, or a fleet worker's ``w1``) are prefixed with ``[<id>]`` on each of
    their lines, so a sub-agent's work reads apart from its caller's. Credentials are redacted."""
    # a tool's URL argument or an error may carry a password (redact.py): redacted before the line clips it
    line = event_line(redact_value(ev))
    agent = ev.get("agent")
    if line is None or not agent or ev.get("event") == "sub_agent":
        return line
    return "\n".join(f"  [{agent}] {part[2:] if part.startswith('  ') else part}" for part in line.splitlines())

