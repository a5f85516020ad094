"""The built-in tools and the default registry (built-ins + plugins)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import BaseTool
from smart_agent.sessions import data_home
from smart_agent.tools.calculator import calculator
from smart_agent.tools.files import list_files, read_file, write_file
from smart_agent.tools.memory_tools import MEMORY_TOOLS
from smart_agent.tools.registry import ToolMeta, ToolRegistry
from smart_agent.tools.web import browse_url, web_search

__all__ = ["BUILTIN_TOOLS", "default_plugins_folder", "default_registry"]

BUILTIN_TOOLS: list[tuple[BaseTool, ToolMeta]] = [
    (calculator, ToolMeta(tags=("math",))),
    (read_file, ToolMeta(tags=("files",))),
    (list_files, ToolMeta(tags=("files",))),
    (write_file, ToolMeta(side_effects=True, tags=("files",))),
    (browse_url, ToolMeta(timeout_s=30, retries=1, tags=("web",))),
    (web_search, ToolMeta(timeout_s=20, tags=("web",))),
    *MEMORY_TOOLS,  # offered only while the run's memory is on (nodes/agent.py)
]


def default_plugins_folder() -> Path:
    return data_home() / "plugins"


def default_registry(*, plugins_folder: str | Path | None = None, entry_points: bool = True) -> ToolRegistry:
    """A new registry with the built-in tools, entry-point plugins and folder plugins.

    Plugins load after the built-ins, so a plugin tool with a built-in's name
    replaces it. ``plugins_folder`` defaults to ``$SMART_AGENT_HOME/plugins``.
    """
    registry = ToolRegistry()
    for tool, meta in BUILTIN_TOOLS:
        registry.register(tool, meta)
    if entry_points:
        registry.load_entry_points()
    registry.load_folder(plugins_folder if plugins_folder is not None else default_plugins_folder())
    return registry
