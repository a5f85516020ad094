"""One run at a time on a thread, across processes.

Every run reads the thread's latest checkpoint when it starts and appends its own
checkpoints after it. Two runs that start together on the same thread both fork from
the same checkpoint, and the thread's head ends up being one of them: the other run's
turn (its tool exchanges and answer) is no longer part of the thread. ``thread_lock``
serializes them: the second run waits until the first has finished, then starts from
the first run's last checkpoint.

- SQLite (the default): an ``fcntl.flock`` on ``$SMART_AGENT_HOME/locks/<sha256>.lock``
  (with ``SMART_AGENT_DB=/path/file.sqlite``: ``/path/file.sqlite.locks/<sha256>.lock``).
  The kernel releases it when the process ends, even on a crash.
- Postgres (``SMART_AGENT_DB=postgresql://...``): a session-level advisory lock, held on
  a connection of its own for the run; the server releases it when that connection ends.

The wait is bounded: ``SMART_AGENT_THREAD_LOCK_TIMEOUT`` seconds (default 300). After
that the run is refused with ``ThreadBusyError`` before anything is written.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from ..config import settings
from .store import PG_LOCK_NAMESPACE, connect_postgres, is_postgres

DEFAULT_TIMEOUT_S = 300.0
TIMEOUT_ENV = settings.THREAD_LOCK_TIMEOUT_ENV
_POLL_MIN_S, _POLL_MAX_S = 0.02, 0.25


class ThreadBusyError(RuntimeError):
    """Another run held the thread for longer than the lock timeout."""


def lock_timeout(value: float | str | None = None) -> float:
    """The wait bound: ``value``, else ``$SMART_AGENT_THREAD_LOCK_TIMEOUT``, else 300 s."""
    raw = value if value is not None else settings.thread_lock_timeout() or DEFAULT_TIMEOUT_S
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, got {raw!r}") from None
    if not (0 <= seconds <= 86_400):  # also refuses nan
        raise ValueError(f"{TIMEOUT_ENV} must be between 0 and 86400 seconds, got {raw!r}")
    return seconds


def lock_path(thread_id: str, url: str | None = None, home: Path | None = None) -> Path:
    """The lock file of ``thread_id`` for the SQLite database at ``url`` (or the default one)."""
    from .store import data_home

    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    if url:
        db = Path(url).expanduser()
        folder = db.parent / f"{db.name}.locks"
    else:
        folder = (home or data_home()) / "locks"
    return folder / f"{digest}.lock"


def _busy(thread_id: str, timeout_s: float) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is busy: another run on it did not finish within {timeout_s:g} s "
        f"(set {TIMEOUT_ENV} to wait longer); nothing was written"
    )


async def _poll(try_once, thread_id: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    delay = _POLL_MIN_S
    while not await try_once():
        left = deadline - time.monotonic()
        if left <= 0:
            raise _busy(thread_id, timeout_s)
        await asyncio.sleep(min(delay, left))
        delay = min(delay * 2, _POLL_MAX_S)


@asynccontextmanager
async def _file_lock(thread_id: str, path: Path, timeout_s: float) -> AsyncIterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        async def try_once() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False

        await _poll(try_once, thread_id, timeout_s)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@asynccontextmanager
async def _pg_lock(thread_id: str, url: str, timeout_s: float) -> AsyncIterator[None]:
    async with await connect_postgres(url) as conn:
        async def try_once() -> bool:
            cur = await conn.execute(
                "SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS ok", (PG_LOCK_NAMESPACE, thread_id)
            )
            row = await cur.fetchone()
            return bool(row and row["ok"])

        await _poll(try_once, thread_id, timeout_s)
        try:
            yield
        finally:
            if not conn.closed:
                await conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (PG_LOCK_NAMESPACE, thread_id))


@asynccontextmanager
async def thread_lock(
    thread_id: str,
    url: str | None = None,
    home: Path | None = None,
    timeout_s: float | None = None,
) -> AsyncIterator[None]:
    """Hold the thread's run lock for the ``async with`` block (see the module docstring).

    ``url`` and ``home`` select the database as ``sessions.open_checkpointer`` does
    (default: ``$SMART_AGENT_DB``, else SQLite in ``$SMART_AGENT_HOME``). Waits at most
    ``timeout_s`` (default: ``lock_timeout()``), then raises ``ThreadBusyError``.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("thread_lock needs a non-empty thread id")
    seconds = lock_timeout(timeout_s)
    url = url or settings.database_url()
    if is_postgres(url):
        lock = _pg_lock(thread_id, url, seconds)
    else:
        lock = _file_lock(thread_id, lock_path(thread_id, url, home), seconds)
    async with lock:
        yield
