"""A tool plugin for the planner budget attack tests, copied into a plugins folder.

Every tool appends one line to ``$E_MARKERS/calls.log`` when it starts, so a test
counts real executions (in another process, across a SIGKILL) from the file alone.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from langchain_core.tools import tool

from smart_agent.tools.registry import ToolMeta


def _mark(line: str) -> None:
    log = Path(os.environ["E_MARKERS"]) / "calls.log"
    with log.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@tool
def count(label: str) -> str:
    """Record one execution and return the label."""
    _mark(f"count:{label}")
    return label


@tool
async def slow(label: str, seconds: float) -> str:
    """Record the start of one execution, wait, return the label."""
    _mark(f"slow:{label}")
    await asyncio.sleep(seconds)
    return label


@tool
def net(label: str) -> str:
    """Record one execution and fail like a dropped connection."""
    _mark(f"net:{label}")
    raise ConnectionResetError("connection reset by peer")


TOOLS = [(count, ToolMeta(retries=0)), (slow, ToolMeta(retries=0)), (net, ToolMeta(retries=0))]
