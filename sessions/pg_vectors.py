"""Vectors sent to pgvector as its own text literal.

``AsyncPostgresStore`` passes each embedding as a query parameter (``%s::vector`` in a search,
the ``embedding`` column in a put). A plain list of floats goes out as a Postgres ``float8[]``:
psycopg writes the array element by element in Python, and the server parses the array and casts
it to ``vector``. That cost ~1 ms a vector here, and a search sends its vector twice. The store's
embeddings here return :class:`PgVector` lists instead, which psycopg writes as pgvector's
literal ``[x,y,...]`` with no declared type, so the server reads them straight as the column's
or the cast's type. Nothing else changes: a ``PgVector`` is a ``list`` of the same floats, and
``repr`` of a float round-trips (pgvector reads it back as the same single-precision value).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base.embed import ensure_embeddings
from psycopg.adapt import Dumper


class PgVector(list[float]):
    """One embedding, written to Postgres as pgvector's text literal."""

    @classmethod
    def of(cls, values: Iterable[Any]) -> PgVector:
        return cls(map(float, values))  # (NumPy scalars would repr as np.float32(...))


class PgVectorDumper(Dumper):
    """``PgVector`` -> ``[x,y,...]``, of unknown type: the server infers ``vector`` from the cast or column."""

    oid = 0

    def dump(self, obj: PgVector) -> bytes:
        return ("[" + ",".join(map(repr, obj)) + "]").encode()


def register_vectors(conn: Any) -> None:
    """Write :class:`PgVector` values on ``conn`` as pgvector literals (each pool connection)."""
    conn.adapters.register_dumper(PgVector, PgVectorDumper)


class PgVectorEmbeddings(Embeddings):
    """``inner``'s vectors as :class:`PgVector` lists (``inner``: anything ``index["embed"]``
    may be, as LangGraph's ``ensure_embeddings`` takes it)."""

    def __init__(self, inner: Any) -> None:
        self.inner: Embeddings = ensure_embeddings(inner)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return _vectors(self.inner.embed_documents(texts))

    def embed_query(self, text: str) -> list[float]:
        return PgVector.of(self.inner.embed_query(text))

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return _vectors(await self.inner.aembed_documents(texts))

    async def aembed_query(self, text: str) -> list[float]:
        return PgVector.of(await self.inner.aembed_query(text))


def _vectors(vectors: Sequence[Iterable[Any]]) -> list[list[float]]:
    return [PgVector.of(v) for v in vectors]
