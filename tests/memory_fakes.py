"""Deterministic embeddings for memory tests that need exact control of cosines."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

DIM = 16


def unit(*components: float, dim: int = DIM) -> list[float]:
    v = np.zeros(dim, dtype="float64")
    v[: len(components)] = components
    return (v / np.linalg.norm(v)).tolist()


def hashed(text: str, dim: int = DIM) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


class TableEmbeddings(Embeddings):
    """Vectors from a table (exact cosines), a hashed random unit vector otherwise."""

    def __init__(self, table: dict[str, list[float]] | None = None, dim: int = DIM) -> None:
        self.table = dict(table or {})
        self.dim = dim
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self.table.get(t) or hashed(t, self.dim) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture(scope="session")
def local_model():
    """The real all-MiniLM-L6-v2, loaded once per test session (~8 s; cached process-wide)."""
    from smart_agent.memory.embeddings import load_embeddings

    emb = load_embeddings("local")
    emb.embed_query("warm up")
    return emb


@pytest.fixture
def fake_memory(tmp_path):
    """A FaissMemoryStore in the test's folder with table embeddings (exact cosines, no model)."""
    from smart_agent.memory.store import FaissMemoryStore

    store = FaissMemoryStore(tmp_path / "mem", embeddings=TableEmbeddings())
    yield store
    store.close()


@pytest.fixture
def fake_store(tmp_path):
    """``make(table=None, **kw)``: a FaissMemoryStore in the test's folder with table embeddings
    (a new folder per call); every one made is closed after the test."""
    from smart_agent.memory.store import FaissMemoryStore

    stores = []

    def make(table=None, **kw):
        s = FaissMemoryStore(tmp_path / f"store{len(stores)}", embeddings=TableEmbeddings(table), **kw)
        stores.append(s)
        return s

    yield make
    for s in stores:
        s.close()


class Clock:
    """A settable clock (``now=`` of the store's ranking): ``t`` seconds."""

    def __init__(self, t: float = 1_700_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def clustered(n: int, queries: int, dim: int = 16, seed: int = 3) -> dict[str, list[float]]:
    """Vectors around 24 centres (memories on a few topics), the texts ``fact i`` and ``question q``."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(24, dim))
    v = centres[rng.integers(0, 24, size=n + queries)] + rng.normal(scale=0.45, size=(n + queries, dim))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    names = [f"fact {i}" for i in range(n)] + [f"question {q}" for q in range(queries)]
    return {t: row.tolist() for t, row in zip(names, v, strict=True)}


def exact_top(table: dict[str, list[float]], n: int, query: str, k: int) -> list[str]:
    vecs = np.array([table[f"fact {i}"] for i in range(n)])
    sims = vecs @ np.array(table[query])
    return [f"k{i}" for i in np.argsort(-sims)[:k]]
