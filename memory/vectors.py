"""The memory store's vectors: embedding, re-embedding, repair and the write transaction.

SQLite is the source of truth; each namespace's FAISS index is a cache (``index_cache.py``)
rebuilt from the stored vectors whenever it is missing or unreadable, and caught up when stale
(damaged rows are skipped: ``integrity.py``). A mixin of
:class:`~smart_agent.memory.store.FaissMemoryStore`; the methods that touch SQLite are called
with the store's lock held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from . import ann
from .embeddings import embed_texts, load_embeddings
from .index_cache import INDEX_DIR, _IndexCache, _NsIndex
from .matching import _ns_path
from .ranking import RankingConfig

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger("smart_agent.memory.store")

__all__ = ["INDEX_DIR", "_NoTxn", "_NsIndex", "_Txn", "_VectorIndexes", "_vec_bytes"]


def _vec_bytes(vec: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vec, dtype="<f4").tobytes()



class _VectorIndexes(_IndexCache):
    """Embedding and the per-namespace FAISS indexes of a ``FaissMemoryStore``.

    The base of the store's mixins: it declares the attributes ``FaissMemoryStore.__init__`` sets.
    """

    _embeddings_spec: str | Embeddings
    _embeddings: Embeddings | None
    embedding_name: str
    index_fields: tuple[str, ...]
    ranking: RankingConfig
    dedupe_threshold: float
    max_items_per_namespace: int
    clock: Callable[[], float]
    _model_checked: bool

    def _ensure_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

    def _write_txn(self) -> _Txn:
        return _Txn(self)

    @property
    def embeddings(self) -> Embeddings:
        if self._embeddings is None:
            self._embeddings = load_embeddings(self._embeddings_spec)
        return self._embeddings

    # -- embedding ------------------------------------------------------------
    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed outside the lock (it can take seconds on first use)."""
        self._check_model()
        return embed_texts(self.embeddings, list(texts))

    def _check_model(self) -> None:
        """Re-embed everything if the folder's vectors came from another model."""
        if self._model_checked:
            return
        with self._lock:
            if self._model_checked:
                return
            row = self._conn.execute("SELECT value FROM meta WHERE key='embedding_model'").fetchone()
            stored = row[0] if row else None
            if stored is None:
                self._conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_model', ?)", (self.embedding_name,)
                )
            elif stored != self.embedding_name:
                self._reembed_all(stored)
            self._model_checked = True

    def _reembed_all(self, old: str) -> None:
        rows = self._conn.execute("SELECT id, text FROM items WHERE typeof(text) = 'text'").fetchall()
        log.warning(
            "smart-agent memory: vectors in %s were made by %r; re-embedding %d items with %r",
            self.path, old, len(rows), self.embedding_name,
        )
        vecs: list[bytes] = []
        for start in range(0, len(rows), 256):
            chunk = rows[start : start + 256]
            arr = embed_texts(self.embeddings, [r[1] for r in chunk])
            vecs.extend(_vec_bytes(v) for v in arr)
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.executemany(
                "UPDATE items SET vector=? WHERE id=?", [(v, r[0]) for v, r in zip(vecs, rows, strict=True)]
            )
            # A new vectors epoch: no index file or cached index of the old vectors is used again.
            self._conn.execute("UPDATE namespaces SET version = version + 1, file = '', file_version = -1")
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('vectors_epoch', ?)", (str(self._epoch() + 1),)
            )
            self._conn.execute("DELETE FROM meta WHERE key='dim'")  # the new model's: set by the next write
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_model', ?)", (self.embedding_name,)
            )
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._indexes.clear()

    # -- self-repair ----------------------------------------------------------------
    def repair(self, namespace_prefix: Sequence[str] = ()) -> list[str]:
        """Re-embed the damaged rows whose text and value are intact (only the vector was bad:
        a row damaged otherwise, ``integrity.check_row``, is recorded with that reason instead).

        Returns their keys. Timestamps are kept; a row rewritten meanwhile is left alone.
        """
        import numpy as np

        p = _ns_path(namespace_prefix)
        with self._lock:
            self._ensure_open()
            rows = self._conn.execute(
                # (from the recorded rows, CROSS JOIN keeping them outermost: not a scan of every memory)
                "SELECT i.id, i.text FROM damaged d CROSS JOIN items i ON i.id = d.id "
                "CROSS JOIN namespaces n ON n.ns = i.ns "
                "WHERE substr(n.ns_path, 1, ?) = ? AND d.reason LIKE 'vector%' AND typeof(i.text) = 'text' "
                "AND json_valid(i.value) ORDER BY i.id",
                (len(p), p),
            ).fetchall()
        if not rows:
            return []
        vecs = self._embed([r[1] for r in rows])
        repaired: list[str] = []
        with self._lock:
            self._ensure_open()
            with self._write_txn():
                for (item_id, text), vec in zip(rows, vecs, strict=True):
                    row = self._conn.execute(
                        "SELECT i.ns, i.key FROM items i JOIN damaged d ON d.id = i.id WHERE i.id = ? AND i.text = ?",
                        (item_id, text),
                    ).fetchone()
                    if row is None:
                        continue
                    self._check_dim(vec)
                    entry = self._index_for(row[0])  # before the update: the rebuild still skips this row
                    assert entry is not None
                    self._conn.execute(
                        "UPDATE items SET vector=? WHERE id=?", (_vec_bytes(vec), item_id)
                    )  # trigger: no longer damaged
                    if entry.index is None:
                        entry.index = ann.new_index(int(vec.shape[0]))
                    entry.add(np.array([item_id], dtype="int64"), vec.reshape(1, -1))
                    self._bump(row[0], entry)
                    repaired.append(row[1])
        if repaired:
            log.warning("smart-agent memory: re-embedded %d damaged row(s): %s", len(repaired), ", ".join(repaired[:5]))
        return repaired


class _Txn:
    """A write transaction; after the commit, saves the indexes that reached ``SAVE_EVERY`` changes
    (not every write: ``index_cache.py``) and trains those grown enough."""

    def __init__(self, store: _VectorIndexes) -> None:  # a FaissMemoryStore
        self.store = store

    def __enter__(self) -> _Txn:
        self.store._conn.execute("BEGIN IMMEDIATE")
        self.store._dirty = set()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        s = self.store
        dirty, s._dirty = s._dirty, set()
        if exc_type is not None:
            s._conn.execute("ROLLBACK")
            s._indexes.clear()  # in-memory indexes may hold uncommitted changes
            return
        s._conn.execute("COMMIT")
        s._after_commit(dirty)


class _NoTxn:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
