"""Small LangChain tools (and a registry of one) and a chunk aggregator shared by the scripted-server and
ScriptedChatModel tests (tests/graph/test_scripted_server.py, tests/unit/testing/test_fake_models.py)."""

from __future__ import annotations

import random

from langchain_core.tools import tool

from smart_agent.tools.registry import ToolRegistry


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return str(eval(expression, {"__builtins__": {}}, {}))  # test-only


@tool
def write_file(path: str, content: str) -> str:
    """Write text to a file."""
    return f"wrote {len(content)} characters to {path}"


def aggregate(chunks):
    agg = None
    for c in chunks:
        agg = c if agg is None else agg + c
    return agg


def big_echo_registry(size: int = 1400) -> ToolRegistry:
    """A registry with one tool, ``fetch(key)``: about ``size`` characters of words, the same for
    one key (the context-management and budget tests fill a conversation with it)."""

    @tool
    def fetch(key: str) -> str:
        """Fetch a record by key."""
        rnd = random.Random(key)
        return f"record {key}: " + " ".join(rnd.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(size // 6))

    reg = ToolRegistry()
    reg.register(fetch)
    return reg
