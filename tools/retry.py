"""Which tool failures are worth another attempt.

The planner retries a step (``retries`` in the plan) only when the failure can
change on its own: a timeout, a dropped or refused connection, or an exception
that says so. A deterministic failure (a ``ZeroDivisionError``, a ``ToolError``,
invalid arguments) fails the same way every time, so it is never retried.

Plugin authors mark a transient failure by raising :class:`RetryableToolError`,
or any exception whose ``retryable`` attribute is true; ``retryable = False``
forbids retries even for a connection error.
"""

from __future__ import annotations

import httpx


class RetryableToolError(Exception):
    """A tool failure that may not happen again (rate limit, busy service, flaky network)."""

    retryable = True


# Failures of the transport itself: the same call may succeed a moment later.
TRANSIENT: tuple[type[BaseException], ...] = (
    TimeoutError,  # also asyncio.TimeoutError
    ConnectionError,  # refused, reset, aborted, broken pipe
    httpx.TimeoutException,
    httpx.NetworkError,  # connect / read / write / close errors
)


def is_retryable(exc: BaseException) -> bool:
    """True when ``exc`` (or the exception it was raised from) is a transient failure."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        explicit = getattr(current, "retryable", None)
        if isinstance(explicit, bool):
            return explicit
        if isinstance(current, TRANSIENT):
            return True
        current = current.__cause__  # only an explicit ``raise ... from exc``
    return False
