"""A folder plugin that counts its loads: each execution of its module appends a line to
the file named by $COUNTER (the plugins-load-once tests, unit and e2e). A pytest plugin
(tests/conftest.py): the ``counting_plugin`` fixture is available everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

COUNTING_PLUGIN = '''
import os

from langchain_core.tools import tool

with open(os.environ["COUNTER"], "a") as f:
    f.write("loaded\\n")


@tool
def counted(text: str) -> str:
    """Echo the text."""
    return text


TOOLS = [counted]
'''


@pytest.fixture
def counting_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The counter file of a plugin folder configured through SMART_AGENT_PLUGINS (set in
    this process's environment, so processes started afterwards inherit it)."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "counted.py").write_text(COUNTING_PLUGIN)
    counter = tmp_path / "loads.txt"
    monkeypatch.setenv("SMART_AGENT_PLUGINS", str(tmp_path / "plugins"))
    monkeypatch.setenv("COUNTER", str(counter))
    return counter


def loads(counter: Path) -> int:
    """How many times the counting plugin was executed."""
    return counter.read_text().count("loaded") if counter.exists() else 0
