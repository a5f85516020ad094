"""The memory store's vectors: embedding, and one FAISS index per namespace.

SQLite is the source of truth; each namespace's FAISS index is a cache kept in
``index/<ns-hash>-<version>.faiss`` and rebuilt from the stored vectors whenever
it is missing, stale or unreadable (damaged rows are skipped: ``integrity.py``).
A mixin of :class:`~smart_agent.memory.store.FaissMemoryStore`; the methods that
touch SQLite are called with the store's lock held.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from . import integrity
from .embeddings import embed_texts, load_embeddings
from .matching import _ns_hash, _ns_path
from .ranking import RankingConfig

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger("smart_agent.memory.store")

INDEX_DIR = "index"


@functools.cache
def _faiss() -> Any:
    """faiss, imported and configured on first use (once per process)."""
    import faiss

    # One thread is about twice as fast for single queries on a flat index
    # (no OpenMP fork/join) and keeps the agent's other threads free.
    faiss.omp_set_num_threads(1)
    return faiss



def _vec_bytes(vec: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vec, dtype="<f4").tobytes()



@dataclass
class _NsIndex:
    version: int
    index: Any  # faiss.IndexIDMap2 | None (no vectors yet)



class _VectorIndexes:
    """Embedding and the per-namespace FAISS indexes of a ``FaissMemoryStore``.

    The base of the store's mixins: it declares the attributes ``FaissMemoryStore.__init__`` sets.
    """

    path: Path
    _embeddings_spec: str | Embeddings
    _embeddings: Embeddings | None
    embedding_name: str
    index_fields: tuple[str, ...]
    ranking: RankingConfig
    dedupe_threshold: float
    max_items_per_namespace: int
    clock: Callable[[], float]
    _lock: threading.RLock
    _indexes: dict[str, _NsIndex]
    _dirty: set[str]
    _model_checked: bool
    _closed: bool
    _conn: sqlite3.Connection

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
        rows = self._conn.execute("SELECT id, text FROM items WHERE text IS NOT NULL").fetchall()
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
            self._conn.execute("UPDATE namespaces SET version = version + 1")
            self._conn.execute("DELETE FROM meta WHERE key='dim'")  # the new model's: set by the next write
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_model', ?)", (self.embedding_name,)
            )
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._indexes.clear()

    # -- namespace indexes (call with the lock held) ------------------------------
    def _ns_row(self, ns_json: str) -> tuple[int, str, int] | None:
        return self._conn.execute(
            "SELECT version, file, file_version FROM namespaces WHERE ns=?", (ns_json,)
        ).fetchone()

    def _index_for(self, ns_json: str) -> _NsIndex | None:
        """The namespace's FAISS index, current with SQLite (None: unknown namespace)."""
        row = self._ns_row(ns_json)
        if row is None:
            self._indexes.pop(ns_json, None)
            return None
        version, fname, file_version = row
        cached = self._indexes.get(ns_json)
        if cached is not None and cached.version == version:
            return cached
        index = None
        n_vectors = integrity.indexable_count(self._conn, ns_json)
        if fname and file_version == version and n_vectors:
            index = self._read_index_file(fname, n_vectors)
        if index is None and n_vectors:
            index = self._rebuild_index(ns_json)
            self._write_index_file(ns_json, version, index)
        entry = _NsIndex(version, index)
        self._indexes[ns_json] = entry
        return entry

    def _read_index_file(self, fname: str, expected: int) -> Any:
        faiss = _faiss()
        fpath = self.path / INDEX_DIR / fname
        if os.sep in fname or "/" in fname or not fpath.is_file():
            return None
        try:
            index = faiss.read_index(str(fpath))
        except Exception as exc:
            log.warning("smart-agent memory: unreadable index %s (%s); rebuilding", fpath, exc)
            return None
        if not isinstance(index, faiss.IndexIDMap2) or index.ntotal != expected:
            log.warning("smart-agent memory: index %s does not match the database; rebuilding", fpath)
            return None
        dim = self._dim()
        if dim is not None and index.d != dim:
            return None
        return index

    def _dim(self) -> int | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        return int(row[0]) if row else None

    def _new_index(self, dim: int) -> Any:
        faiss = _faiss()
        return faiss.IndexIDMap2(faiss.IndexFlatIP(dim))

    def _bump(self, ns_json: str, entry: _NsIndex) -> None:
        self._conn.execute("UPDATE namespaces SET version = version + 1 WHERE ns=?", (ns_json,))
        entry.version = self._conn.execute("SELECT version FROM namespaces WHERE ns=?", (ns_json,)).fetchone()[0]
        self._dirty.add(ns_json)

    def _check_dim(self, vec: np.ndarray) -> None:
        dim = self._dim()
        if dim is None:
            self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('dim', ?)", (str(int(vec.shape[0])),))
        elif dim != vec.shape[0]:
            raise ValueError(
                f"Embedding dimension {vec.shape[0]} does not match the store's {dim} ({self.path}); "
                "use the same embedding model or another memory folder."
            )

    def _rebuild_index(self, ns_json: str) -> Any:
        import numpy as np

        rows = self._conn.execute(
            "SELECT id, key, vector, json_valid(value) FROM items WHERE ns=? AND vector IS NOT NULL ORDER BY id",
            (ns_json,),
        ).fetchall()
        ids, vecs = integrity.sound_vectors(self._conn, ns_json, rows, self._dim())  # damaged rows: skipped, recorded
        if not ids:
            return None
        index = self._new_index(vecs[0].shape[0])
        index.add_with_ids(np.stack(vecs).astype("float32"), np.array(ids, dtype="int64"))
        return index

    def _write_index_file(self, ns_json: str, version: int, index: Any) -> None:
        """Persist one namespace's index as ``<hash>-<version>.faiss`` (atomic rename)."""
        h = _ns_hash(ns_json)
        fname = ""
        folder = self.path / INDEX_DIR
        if index is not None and index.ntotal:
            faiss = _faiss()
            fname = f"{h}-{version}.faiss"
            tmp = folder / f".{fname}.{os.getpid()}.{threading.get_ident()}.tmp"
            try:
                faiss.write_index(index, str(tmp))
                os.replace(tmp, folder / fname)
            except Exception as exc:  # the index can always be rebuilt from SQLite
                log.warning("smart-agent memory: could not write %s: %s", folder / fname, exc)
                tmp.unlink(missing_ok=True)
                return
        cur = self._conn.execute(
            "UPDATE namespaces SET file=?, file_version=? WHERE ns=? AND version=?", (fname, version, ns_json, version)
        )
        if cur.rowcount:
            for old in folder.glob(f"{h}-*.faiss"):
                if old.name != fname:
                    old.unlink(missing_ok=True)

    # -- self-repair ----------------------------------------------------------------
    def repair(self, namespace_prefix: Sequence[str] = ()) -> list[str]:
        """Re-embed the damaged rows whose text and value are intact (only the vector was bad).

        Returns their keys. Timestamps are kept; a row rewritten meanwhile is left alone.
        """
        import numpy as np

        p = _ns_path(namespace_prefix)
        with self._lock:
            self._ensure_open()
            rows = self._conn.execute(
                "SELECT i.id, i.text FROM items i JOIN damaged d ON d.id = i.id JOIN namespaces n ON n.ns = i.ns "
                "WHERE substr(n.ns_path, 1, ?) = ? AND i.text IS NOT NULL AND json_valid(i.value) ORDER BY i.id",
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
                        entry.index = self._new_index(int(vec.shape[0]))
                    entry.index.add_with_ids(
                        np.ascontiguousarray(vec.reshape(1, -1), dtype="float32"), np.array([item_id], dtype="int64")
                    )
                    self._bump(row[0], entry)
                    repaired.append(row[1])
        if repaired:
            log.warning("smart-agent memory: re-embedded %d damaged row(s): %s", len(repaired), ", ".join(repaired[:5]))
        return repaired


class _Txn:
    """A write transaction; on success, persists the indexes it changed."""

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
        for ns_json in sorted(dirty):
            entry = s._indexes.get(ns_json)
            if entry is not None:
                s._write_index_file(ns_json, entry.version, entry.index)


class _NoTxn:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
