"""The tool-output archive: a long tool output reaches the conversation as a short view and an
execution id; ``get_tool_response`` reads the full text back (``sessions/archive.py``,
``history/budget.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class ArchiveSettings(Settings):
    """Tool-output archive"""

    archive_threshold_chars: int = setting(
        2000,
        help="Tool outputs longer than this many characters are archived: the conversation gets a short view "
        "(head, tail, size) and an execution id, and get_tool_response reads the full text back. 0 turns "
        "archiving off.",
        bounds=(0, 10_000_000),
        flag="--archive-chars",
    )
