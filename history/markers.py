"""The marker convention: messages the framework writes into a conversation.

Every such message carries ``additional_kwargs["smart_agent"] = {"kind": ...}``
(plus kind-specific fields). Any user message *without* a marker is the user's own;
the run's task is the last of those. Archived texts carry a second key,
``archive.ARCHIVE_KEY``, with their execution id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from ..sessions.archive import ARCHIVE_KEY

MARK = "smart_agent"  # additional_kwargs key of messages the framework writes
SUMMARY_KIND = "summary"  # a compaction summary (nodes/summarize.py)
FEEDBACK_KIND = "output_feedback"  # validation errors sent back by structuredOutput
OMITTED_KIND = "omitted"  # the agent guard's note about dropped messages


def mark_of(message: Any) -> dict[str, Any]:
    """The framework's marker of a message (empty: the message is not the framework's)."""
    value = (getattr(message, "additional_kwargs", None) or {}).get(MARK)
    return value if isinstance(value, dict) else {}


def marker(kind: str, **fields: Any) -> dict[str, dict[str, Any]]:
    """``additional_kwargs`` that mark a message as the framework's, of ``kind``."""
    return {MARK: {"kind": kind, **fields}}


def is_kind(message: Any, kind: str) -> bool:
    return mark_of(message).get("kind") == kind


def is_summary(message: Any) -> bool:
    return isinstance(message, HumanMessage) and is_kind(message, SUMMARY_KIND)


def is_feedback(message: Any) -> bool:
    """A structuredOutput feedback message: the answer goes back to the model."""
    return is_kind(message, FEEDBACK_KIND)


def task_index(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the run's task: the last user message the framework did not write."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, HumanMessage) and not mark_of(m):
            return i
    return None


def archived_meta(message: Any) -> Mapping[str, Any]:
    """``{"execution_id": ..., "chars": ...}`` of an archived message's text (empty: not archived)."""
    value = (getattr(message, "additional_kwargs", None) or {}).get(ARCHIVE_KEY)
    return value if isinstance(value, dict) else {}
