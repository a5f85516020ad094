"""The CLI's status line (cli/live.py, a terminal's live display) counts what runs.

Before: with 6 tools running it said "<tool> running (+6 more)": the ``tools`` node's own
activity ("running tools"), which holds the calls, counted as one more of them. Now the line
names the latest call and the 5 others.
"""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from smart_agent.cli import live
from smart_agent.cli.summary import RunSummary

pytestmark = pytest.mark.unit


def shown(activities) -> str:
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=False).print(live._Status(activities))
    return out.getvalue().strip()


def test_six_tools_running_are_one_and_five_more():
    display = live.LiveLines(io.StringIO(), RunSummary())
    try:
        display.on_progress("tasks", {"id": "t1", "name": "tools", "input": {}})
        for i in range(6):
            display.on_event({"event": "tool_call", "id": f"c{i}", "name": f"tool{i}", "args": {}})
        assert "tool5 running (+5 more) · " in shown(display.activities)
        display.on_event({"event": "tool_result", "id": "c5", "name": "tool5", "ok": True, "preview": ""})
        assert "tool4 running (+4 more) · " in shown(display.activities)
        for i in range(5):
            display.on_event({"event": "tool_result", "id": f"c{i}", "name": f"tool{i}", "ok": True, "preview": ""})
        line = shown(display.activities)  # the calls are done, the node's activity is left
        assert "running tools · " in line and "more" not in line
    finally:
        display.close()


def test_status_text_counts_the_others():
    now = time.monotonic()
    one = {"task:a": ("waiting for the model", now - 2)}
    assert live.status_text(one, now) == "waiting for the model · 2.0 s"
    two_nodes = {"task:a": ("the model is planning", now), "task:b": ("recalling memories", now)}
    assert live.status_text(two_nodes, now) == "recalling memories (+1 more) · 0.0 s"
    steps = {"task:x": ("running a plan", now), "step::1": ("step 1: a", now), "step::2": ("step 2: b", now)}
    assert live.status_text(steps, now) == "step 2: b (+1 more) · 0.0 s"
