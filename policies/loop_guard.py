"""Loop detection: a cycle of 1 to 4 calls with the same effect, repeated ``loop_limit`` times
in a row, gives the next turn a notice; its next call finalizes the run (``nodes/routes.py``,
``nodes/tool_turn.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


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
