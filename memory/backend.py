"""Long-term memory on any LangGraph ``BaseStore`` with a vector index.

Recall and write go through the ``BaseStore`` API -- ``asearch(namespace, query=..., limit=...)``
and ``aput(..., index=["text"])`` -- followed by this project's own re-ranking (similarity from
the store's score, recency, importance: ``RankingConfig``), consolidation of near-duplicates and
pruning to a per-namespace cap. So they work on the FAISS store (the embedded default), LangGraph's
``InMemoryStore(index=...)``, ``AsyncPostgresStore`` with pgvector and whatever store a LangGraph
server injects. The FAISS store answers the same calls through its own optimized ``recall`` /
``remember`` (one lock around search and write, the FAISS candidates re-ranked in place).

A memory's value: ``text``, ``kind``, ``importance``, ``merges``, free metadata, and the
``created_at`` / ``updated_at`` epoch seconds (a ``BaseStore`` stamps its own times on every put,
so they travel in the value: recency and export/import use them).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import settings
from .integrity import MemoryUnavailable
from .ranking import DEFAULT_IMPORTANCE, RankingConfig, Recalled, WriteResult, importance_of, memory_times

__all__ = [
    "INDEX_FIELDS", "NO_INDEX", "MemoryPolicy", "NoVectorIndex", "forget", "has_vector_index", "index_config",
    "is_memory_store", "list_memories", "local_index", "recall", "remember",
]

NO_INDEX = "memory is off: the store has no vector index (configure store.index in langgraph.json)"
INDEX_FIELDS = ["text"]
DEFAULT_MAX_ITEMS = 10_000
DEFAULT_DEDUPE_THRESHOLD = 0.90
MERGE_IMPORTANCE_BUMP = 0.05
PAGE = 500  # items per listing request


class NoVectorIndex(MemoryUnavailable):
    """The store given to a run cannot search by meaning: memory is off for the run."""


def index_config(store: Any) -> Mapping[str, Any] | None:
    """The store's vector index configuration (LangGraph's ``index_config``), or None.

    A LangGraph server hands graphs a batching wrapper around its store (``_store``); it is
    looked through.
    """
    seen: set[int] = set()
    while store is not None and id(store) not in seen:
        seen.add(id(store))
        config = getattr(store, "index_config", None)
        if config:
            return config
        store = getattr(store, "_store", None)
    return None


def has_vector_index(store: Any) -> bool:
    return index_config(store) is not None


def local_index(dims: int | None = None) -> dict[str, Any]:
    """An ``index`` for ``InMemoryStore(index=...)`` / ``AsyncPostgresStore(index=...)`` with the
    local embedding model (the one ``langgraph.json`` names)."""
    from .embeddings import LOCAL_DIM, local_embeddings

    return {"dims": dims or LOCAL_DIM, "embed": local_embeddings(), "fields": list(INDEX_FIELDS)}


def is_memory_store(store: Any) -> bool:
    """The FAISS store (or one like it): its own ``remember``/``recall`` do the work."""
    return store is not None and callable(getattr(store, "remember", None)) and callable(getattr(store, "recall", None))


@dataclass
class MemoryPolicy:
    """How the generic path ranks, consolidates and prunes (the FAISS store has its own copy)."""

    ranking: RankingConfig = field(default_factory=RankingConfig)
    dedupe_threshold: float = DEFAULT_DEDUPE_THRESHOLD
    max_items: int = 0  # 0: $SMART_AGENT_MEMORY_MAX_ITEMS or 10,000
    clock: Callable[[], float] = time.time

    def cap(self) -> int:
        return self.max_items or settings.memory_max_items(DEFAULT_MAX_ITEMS) or DEFAULT_MAX_ITEMS


# -- recall ------------------------------------------------------------------------------
async def recall(
    store: Any,
    namespace: Sequence[str],
    query: str,
    k: int = 5,
    *,
    min_similarity: float = 0.0,
    policy: MemoryPolicy | None = None,
) -> list[Recalled]:
    """Top ``k`` memories under ``namespace`` for ``query`` by blended rank.

    ``asearch`` returns a bounded number of candidates by similarity (``ranking.candidates``, at
    least 4k); they are re-ranked by ``w_sim*similarity + w_rec*recency + w_imp*importance``.
    """
    ns = tuple(namespace)
    if is_memory_store(store):
        return await asyncio.to_thread(store.recall, ns, query, k, min_similarity=min_similarity)
    if k <= 0 or not (query or "").strip():
        return []
    p = policy or MemoryPolicy()
    hits = await _nearest(store, ns, query, max(p.ranking.candidates, 4 * k))
    now = p.clock()
    out: list[Recalled] = []
    for item in hits:
        if item.score is None or not isinstance(item.value, Mapping):
            continue  # not indexed (the in-memory store pads results with such items)
        sim = float(item.score)
        if sim < min_similarity:
            continue
        imp = importance_of(item.value)
        age = now - memory_times(item)[1]
        score = p.ranking.score(sim, age, imp)
        item.score = score
        out.append(Recalled(item, sim, p.ranking.recency(age), imp, score))
    out.sort(key=lambda r: (-r.score, -r.similarity, r.item.key))
    return out[:k]


async def _nearest(store: Any, ns: tuple[str, ...], query: str, limit: int) -> list[Any]:
    """The items of exactly ``ns`` nearest to ``query`` (at most ``limit``), most similar first:
    the store's ``anearest`` when it has one (Postgres: ``sessions/pg_store.py``), else ``asearch``
    without the other namespaces it reaches (a prefix search; on Postgres a ``LIKE`` pattern,
    which finds ``memories.adam`` under ``memories.ada``)."""
    nearest = getattr(store, "anearest", None)
    if callable(nearest):
        return list(await nearest(ns, query, limit))
    return [h for h in await store.asearch(ns, query=query, limit=limit) if tuple(h.namespace) == ns]


# -- write -------------------------------------------------------------------------------
async def remember(
    store: Any,
    namespace: Sequence[str],
    text: str,
    *,
    importance: float = DEFAULT_IMPORTANCE,
    kind: str = "note",
    metadata: Mapping[str, Any] | None = None,
    key: str | None = None,
    index: Sequence[str] | None = None,
    policy: MemoryPolicy | None = None,
) -> WriteResult:
    """Write a memory: merge into the nearest one of the namespace when its similarity reaches
    the dedupe threshold (newer text, importance ``max + 0.05``, ``merges`` + 1), else add it;
    then prune the namespace to its cap (lowest ``importance * recency`` first, never this one).
    ``index``: the value's fields the memory is indexed on (default ``["text"]``; a run's
    observation: its ``task``, from ``metadata``)."""
    ns = tuple(namespace)
    if is_memory_store(store):
        return await asyncio.to_thread(
            store.remember, ns, text, importance=importance, kind=kind, metadata=metadata, key=key, index=index
        )
    text = (text or "").strip()
    if not text:
        raise ValueError("A memory needs non-empty text")
    p = policy or MemoryPolicy()
    importance = min(1.0, max(0.0, float(importance)))
    now = p.clock()
    base = {"kind": kind, **(dict(metadata) if metadata else {})}
    fields = list(index) if index else INDEX_FIELDS
    probe = next((base[f] for f in fields if isinstance(base.get(f), str) and base[f].strip()), text)
    nearest = None
    if key is None:
        hits = await _nearest(store, ns, probe, 4)
        nearest = hits[0] if hits and hits[0].score is not None else None
    similarity = float(nearest.score) if nearest is not None else None
    if nearest is not None and similarity is not None and similarity >= p.dedupe_threshold:
        old = dict(nearest.value)
        merges = int(old.get("merges", 0) or 0) + 1
        new_imp = min(1.0, max(importance_of(old), importance) + MERGE_IMPORTANCE_BUMP)
        created = memory_times(nearest)[0]
        value = {**old, **base, "text": text, "importance": round(new_imp, 4), "merges": merges,
                 "created_at": created, "updated_at": now}
        await store.aput(ns, nearest.key, value, index=fields)
        result = WriteResult(nearest.key, "merged", ns, similarity, merges, new_imp)
    else:
        key = key or uuid.uuid4().hex[:12]
        existing = await store.aget(ns, key)
        merges = int((existing.value or {}).get("merges", 0) or 0) if existing else 0
        created = memory_times(existing)[0] if existing else now
        value = {**base, "text": text, "importance": round(importance, 4), "merges": merges,
                 "created_at": created, "updated_at": now}
        await store.aput(ns, key, value, index=fields)
        result = WriteResult(key, "created", ns, similarity, merges, importance)
    result.pruned = await _prune(store, ns, keep=result.key, now=now, policy=p)
    return result


async def _prune(store: Any, ns: tuple[str, ...], *, keep: str, now: float, policy: MemoryPolicy) -> list[str]:
    cap = policy.cap()
    if not await store.asearch(ns, limit=1, offset=cap):
        return []  # at most `cap` items: one cheap request, no listing
    items = [i for i in await _all_items(store, ns) if tuple(i.namespace) == ns]
    excess = len(items) - cap
    if excess <= 0:
        return []

    def worth(item: Any) -> tuple[float, float]:
        updated = memory_times(item)[1]
        return (importance_of(item.value) * policy.ranking.recency(now - updated), updated)

    victims = [i.key for i in sorted((i for i in items if i.key != keep), key=worth)[:excess]]
    for victim in victims:
        await store.adelete(ns, victim)
    return victims


# -- listing, deleting -------------------------------------------------------------------
async def _all_items(store: Any, ns: tuple[str, ...]) -> list[Any]:
    out: list[Any] = []
    while True:
        page = await store.asearch(ns, limit=PAGE, offset=len(out))
        out.extend(page)
        if len(page) < PAGE:
            return out


async def list_memories(store: Any, namespace: Sequence[str], limit: int | None = None) -> tuple[list[Any], int]:
    """The namespace's memories, newest first (``limit`` of them), and how many there are."""
    ns = tuple(namespace)
    items = [i for i in await _all_items(store, ns) if tuple(i.namespace) == ns]
    items.sort(key=lambda i: (-memory_times(i)[1], i.key))
    return (items if limit is None else items[:limit]), len(items)


async def forget(store: Any, namespace: Sequence[str], key: str) -> bool:
    """Delete one memory; True when it existed."""
    ns = tuple(namespace)
    if is_memory_store(store):
        return bool(await asyncio.to_thread(store.forget, ns, key))
    if await store.aget(ns, key) is None:
        return False
    await store.adelete(ns, key)
    return True
