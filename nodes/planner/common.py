"""Small helpers shared by the planner nodes (no graph wiring, no model calls of their own)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from smart_agent.messages import message_text
from smart_agent.models import explain_model_error
from smart_agent.tools.registry import ToolRegistry




def usage_of(message: Any) -> dict[str, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return {k: int(usage.get(k) or 0) for k in ("input_tokens", "output_tokens", "total_tokens")}


def task_text(state: dict[str, Any]) -> str:
    """The task of a run: ``task`` if given, else the last human message."""
    task = (state.get("task") or "").strip()
    if task:
        return task
    for message in reversed(state.get("messages") or []):
        if isinstance(message, HumanMessage):
            return message_text(message).strip()
    return ""


def select_registry(registry: ToolRegistry, names: list[str] | None) -> ToolRegistry:
    """The registry restricted to ``names`` (all tools when None/empty)."""
    if not names:
        return registry
    subset = ToolRegistry()
    for tool in registry.tools(names):
        subset.register(tool, registry.meta(tool.name))
    return subset


async def invoke_model(runnable: Any, messages: list[BaseMessage], *, spec: str | None = None) -> Any:
    """Call a chat model (or a runnable built on one); config/reachability errors become ModelConfigError."""
    try:
        return await runnable.ainvoke(messages)
    except Exception as exc:
        explained = explain_model_error(exc, spec)
        if explained is not None:
            raise explained from None
        raise


def as_ai_message(value: Any) -> AIMessage:
    if isinstance(value, AIMessage):
        return value
    return AIMessage(content=message_text(value))


def bind_tools_or_none(model: BaseChatModel, tools: list[Any]) -> Any | None:
    try:
        return model.bind_tools(tools)
    except (NotImplementedError, AttributeError):
        return None
