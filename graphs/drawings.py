"""The Mermaid drawings of the documentation, generated from the graphs themselves.

``README.md`` and ``docs/architecture.md`` hold blocks between ``<!-- mermaid:NAME -->`` and
``<!-- /mermaid:NAME -->`` (NAME: a graph of :data:`graphs.BUILDERS`);
``python -m smart_agent.graphs.drawings README.md docs/architecture.md`` rewrites them with what
LangGraph draws (``smart-agent graph NAME``); ``tests/unit/test_docs.py`` fails when one is stale.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from . import get_builder

BLOCK = re.compile(r"<!-- mermaid:(\w+) -->\n```mermaid\n.*?```\n<!-- /mermaid:\1 -->", re.S)


def drawing(name: str) -> str:
    """Graph ``name`` as LangGraph draws it (the agent loop with the built-in tools only)."""
    kwargs: dict[str, Any] = {}
    if name == "agent":
        from ..tools.registry import ToolRegistry

        kwargs["registry"] = ToolRegistry()  # (no plugin of this machine in the drawing)
    return get_builder(name)(**kwargs).get_graph().draw_mermaid().rstrip()


def redraw(text: str) -> str:
    """``text`` with every ``mermaid:`` block drawn again."""

    def block(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"<!-- mermaid:{name} -->\n```mermaid\n{drawing(name)}\n```\n<!-- /mermaid:{name} -->"

    return BLOCK.sub(block, text)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m smart_agent.graphs.drawings FILE.md [FILE.md ...]")
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            drawn = redraw(f.read())
        with open(path, "w", encoding="utf-8") as f:
            f.write(drawn)
