"""Sessions: where threads are kept between processes.

The default is an embedded SQLite checkpointer in ``$SMART_AGENT_HOME`` (default
``./.smart-agent``). Set ``SMART_AGENT_DB=postgresql://...`` to use Postgres for
scale-out (needs ``pip install "smart-agent[postgres]"``).

A checkpointer does not serialize runs: two runs on one thread at once fork it and one
run's turn is lost. Hold ``smart_agent.thread_lock.thread_lock(thread_id)`` around each
run (the CLI does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph.checkpoint.base import BaseCheckpointSaver

from . import settings

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

# First key of the two-key Postgres advisory locks (the checkpointer's setup here, the
# thread locks in thread_lock.py): keeps these locks apart from other users' locks.
PG_LOCK_NAMESPACE = 0x5A_17_7E_AD & 0x7FFFFFFF


def data_home() -> Path:
    """The data folder: ``$SMART_AGENT_HOME`` or ``./.smart-agent`` (sessions, memory,
    archive, plugins). Not resolved here: that reads the file system, and callers run
    on a server's event loop too."""
    return settings.data_home()


def sessions_path(home: Path | None = None) -> Path:
    return (home or data_home()) / "sessions.sqlite"


async def _setup_postgres(saver: AsyncPostgresSaver, wait_s: float = 120.0) -> None:
    """Create or migrate the tables, one process at a time: two processes running the
    migrations at once can both try to create the same table and one of them fails.

    The lock is polled with ``pg_try_advisory_lock``, never waited for in a statement: a
    migration's ``CREATE INDEX CONCURRENTLY`` waits for every open transaction, and a
    blocking ``pg_advisory_lock`` statement in another process is one (a deadlock)."""
    import asyncio
    import time

    from psycopg import AsyncConnection

    conn = saver.conn  # from_conn_string: one connection, not a pool
    if not isinstance(conn, AsyncConnection):
        raise TypeError(f"expected a psycopg AsyncConnection, got {type(conn).__name__}")
    deadline = time.monotonic() + wait_s
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s, 0) AS ok", (PG_LOCK_NAMESPACE,))
        row = await cur.fetchone()
        if row is not None and row["ok"]:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the Postgres checkpointer tables are being set up by another process for over {wait_s:g} s"
            )
        await asyncio.sleep(0.1)
    try:
        await saver.setup()
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s, 0)", (PG_LOCK_NAMESPACE,))


@asynccontextmanager
async def open_checkpointer(home: Path | None = None, url: str | None = None) -> AsyncIterator[BaseCheckpointSaver]:
    """Yield an async checkpointer: Postgres for ``postgresql://`` URLs, else SQLite."""
    url = url or settings.database_url()
    if url and url.startswith(("postgresql://", "postgres://")):
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        except ImportError as exc:
            raise RuntimeError(
                "SMART_AGENT_DB selects Postgres, but langgraph-checkpoint-postgres is not installed: "
                'pip install "smart-agent[postgres]"'
            ) from exc
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await _setup_postgres(saver)
            yield saver
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = Path(url) if url else sessions_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver
