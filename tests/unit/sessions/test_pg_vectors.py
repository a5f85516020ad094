"""Vectors the Postgres store sends as pgvector's own literal (``sessions/pg_vectors.py``)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from psycopg import adapters
from psycopg.adapt import AdaptersMap, PyFormat
from psycopg.types.array import ListDumper

from smart_agent.sessions.pg_vectors import PgVector, PgVectorDumper, PgVectorEmbeddings, register_vectors
from smart_agent.sessions.store import postgres_index


class Twice(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 0.5] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text)), 0.25]


def test_a_vector_is_written_as_pgvectors_literal_with_every_digit():
    values = np.array([0.1, -1e-8, 3.0, 1 / 3], dtype=np.float32)
    vec = PgVector.of(values)  # NumPy scalars become floats: no "np.float32(...)" in the literal
    assert all(type(x) is float for x in vec)
    text = PgVectorDumper(PgVector).dump(vec).decode()
    assert text.startswith("[") and text.endswith("]")
    parsed = np.array([float(x) for x in text[1:-1].split(",")], dtype=np.float32)
    assert parsed.tobytes() == values.tobytes()  # the same single-precision values come back
    assert PgVectorDumper.oid == 0  # no declared type: the server reads it as the column's or the cast's


def test_an_embedding_that_is_not_numbers_is_refused_before_any_query():
    hostile = PgVectorEmbeddings(lambda texts: [["0.1", "1]::vector; DROP TABLE store; --"] for _ in texts])
    with pytest.raises(ValueError):
        hostile.embed_documents(["x"])
    assert PgVector.of(["0.5", 2]) == [0.5, 2.0]  # (numbers as text are numbers)


def test_only_our_type_gets_the_literal_and_only_on_connections_that_registered_it():
    conn = SimpleNamespace(adapters=AdaptersMap(adapters))  # a copy of the global map, as a connection has
    assert conn.adapters.get_dumper(PgVector, PyFormat.AUTO) is not PgVectorDumper
    register_vectors(conn)
    assert conn.adapters.get_dumper(PgVector, PyFormat.AUTO) is PgVectorDumper
    assert issubclass(conn.adapters.get_dumper(list, PyFormat.AUTO), ListDumper)  # plain lists as before
    assert adapters.get_dumper(PgVector, PyFormat.AUTO) is not PgVectorDumper  # the global map untouched


def test_the_store_index_wraps_every_kind_of_embed_and_keeps_the_vectors():
    for embed in (Twice(), lambda texts: [[float(len(t)), 0.5] for t in texts]):
        wrapped = postgres_index({"dims": 2, "embed": embed, "fields": ["text"]})["embed"]
        assert isinstance(wrapped, PgVectorEmbeddings)
        docs = wrapped.embed_documents(["ab", "abc"])
        assert docs == [[2.0, 0.5], [3.0, 0.5]] and all(type(v) is PgVector for v in docs)
        adocs = asyncio.run(wrapped.aembed_documents(["ab"]))
        assert adocs == [[2.0, 0.5]] and type(adocs[0]) is PgVector
    wrapped = PgVectorEmbeddings(Twice())
    assert type(wrapped.embed_query("abcd")) is PgVector and wrapped.embed_query("abcd") == [4.0, 0.25]
    assert asyncio.run(wrapped.aembed_query("a")) == [1.0, 0.25]
    assert "embed" not in postgres_index({"dims": 2, "fields": ["text"]})  # no embed: nothing to wrap
