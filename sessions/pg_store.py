"""The store on Postgres: LangGraph's ``AsyncPostgresStore`` and one query of its own for recall.

``AsyncPostgresStore.asearch`` finds a query's nearest items with one general statement: it
joins the items to their vectors under a namespace *prefix* taken as a ``LIKE`` pattern, keeps
each item's best field, sorts, and refreshes the hits' TTLs. At 100,000 memories, asking for
twice the rows, it needs ``hnsw.ef_search`` 400-1000 to find 0.98 of the exact top 5 (8-15 ms
a search here), and ``LIKE 'memories.ada%'`` also matches another user's
``memories.adam`` (and ``_`` or ``%`` in a label match any character), so a recall must then
drop other namespaces' items from its candidates.

:meth:`MemoryPostgresStore.anearest` asks for exactly what a recall needs: the items of one
namespace nearest to a query, by the pgvector index, at ``hnsw.ef_search`` =
:data:`RECALL_EF_SEARCH` for this query only (``SET LOCAL``; the connections keep
``PG_EF_SEARCH`` for everything else), in one round trip to the server (BEGIN, the setting, the
query and COMMIT in one pipeline), the query vector in pgvector's binary format. When the index
scan leaves fewer rows than asked (a namespace with few items, or a small share of a table many
users fill: pgvector filters the scan's rows by namespace afterwards), the namespace is scanned
exactly instead -- through the table's key, so only its own rows. Measured at 100,000 memories
(``benchmarks/memory_backends.py``): ``docs/benchmarks.md``. Most of a recall's time is then the
index scan in the server, which needs ``shared_buffers`` large enough to hold the vectors and
the index (about 400 MB at 100,000 memories of 384 dimensions); else it reads pages from the OS.

It reads the two tables LangGraph's store writes (``store``: prefix, key, value, created_at,
updated_at; ``store_vectors``: prefix, key, field_name, embedding). Stores it cannot serve the
same way -- a TTL (its reads refresh it), a distance other than cosine, no vector index, a single
connection instead of a pool -- answer through ``asearch``, filtered to the namespace.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import SearchItem
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg import AsyncConnection, AsyncCursor
from psycopg.adapt import Dumper
from psycopg.pq import Format, TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from .pg_vectors import PgVector

__all__ = ["RECALL_EF_SEARCH", "MemoryPostgresStore"]

# Index scan width of a recall's query. At 100,000 memories (benchmarks/memory_backends.py) it
# found 0.996 of the exact top 5 at 300, 0.983-0.991 at 200 (two builds of the index), 0.979 at
# 150; asearch asks for twice the rows and needs 400-1000 for the same. A recall waits seconds
# for the model anyway: the millisecond 300 costs over 200 buys a margin above 0.98.
RECALL_EF_SEARCH = 300


def _nearest_sql(order: str) -> str:
    """A recall's query: the nearest rows of one namespace's vectors by ``order``, each item once
    (its best field), joined to the items.

    ``rows`` and ``limit`` stay parameters: Postgres then plans the statement at each execution
    (custom plans) for the namespace's own share of the table. With them written in, a prepared
    statement gets a generic plan after five executions: no planning (0.3 ms a recall) but a plan
    for a namespace of average size -- with one user holding half of a table and a thousand users
    the rest, the exact scan of the namespace (key order, then a sort), also for that user."""
    return f"""
WITH near AS MATERIALIZED (
    SELECT key, min(embedding <=> %(q)s::vector) AS dist FROM (
        SELECT key, embedding FROM store_vectors WHERE prefix = %(ns)s ORDER BY {order} LIMIT %(rows)s
    ) scan GROUP BY key
)
SELECT near.key, near.dist, s.value, s.created_at, s.updated_at
FROM near JOIN store s ON s.prefix = %(ns)s AND s.key = near.key
ORDER BY near.dist, near.key LIMIT %(limit)s
"""


_NEAREST = _nearest_sql("embedding <=> %(q)s::vector")  # the vector index's own ordering
_EXACT = _nearest_sql("(embedding <=> %(q)s::vector) + 0")  # no index's ordering: every row of the namespace
_SET_EF_SEARCH = f"SET LOCAL hnsw.ef_search = {int(RECALL_EF_SEARCH)}"


class _BinaryVectorDumper(Dumper):
    """A :class:`PgVector` in pgvector's binary format (what its ``vector_recv`` reads: the
    dimensions and a zero as int16, then each value as a float4, big-endian), of no declared type
    like :class:`PgVectorDumper`: the cast in the query makes it a ``vector``. The same float4
    values as the text literal, without formatting 384 floats in Python (0.25 ms) and parsing them
    in the server."""

    oid = 0
    format = Format.BINARY

    def dump(self, obj: PgVector) -> bytes:
        return struct.pack(f">HH{len(obj)}f", len(obj), 0, *obj)


class MemoryPostgresStore(AsyncPostgresStore):
    """``AsyncPostgresStore`` plus :meth:`anearest`, the query a memory recall makes."""

    def _pool(self) -> AsyncConnectionPool[Any] | None:
        """The pool :meth:`anearest` queries through; None when it answers through ``asearch``."""
        config = self.index_config or {}
        served = (
            self.embeddings is not None
            and not self.ttl_config
            and config.get("distance_type", "cosine") == "cosine"
            and config.get("ann_index_config", {}).get("vector_type", "vector") == "vector"
        )
        return self.conn if served and isinstance(self.conn, AsyncConnectionPool) else None

    async def anearest(self, namespace: Sequence[str], query: str, limit: int) -> list[SearchItem]:
        """The ``limit`` items of ``namespace`` (exactly: not the namespaces under it) nearest to
        ``query``, most similar first; ``score``: the cosine similarity of the item's best field."""
        ns = tuple(namespace)
        if limit <= 0:
            return []
        pool = self._pool()
        if pool is None:
            hits = await self.asearch(ns, query=query, limit=limit)
            return [h for h in hits if tuple(h.namespace) == ns]
        assert self.embeddings is not None
        vector = PgVector.of(await self.embeddings.aembed_query(query))
        fields = len((self.index_config or {}).get("fields") or ["$"])
        params = {"q": vector, "ns": ".".join(ns), "rows": limit * max(1, fields), "limit": limit}
        async with pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            cur.adapters.register_dumper(PgVector, _BinaryVectorDumper)  # this cursor's queries only
            await self._execute(conn, cur, _NEAREST, params, _SET_EF_SEARCH)
            rows = await cur.fetchall()
            if len(rows) < limit:
                await self._execute(conn, cur, _EXACT, params)
                rows = await cur.fetchall()
        return [
            SearchItem(namespace=ns, key=row["key"], value=row["value"], created_at=row["created_at"],
                       updated_at=row["updated_at"], score=1.0 - float(row["dist"]))
            for row in rows
        ]

    async def _execute(
        self, conn: AsyncConnection[Any], cur: AsyncCursor[Any], query: str, params: dict[str, Any], *setting: str
    ) -> None:
        """``query`` on ``cur``, after ``setting`` (``SET LOCAL`` statements) in a transaction of
        its own, so the connection keeps its own settings for everything else.

        On an autocommit connection (a LangGraph store's) with libpq's pipeline mode (14+), in one
        round trip to the server: BEGIN, the settings, the query and COMMIT go out together, the
        rows are read once COMMIT is back. (psycopg's ``transaction()`` in a pipeline waits for
        the server at BEGIN, at the query, at COMMIT and at the pipeline's end: four.) Otherwise
        through ``transaction()``."""
        if not (conn.autocommit and self.supports_pipeline):
            async with conn.transaction():
                for statement in setting:
                    await conn.execute(statement)
                await cur.execute(query, params)
            return
        if not setting:
            await cur.execute(query, params)
            return
        try:
            async with conn.pipeline():
                await conn.execute("BEGIN", prepare=False)
                for statement in setting:
                    await conn.execute(statement)
                await cur.execute(query, params)
                await conn.execute("COMMIT", prepare=False)
        except BaseException:
            # An error in the pipeline leaves the transaction failed, one before COMMIT was sent open.
            if conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                await conn.rollback()
            raise
