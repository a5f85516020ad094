"""Calling a tool the way the tools node calls it: a model tool call, the run's ``ToolRuntime``
injected. A pytest plugin (``tests/conftest.py``): the ``rt`` fixture is a runtime whose
workspace is the test's ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from smart_agent.config.context import Context


def make_runtime(workspace: Path | None = None, *, store: Any = None, **context: Any) -> ToolRuntime[Any, Any]:
    """A tool runtime (call id ``c1``) whose context has ``workspace``, when given, and the other
    ``context`` fields; ``store`` is the run's store."""
    if workspace is not None:
        context["workspace"] = str(workspace)
    return ToolRuntime(
        state={}, context=Context(**context), config={}, stream_writer=lambda x: None, tool_call_id="c1", store=store
    )


def call(tool: BaseTool, runtime: ToolRuntime[Any, Any] | None = None, **args: Any) -> ToolMessage:
    """Invoke ``tool`` with a model tool call, injecting ``runtime`` like the tools node does."""
    if runtime is not None:
        args["runtime"] = runtime
    message = tool.invoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "c1" and message.name == tool.name
    return message


def call_text(tool: BaseTool, runtime: ToolRuntime[Any, Any] | None = None, **args: Any) -> str:
    """The text of ``call``'s result (a tool's result is text)."""
    content = call(tool, runtime, **args).content
    assert isinstance(content, str), content
    return content


def function_of(tool: BaseTool) -> Callable[..., Any]:
    """The function a ``@tool`` wraps, to call it directly (LangChain's ``@tool`` is declared to
    return a ``BaseTool``; what it makes of a function is a ``StructuredTool``)."""
    assert isinstance(tool, StructuredTool) and tool.func is not None, tool
    return tool.func


@pytest.fixture
def rt(tmp_path: Path) -> ToolRuntime[Any, Any]:
    return make_runtime(tmp_path)
