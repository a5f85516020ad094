"""Sub-agents: the ``sub_agent`` tool and an agents file's sub-agents run child agent loops,
within a nesting depth and a number at once (``tools/agents.py``, ``graphs/sub_agent.py``);
``start_sub_agent`` / ``check_sub_agent`` / ``cancel_sub_agent`` run them in the background
(``runs/background.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class SubAgentToolSettings(Settings):
    """Sub-agent tools"""

    sub_agent_tools: bool = setting(
        False,
        help="Offer the agent loop the sub-agent tools: sub_agent (a child agent with a fresh context, its "
        "answer returned) and start_sub_agent / check_sub_agent / cancel_sub_agent (the same child in the "
        "background while the agent goes on). Children share the run's budgets, nest at most max_agent_depth "
        "deep and cannot ask a person. Off by default: each child multiplies a run's model calls.",
        flag="--sub-agents",
        client="off",
    )


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
        help="sub_agent tool: child agents running at once (per nesting level), background ones included.",
        bounds=(1, 64),
        client="lower",
    )
