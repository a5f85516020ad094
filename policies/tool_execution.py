"""How the tools of a turn run: which tools are offered, how many run at once, how long one
may take (the tools node, ``nodes/tools.py``; ``tools/invoke.py`` runs one call)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.checks import comma_names
from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class ToolExecutionSettings(Settings):
    """Tools"""

    tools: list[str] | None = setting(
        None,
        help="Names of registry tools to offer (see `smart-agent tools`). Empty/None offers every registered "
        "tool.",
        parse=comma_names("tool name", "leave --tools out to offer every tool"),
        metavar="A,B",
    )
    max_parallel_tools: int = setting(
        5, help="How many tool calls of one model turn run concurrently.", bounds=(1, 64), client="lower"
    )
    tool_timeout_s: float = setting(
        60.0,
        help="Default timeout of one tool execution in seconds (a tool's own metadata may set a lower one).",
        bounds=(0.001, 86_400.0),
        client="lower",
    )
