"""Helpers of the planner budget attack tests: a CLI environment with the counting plugin."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import cli_env

PLUGIN = Path(__file__).with_name("planner_budget_plugin.py")


def submit(plan):
    return {"tool_calls": [{"name": "submit_plan", "arguments": plan}]}


def plugin_env(server, tmp_path, isolated_home):
    """(CLI environment with the counting plugin tools, the marker file they append to)."""
    plugins = isolated_home / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    shutil.copy(PLUGIN, plugins / "budget_tools.py")
    markers = tmp_path / "markers"
    markers.mkdir()
    return cli_env(server, SMART_AGENT_PLUGINS=plugins, E_MARKERS=markers), markers / "calls.log"


def executions(log: Path) -> list[str]:
    """One line per real tool execution, in start order."""
    return log.read_text().splitlines() if log.exists() else []
