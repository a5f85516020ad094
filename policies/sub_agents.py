"""Sub-agents: the ``sub_agent`` tool and an agents file's sub-agents run child agent loops,
within a nesting depth and a number at once (``tools/agents.py``, ``graphs/sub_agent.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class SubAgentSettings(Settings):
    """Sub-agents"""

    max_agent_depth: int = setting(
        3,
        help="sub_agent tool: deepest nesting of child agents; agents at this depth get no sub_agent tool.",
        bounds=(0, 10),
        client="lower",
    )
    max_sub_agents: int = setting(
        2,
        help="sub_agent tool: child agents running at once (per nesting level).",
        bounds=(1, 64),
        client="lower",
    )
