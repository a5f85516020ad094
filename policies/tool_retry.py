"""Tool retry: a call whose failure may not repeat (a timeout, a connection error, a
``RetryableToolError``) is tried again with exponential backoff and jitter; every attempt
spends the tool budget (``tools/retry.py``, ``nodes/tools.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class ToolRetrySettings(Settings):
    """Tool retry"""

    tool_retries: int = setting(
        0,
        help="Extra attempts of a tool call whose failure may not repeat (a timeout, a connection error, a "
        "RetryableToolError), with exponential backoff; a tool's own ToolMeta.retries wins when set. Each "
        "attempt counts against max_tool_calls.",
        bounds=(0, 10),
        client="lower",
    )
