"""Every state schema of smart-agent, with its reducers.

``InputState`` is what callers pass in; ``AgentState`` is what the agent loop keeps.
Large tool outputs never ride in ``messages``: see ``archive`` (context management).
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class InputState(TypedDict, total=False):
    """What a caller passes: a task string, messages, or both (the task is appended)."""

    messages: Annotated[list[AnyMessage], add_messages]
    task: str


class OutputState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    answer: str


class AgentState(InputState, total=False):
    """State of the agent loop graph."""

    answer: str
    # Tool executions in the current run (reset by the resolver at each run start).
    tool_calls_made: int
    # Set by toolLimitFinalize: the next agent turn is offered no tools.
    finalize: bool
    # Model turns in the current run.
    turns: int
    # Later features add their keys below this line.
