"""The built-in tools and the default registry (built-ins + plugins)."""

from __future__ import annotations

import threading
from pathlib import Path

from langchain_core.tools import BaseTool

from .ask import ASK_TAG, ask_user
from .calculator import calculator
from .file_edit import edit_file
from .file_search import glob_files, grep_files
from .files import list_files, read_effect, read_file, write_file
from .memory_tools import MEMORY_TOOLS
from .registry import ToolMeta, ToolRegistry, keeping
from .safe_fs import plugins_folder
from .web import browse_effect, browse_url, web_search

__all__ = ["BUILTIN_TOOLS", "builtin_meta", "default_plugins_folder", "default_registry", "plugin_tools"]

# ``canonical``: what decides a call's effect, for loop detection (nodes/routes.py): only the
# tool's own arguments (an unknown one is ignored by the tool), missing ones as their defaults,
# without those that only shape the answer (how many characters or results are shown).
BUILTIN_TOOLS: list[tuple[BaseTool, ToolMeta]] = [
    (calculator, ToolMeta(tags=("math",), canonical=keeping("expression"))),
    (read_file, ToolMeta(tags=("files",), canonical=read_effect)),
    (list_files, ToolMeta(tags=("files",), canonical=keeping("path", defaults={"path": "."}))),
    (write_file, ToolMeta(side_effects=True, tags=("files",), canonical=keeping("path", "content"))),
    (edit_file, ToolMeta(
        side_effects=True, tags=("files",),
        canonical=keeping("path", "old", "new", "replace_all", defaults={"replace_all": False}),
    )),
    (glob_files, ToolMeta(tags=("files",), canonical=keeping("pattern", "path", defaults={"path": "."}))),
    (grep_files, ToolMeta(
        tags=("files",),
        canonical=keeping("pattern", "path", "glob", "ignore_case", defaults={"path": ".", "ignore_case": False}),
    )),  # (max_results: how many lines are shown)
    (browse_url, ToolMeta(timeout_s=30, retries=1, tags=("web",), canonical=browse_effect)),
    (web_search, ToolMeta(timeout_s=20, tags=("web",), canonical=keeping("query"))),  # (num_results: shown)
    (ask_user, ToolMeta(tags=(ASK_TAG,))),  # offered only while the run's ask_user is on (nodes/agent.py)
    *MEMORY_TOOLS,  # offered only while the run's memory is on (nodes/agent.py)
]


def builtin_meta(tool: BaseTool) -> ToolMeta | None:
    """The metadata of ``tool`` when it is one of the built-in tool objects (a caller's list
    of tools may hold them: they keep their side effects, timeouts and tags), else None."""
    return next((meta for t, meta in BUILTIN_TOOLS if t is tool), None)


def default_plugins_folder() -> Path | None:
    """``$SMART_AGENT_PLUGINS`` (resolved), or None: folder plugins load only from a
    folder the user configured explicitly - never implicitly from the data folder or
    the current folder, where a file tool or a checked-out repository could plant one."""
    return plugins_folder()


def default_registry(*, plugins_folder: str | Path | None = None, entry_points: bool = True) -> ToolRegistry:
    """A new registry with the built-in tools, entry-point plugins and folder plugins.

    Plugins load after the built-ins, so a plugin tool with a built-in's name
    replaces it. ``plugins_folder`` defaults to ``$SMART_AGENT_PLUGINS`` (read now);
    without it no folder plugins load (the file tools refuse that folder). Inside a run
    that opened MCP sessions it also holds their tools (``run_tools.py``).

    Plugins load on first use: the registry holds them as a pending step that runs the
    first time its tools are read, so building (or importing) a graph runs no plugin code.
    Each plugin source loads once per process (:func:`plugin_tools`), however many
    registries - graphs, the CLI's ``--tools`` check - ask for it.
    """
    registry = ToolRegistry().offer_run_tools(["*"])  # and every MCP tool of the run (run_tools.py)
    for tool, meta in BUILTIN_TOOLS:
        registry.register(tool, meta)
    folder = plugins_folder if plugins_folder is not None else default_plugins_folder()
    if entry_points or folder is not None:
        key = str(Path(folder).resolve()) if folder is not None else None
        registry.defer(lambda r: _add_plugins(r, key, entry_points))
    return registry


_PLUGINS: dict[str | None, list[tuple[BaseTool, ToolMeta]]] = {}
_PLUGINS_LOCK = threading.RLock()  # a plugin may itself ask for a registry


def plugin_tools(folder: str | None = None) -> list[tuple[BaseTool, ToolMeta]]:
    """The tools of one plugin source with their metadata, in load order: the ``*.py``
    files of ``folder``, or the installed entry points when ``folder`` is None. Loaded
    the first time, then cached for the life of the process."""
    with _PLUGINS_LOCK:
        if folder not in _PLUGINS:
            loaded = ToolRegistry()
            if folder is None:
                loaded.load_entry_points()
            else:
                loaded.load_folder(folder)
            _PLUGINS[folder] = [(loaded.get(name), loaded.meta(name)) for name in loaded.names()]
        return _PLUGINS[folder]


def _add_plugins(registry: ToolRegistry, folder: str | None, entry_points: bool) -> None:
    sources = ([plugin_tools(None)] if entry_points else []) + ([plugin_tools(folder)] if folder is not None else [])
    for tools in sources:
        for tool, meta in tools:
            registry.register(tool, meta, replace=True)
