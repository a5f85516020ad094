"""Two small LangChain tools and a chunk aggregator shared by the scripted-server and
ScriptedChatModel tests (tests/graph/test_scripted_server.py, tests/unit/test_scripted_chat_model.py)."""

from __future__ import annotations

from langchain_core.tools import tool


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
