"""Sessions: where threads are kept between processes.

The default is an embedded SQLite checkpointer in ``$SMART_AGENT_HOME`` (default
``./.smart-agent``). Set ``SMART_AGENT_DB=postgresql://...`` to scale out on Postgres
(needs ``pip install "smart-agent[postgres]"``): :func:`open_backends` then puts the
threads (``AsyncPostgresSaver``) and the store (``AsyncPostgresStore`` with pgvector:
memory and the tool-output archive) on one connection pool.

A checkpointer does not serialize runs: two runs on one thread at once fork it and one
run's turn is lost. Hold ``smart_agent.sessions.thread_lock.thread_lock(thread_id)`` around each
run (the CLI does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from ..config import settings

DB_ENV = "SMART_AGENT_DB"
# The memory store's vector index on pgvector: HNSW, cosine distance (the memory's vectors are
# normalized). Built with m=32, ef_construction=200: pgvector's defaults (16, 64) found 0.74-0.82
# of the exact top 5 at 100,000 memories even at ef_search 1000; these find 0.98 at ef_search 200
# and 1.0 from 400 (benchmarks/memory_backends.py), for a build about 4x as long. A table set up
# before keeps the index it was built with.
PG_ANN_INDEX: dict[str, Any] = {"kind": "hnsw", "m": 32, "ef_construction": 200}
PG_DISTANCE = "cosine"
# Rows one HNSW index scan returns (pgvector's default: 40, at most 1000). The store filters
# by namespace after the scan, so with many users in one table a user's share of 40 rows is
# often fewer than the 50 candidates a recall asks for; every pool connection sets this, and
# with pgvector 0.8 or later also iterative scans, which go on until the filter is satisfied.
# (A recall's own query sets its own, lower: ``pg_store.RECALL_EF_SEARCH``.)
PG_EF_SEARCH = 1000

# First key of the two-key Postgres advisory locks (the checkpointer's setup here, the
# thread locks in thread_lock.py): keeps these locks apart from other users' locks.
PG_LOCK_NAMESPACE = 0x5A_17_7E_AD & 0x7FFFFFFF


class DatabaseUnavailable(RuntimeError):
    """The database of ``SMART_AGENT_DB`` cannot be reached or cannot hold the tables (one line)."""


def data_home() -> Path:
    """The data folder: ``$SMART_AGENT_HOME`` or ``./.smart-agent`` (sessions, memory,
    archive, plugins). Not resolved here: that reads the file system, and callers run
    on a server's event loop too."""
    return settings.data_home()


def sessions_path(home: Path | None = None) -> Path:
    return (home or data_home()) / "sessions.sqlite"


def is_postgres(url: str | None) -> TypeGuard[str]:
    """``url`` selects Postgres (``postgresql://`` or ``postgres://``)."""
    return url is not None and url.startswith(("postgresql://", "postgres://"))


@dataclass(frozen=True)
class Backends:
    """Where a run keeps its data: ``checkpointer`` (threads) and ``store`` (the LangGraph
    store the graphs are compiled with: memory and the tool-output archive).

    ``store`` is None with SQLite: memory then opens the embedded FAISS store under
    ``$SMART_AGENT_HOME/memory`` on first use and the archive writes files, as before."""

    checkpointer: BaseCheckpointSaver
    store: BaseStore | None = None


def postgres_index(index: Mapping[str, Any]) -> dict[str, Any]:
    """The store's vector index on pgvector: ``index`` (dims, embed, fields) with an HNSW
    index and cosine distance unless ``index`` says otherwise. Its vectors go to the server as
    pgvector's own literal (``sessions/pg_vectors.py``)."""
    out = {"ann_index_config": dict(PG_ANN_INDEX), "distance_type": PG_DISTANCE, **index}
    if out.get("embed") is not None:
        from .pg_vectors import PgVectorEmbeddings

        out["embed"] = PgVectorEmbeddings(out["embed"])
    return out


async def connect_postgres(url: str) -> Any:
    """A psycopg connection for ``url`` (autocommit, rows as dicts); a server that cannot be
    reached is one line, without the URL (it may hold a password)."""
    try:
        from psycopg import AsyncConnection, OperationalError
        from psycopg.rows import dict_row
    except ImportError as exc:
        raise RuntimeError(
            f'{DB_ENV} selects Postgres, but psycopg is not installed: pip install "smart-agent[postgres]"'
        ) from exc
    try:
        return await AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
    except OperationalError as exc:
        reason = " ".join(str(exc).split())
        raise DatabaseUnavailable(f"cannot connect to the Postgres database of {DB_ENV}: {reason}") from None


NO_PGVECTOR = (
    f"the Postgres server of {DB_ENV} has no pgvector extension, which the memory store's vector index needs: "
    "install pgvector there (https://github.com/pgvector/pgvector), or turn memory off (--no-memory, "
    "SMART_AGENT_MEMORY=false)"
)


async def pgvector_version(conn: Any) -> str | None:
    """The pgvector version the database has, or the server could install; None without it."""
    cur = await conn.execute(
        "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
        "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector')) AS v"
    )
    row = await cur.fetchone()
    return row["v"] if row else None


async def _setup_postgres(conn: Any, *parts: Any, wait_s: float = 120.0) -> None:
    """Create or migrate the tables of ``parts`` (saver, store), one process at a time: two
    processes running the migrations at once can both try to create the same table and one
    of them fails. Idempotent: each part records its migrations, a second call runs none.

    The lock is taken on ``conn`` (a connection of its own) and polled with
    ``pg_try_advisory_lock``, never waited for in a statement: a migration's ``CREATE INDEX
    CONCURRENTLY`` waits for every open transaction, and a blocking ``pg_advisory_lock``
    statement in another process is one (a deadlock)."""
    import asyncio
    import time

    from psycopg import Error as PsycopgError

    deadline = time.monotonic() + wait_s
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s, 0) AS ok", (PG_LOCK_NAMESPACE,))
        row = await cur.fetchone()
        if row is not None and row["ok"]:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Postgres tables are being set up by another process for over {wait_s:g} s")
        await asyncio.sleep(0.1)
    try:
        for part in parts:
            try:
                await part.setup()
            except PsycopgError as exc:  # its message spans lines (DETAIL, HINT, CONTEXT): one line
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())
                raise DatabaseUnavailable(f"cannot set up the tables in the database of {DB_ENV}: {reason}") from exc
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s, 0)", (PG_LOCK_NAMESPACE,))


def _hnsw_settings(pgvector_version: str | None) -> list[str]:
    """What every pool connection sets: :data:`PG_EF_SEARCH`, and iterative index scans where
    pgvector has them (0.8+)."""
    out = [f"SET hnsw.ef_search = {PG_EF_SEARCH}"]
    parts = [int(p) if p.isdigit() else 0 for p in (pgvector_version or "0").split(".")[:2]]
    if tuple(parts) >= (0, 8):
        out.append("SET hnsw.iterative_scan = relaxed_order")
    return out


@asynccontextmanager
async def _open_postgres(
    url: str, index: Mapping[str, Any] | None, pool_size: int, also: Sequence[Any] = ()
) -> AsyncIterator[Backends]:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        from .pg_store import MemoryPostgresStore
        from .pg_vectors import register_vectors
    except ImportError as exc:
        raise RuntimeError(
            f"{DB_ENV} selects Postgres, but langgraph-checkpoint-postgres is not installed: "
            'pip install "smart-agent[postgres]"'
        ) from exc

    setup_conn = await connect_postgres(url)  # fails fast, in one line, when the server is not there
    pgvector = await pgvector_version(setup_conn)
    if index and not pgvector:
        await setup_conn.close()
        raise DatabaseUnavailable(NO_PGVECTOR)
    hnsw_settings = _hnsw_settings(pgvector)

    async def configure(conn: Any) -> None:
        register_vectors(conn)
        for statement in hnsw_settings:
            await conn.execute(statement)

    # One pool for the checkpointer and the store (the thread lock holds a connection of its own).
    pool: AsyncConnectionPool = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=pool_size,
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        configure=configure,
    )
    try:
        async with setup_conn:
            await pool.open(wait=True)
            saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]  # a pool of dict-row connections
            store = MemoryPostgresStore(pool, index=postgres_index(index) if index else None)  # type: ignore[arg-type]
            await _setup_postgres(setup_conn, saver, store, *also)
        yield Backends(saver, store)
    finally:
        await pool.close()


@asynccontextmanager
async def open_backends(
    url: str | None = None,
    home: Path | None = None,
    *,
    index: Mapping[str, Any] | None = None,
    pool_size: int | None = None,
) -> AsyncIterator[Backends]:
    """The run's backends from one URL (default ``$SMART_AGENT_DB``):

    - ``postgresql://...``: ``AsyncPostgresSaver`` and ``AsyncPostgresStore`` on one
      ``psycopg_pool.AsyncConnectionPool`` of at most ``pool_size`` connections (default
      ``$SMART_AGENT_DB_POOL_SIZE``, 10); the store has a pgvector index when ``index``
      (``dims``, ``embed``, ``fields``) is given (HNSW, cosine: :func:`postgres_index`).
      Both tables are created or migrated on open, one process at a time; nothing is
      written under ``$SMART_AGENT_HOME``.
    - else SQLite: ``$SMART_AGENT_HOME/sessions.sqlite`` (or the file ``url``) and no store;
      checkpoints are stored zlib-compressed (``checkpoint_serde.CompressedSerializer``).
    """
    url = url or settings.database_url()
    if is_postgres(url):
        async with _open_postgres(url, index, pool_size or settings.db_pool_size()) as backends:
            yield backends
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from .serde import CompressedSerializer

    path = Path(url) if url else sessions_path(home)
    if not url:  # the data folder is ours to create; the folder of a file the user named is not
        path.parent.mkdir(parents=True, exist_ok=True)
    # Checkpoints zlib-compressed (checkpoint_serde.py): the saver keeps each one whole.
    async with aiosqlite.connect(str(path)) as conn:
        yield Backends(AsyncSqliteSaver(conn, serde=CompressedSerializer()))


async def prepare_postgres(url: str, *, index: Mapping[str, Any] | None = None, also: Sequence[Any] = ()) -> None:
    """Create or migrate the tables of the sessions, the store (its vector table when ``index`` is
    given) and of ``also``'s parts (each with an async ``setup()``), one process at a time, then
    close: what ``smart-agent serve`` runs before a replica starts, so replicas starting together
    never race on a table. Unreachable server, no pgvector, failed migration: one line
    (:class:`DatabaseUnavailable`)."""
    async with _open_postgres(url, index, 1, also):
        pass


@asynccontextmanager
async def open_checkpointer(home: Path | None = None, url: str | None = None) -> AsyncIterator[BaseCheckpointSaver]:
    """Yield an async checkpointer: Postgres for ``postgresql://`` URLs, else SQLite
    (``open_backends`` without a store index)."""
    async with open_backends(url, home) as backends:
        yield backends.checkpointer
