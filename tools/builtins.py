"""The built-in tools and the default registry (built-ins + plugins)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import BaseTool
from .calculator import calculator
from .files import list_files, read_file, write_file
from .memory_tools import MEMORY_TOOLS
from .registry import ToolMeta, ToolRegistry
from .safe_fs import plugins_folder
from .web import browse_url, web_search

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


def default_plugins_folder() -> Path | None:
    """``$SMART_AGENT_PLUGINS`` (resolved), or None: folder plugins load only from a
    folder the user configured explicitly - never implicitly from the data folder or
    the current folder, where a file tool or a checked-out repository could plant one."""
    return plugins_folder()


def default_registry(*, plugins_folder: str | Path | None = None, entry_points: bool = True) -> ToolRegistry:
    """A new registry with the built-in tools, entry-point plugins and folder plugins.

    Plugins load after the built-ins, so a plugin tool with a built-in's name
    replaces it. ``plugins_folder`` defaults to ``$SMART_AGENT_PLUGINS``; without it no
    folder plugins load (the file tools refuse that folder).
    """
    registry = ToolRegistry()
    for tool, meta in BUILTIN_TOOLS:
        registry.register(tool, meta)
    if entry_points:
        registry.load_entry_points()
    folder = plugins_folder if plugins_folder is not None else default_plugins_folder()
    if folder is not None:
        registry.load_folder(folder)
    return registry
