"""Tool retry: a call whose failure may not repeat (a timeout, a connection error, a
``RetryableToolError``) is tried again with exponential backoff and jitter; every attempt
spends the tool budget (``tools/retry.py``, ``nodes/tools.py``)."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

from ..config.fields import Settings, setting
from ..runs.events import emit, preview
from .base import Outcome, Policy, Run, ToolTurn, TurnCall

#: The first wait before a retry, doubled for each further one up to the most.
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 30.0
#: Failures another attempt cannot fix, whatever the outcome says.
NOT_RETRIED = frozenset({"invalid_json", "unknown_tool", "invalid_args", "args_too_large"})


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


def backoff_delay(attempt: int, base_s: float = BACKOFF_BASE_S, max_s: float = BACKOFF_MAX_S) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): base, 2*base, 4*base..."""
    return min(max_s, base_s * (2 ** max(0, attempt - 1)))


def jittered(delay: float) -> float:
    """``delay`` spread over its upper half, so callers that failed together retry apart."""
    return delay * random.uniform(0.5, 1.0)


def call_retries(meta: Any, ctx: Any) -> int:
    """Extra attempts of a call: the tool's ``ToolMeta.retries`` when set, else the run's ``tool_retries``."""
    return int(getattr(meta, "retries", 0) or getattr(ctx, "tool_retries", 0) or 0)


class ToolRetry(Policy):
    """Runs a call again after a failure that may not repeat (``outcome.retryable``: a timeout,
    a connection error, a ``RetryableToolError``) up to its retries, with exponential backoff and
    jitter, each attempt taken from the run's tool budget (``turn.extra_attempt``: when it grants
    none, the failure says so); a ``tool_retry`` event each."""

    name = "tool_retry"

    def __init__(self, backoff_base_s: float = BACKOFF_BASE_S) -> None:
        self.backoff_base_s = backoff_base_s

    async def call(self, turn: ToolTurn, call: TurnCall, run: Run) -> Outcome:
        outcome = await run()
        retries: int | None = None  # looked up at the first retryable failure
        attempt = 1
        while not outcome.ok and outcome.error not in NOT_RETRIED and outcome.retryable:
            if retries is None:
                retries = call_retries(call.meta, turn.ctx)
            if attempt > retries:
                break
            if not turn.extra_attempt():
                outcome.content += f" (not retried: tool budget exhausted, max_tool_calls={turn.ctx.max_tool_calls})"
                break
            delay = jittered(backoff_delay(attempt, self.backoff_base_s))
            emit(
                "tool_retry", id=call.call.get("id"), name=call.name, attempt=attempt + 1, of=retries + 1,
                error=outcome.error, delay_s=round(delay, 3), preview=preview(outcome.content),
            )  # fmt: skip
            await asyncio.sleep(delay)
            attempt += 1
            outcome = await run()
        return outcome
