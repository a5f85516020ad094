"""Long-term memory: a LangGraph ``BaseStore`` on FAISS + SQLite, without pickle.

Layout of a store folder (``$SMART_AGENT_HOME/memory`` by default)::

    memory.sqlite3              items (namespace, key, JSON value, embedded text,
                                float32 vector bytes, timestamps), namespaces
                                (write version, current index file), meta, damaged
                                (rows skipped as corrupt: see integrity.py)
    index/<ns-hash>-<version>.faiss
                                one IndexIVFFlat per namespace (one list, exact, while
                                small; trained lists from 20,000 vectors: ann.py),
                                written with faiss.write_index

SQLite is the source of truth; the FAISS indexes are a derived cache kept in memory
and saved on close, every 1,000 writes of a namespace and after a rebuild or
training, never per write. An index whose version is not the namespace's current
write version (another process wrote since, or the file is some writes behind)
catches up by row ids; a missing or unreadable file is rebuilt from the stored
vectors (``index_cache.py``). Nothing is ever unpickled, so a tampered folder cannot run code:
values are JSON, vectors are raw little-endian float32, indexes are parsed by
FAISS's own binary reader.

Besides the generic ``BaseStore`` operations (``get``/``put``/``search`` with a
semantic ``query``/``list_namespaces``), the store has the memory operations the
agent uses: :meth:`FaissMemoryStore.remember` (write with consolidation and a
capacity cap) and :meth:`FaissMemoryStore.recall` (blended ranking).

Modules: ``vectors.py`` (embedding, repair), ``index_cache.py`` and ``ann.py`` (FAISS
indexes), ``rows.py`` (``batch`` and the SQLite reads/writes), ``ranking.py`` (``RankingConfig``, results),
``matching.py`` (namespaces, filters), ``integrity.py`` (foreign files, damaged rows).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, SearchItem

from ..config import settings
from ..sessions.store import data_home
from . import background, integrity
from .backend import DEFAULT_DEDUPE_THRESHOLD, DEFAULT_MAX_ITEMS, MERGE_IMPORTANCE_BUMP, is_memory_store
from .embeddings import LOCAL, LOCAL_DIM, embedding_id
from .matching import _ns_json, _ns_path, _validate_labels, match_filter
from .ranking import (
    DEFAULT_IMPORTANCE,
    RankingConfig,
    Recalled,
    WriteResult,
    _importance,
    humanize_age,
)
from .rows import _dt, _Rows
from .vectors import INDEX_DIR, _NsIndex, _Txn

log = logging.getLogger(__name__)

__all__ = [
    "DB_NAME", "INDEX_DIR", "FaissMemoryStore", "RankingConfig", "Recalled", "WriteResult",
    "humanize_age", "is_memory_store", "match_filter", "user_namespace",
]

MEMORY_NAMESPACE_ROOT = "memories"
DB_NAME = "memory.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS namespaces (
    ns TEXT PRIMARY KEY,              -- JSON array of labels
    ns_path TEXT NOT NULL,            -- labels joined by '.', plus a trailing '.' (prefix match)
    version INTEGER NOT NULL DEFAULT 0,
    file TEXT NOT NULL DEFAULT '',    -- current FAISS file (in index/)
    file_version INTEGER NOT NULL DEFAULT -1
);
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,   -- the FAISS id
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,                    -- JSON object
    text TEXT,                              -- what was embedded (NULL: not indexed)
    vector BLOB,                            -- little-endian float32, L2-normalized
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (ns, key)
);
CREATE INDEX IF NOT EXISTS items_ns_updated ON items (ns, updated_at);
"""


# --------------------------------------------------------------------------- helpers


def default_memory_dir() -> Path:
    return data_home() / "memory"


def user_namespace(user_id: str | None) -> tuple[str, str]:
    """The namespace of one user's memories: ``("memories", <user_id>)``.

    Namespace labels may not contain '.', so '%' and '.' are percent-encoded
    (``alice.smith@example.com`` works as a user id).
    """
    uid = (user_id or "default").strip() or "default"
    return (MEMORY_NAMESPACE_ROOT, uid.replace("%", "%25").replace(".", "%2E"))



# --------------------------------------------------------------------------- the store
class FaissMemoryStore(_Rows, BaseStore):
    """Persistent ``BaseStore`` with FAISS semantic search and memory consolidation.

    Args:
        path: folder of the store (created if missing); default
            ``$SMART_AGENT_HOME/memory``.
        embeddings: ``"local"`` (bundled all-MiniLM-L6-v2, offline), ``"provider:model"``
            or any LangChain ``Embeddings``. Loaded on first use.
        index_fields: value fields embedded by ``put`` when the op gives no ``index``
            (falls back to the whole JSON value when none is present).
        ranking: blend weights and half-life (:class:`RankingConfig`).
        dedupe_threshold: cosine at or above which :meth:`remember` merges into the
            nearest existing memory instead of adding one.
        max_items_per_namespace: capacity cap applied by :meth:`remember`
            (``$SMART_AGENT_MEMORY_MAX_ITEMS`` or 10,000); ``0``/``None`` from the
            environment means the default.
        clock: time source (tests).
        train_in_background: train a large namespace's IVF index in a thread (default) or in
            the write that makes it large (tests).

    Thread-safe: every operation holds one lock; embedding runs outside it. Writes a run queued
    on the memory thread (``background.py``) are waited for by every other thread's operation
    and by ``close``, so a process reads its own writes.
    Several processes may share a folder: SQLite serializes writers and each
    namespace's write version tells a process when its cached index is stale.
    """

    supports_ttl = False

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embeddings: str | Embeddings | None = "local",
        embedding_name: str | None = None,
        index_fields: Sequence[str] = ("text",),
        ranking: RankingConfig | None = None,
        dedupe_threshold: float = DEFAULT_DEDUPE_THRESHOLD,
        max_items_per_namespace: int | None = None,
        clock: Callable[[], float] = time.time,
        train_in_background: bool = True,
    ) -> None:
        # (absolute: the index files it saves later go to this folder whatever the working folder is then)
        self.path = (Path(path) if path is not None else default_memory_dir()).expanduser().absolute()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # (a file in its place, no permission)
            why = "not a folder" if self.path.exists() else exc.strerror or str(exc)
            raise integrity.MemoryUnavailable(
                f"{self.path} cannot hold the memory database ({why}); move it away or point SMART_AGENT_HOME "
                "elsewhere"
            ) from None
        with contextlib.suppress(OSError):  # (a file in its place: take_notices says so)
            (self.path / INDEX_DIR).mkdir(exist_ok=True)
        self._embeddings_spec = embeddings if embeddings is not None else "local"
        self._embeddings: Embeddings | None = None
        self.embedding_name = embedding_name or embedding_id(self._embeddings_spec)
        self.index_fields = tuple(index_fields)
        self.ranking = ranking or RankingConfig()
        self.dedupe_threshold = dedupe_threshold
        if max_items_per_namespace is None:
            max_items_per_namespace = settings.memory_max_items(DEFAULT_MAX_ITEMS)
        self.max_items_per_namespace = max_items_per_namespace or DEFAULT_MAX_ITEMS
        self.clock = clock
        self._lock = threading.RLock()
        self._indexes: dict[str, _NsIndex] = {}
        self._dirty: set[str] = set()
        self._training: dict[str, threading.Thread] = {}
        self.train_in_background = train_in_background
        self._db_path = self.path / DB_NAME
        self._model_checked = False
        self._closed = False
        # Refuses (MemoryUnavailable) a file that is not a memory database, leaving it as it was.
        self._conn = integrity.open_database(self.path / DB_NAME, _SCHEMA)
        try:
            self._repairs = [f"{self._db_path}: {note}" for note in integrity.check_namespaces(self._conn)]
        except BaseException:
            self._conn.close()
            raise
        for note in self._repairs:
            log.info("smart-agent memory: %s", note)

    # -- lifecycle ----------------------------------------------------------
    def close(self) -> None:
        background.wait()  # a run's queued write to this store
        with self._lock:
            if not self._closed:
                try:
                    self.flush()  # the indexes' unsaved changes (SQLite has them all already)
                finally:
                    self._closed = True
                    self._indexes.clear()
                    self._conn.close()

    def take_notices(self) -> list[str]:
        """One line each about the folder: what the store works around now (an index folder that
        is not a folder) and what opening it repaired (said once). The memory commands print
        them; a run's memory events carry them in their ``warning``."""
        index_dir = self.path / INDEX_DIR
        notes = [] if index_dir.is_dir() else [
            f"{index_dir} is not a folder: the FAISS indexes are rebuilt from SQLite in memory and not saved; "
            "move it away to let smart-agent recreate the folder"
        ]
        notes += self._repairs
        self._repairs = []
        return notes

    def __enter__(self) -> FaissMemoryStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FaissMemoryStore(path={str(self.path)!r}, embeddings={self.embedding_name!r})"

    @property
    def index_config(self) -> dict[str, Any]:
        """What LangGraph's stores call their index: this store always has one (``embed`` loads the
        model only when used), so ``memory.backend.has_vector_index`` treats every store alike."""
        with self._lock:
            dims = self._dim() if not self._closed else None
        if dims is None and self.embedding_name == LOCAL:
            dims = LOCAL_DIM
        return {"dims": dims, "embed": self.embeddings, "fields": list(self.index_fields)}

    # -- memory operations ------------------------------------------------------------
    def remember(
        self,
        namespace: Sequence[str],
        text: str,
        *,
        importance: float = DEFAULT_IMPORTANCE,
        kind: str = "note",
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> WriteResult:
        """Write a memory with consolidation and the capacity cap.

        If the nearest memory in ``namespace`` has cosine >= ``dedupe_threshold``
        it is updated instead: the newer text replaces the old one, importance
        becomes ``min(1, max(old, new) + 0.05)``, ``merges`` counts the merges and
        ``updated_at`` is now. Then, if the namespace holds more than
        ``max_items_per_namespace`` memories, the least valuable ones
        (lowest ``importance * recency``) are deleted -- never the one just written.
        """
        background.wait()  # writes queued by a run come first
        ns = tuple(namespace)
        _validate_labels(ns)
        text = (text or "").strip()
        if not text:
            raise ValueError("A memory needs non-empty text")
        importance = min(1.0, max(0.0, float(importance)))
        vec = self._embed([text])[0]
        with self._lock:
            self._ensure_open()
            with _Txn(self):
                now = self.clock()
                ns_json = _ns_json(ns)
                nearest: tuple[int, float] | None = None
                if key is None:
                    cands = self._candidates([ns_json], vec, 1) if self._ns_row(ns_json) else []
                    nearest = cands[0] if cands else None
                similarity = nearest[1] if nearest else None
                base = {"kind": kind, **(dict(metadata) if metadata else {})}
                if nearest is not None and nearest[1] >= self.dedupe_threshold:
                    row = self._conn.execute(
                        f"SELECT {integrity.ROW_COLUMNS} FROM items WHERE id=?", (nearest[0],)
                    ).fetchone()
                    old = getattr(self._row_to_item(row), "value", {})  # damaged: the new text repairs it
                    merges = int(old.get("merges", 0) or 0) + 1
                    new_imp = min(1.0, max(_importance(old), importance) + MERGE_IMPORTANCE_BUMP)
                    value = {**old, **base, "text": text, "importance": round(new_imp, 4), "merges": merges}
                    self._put_row(ns, row[1], value, text, vec, now)
                    result = WriteResult(row[1], "merged", ns, similarity, merges, new_imp)
                else:
                    key = key or uuid.uuid4().hex[:12]
                    existing = self._conn.execute(
                        f"SELECT {integrity.ROW_COLUMNS} FROM items WHERE ns=? AND key=?", (ns_json, key)
                    ).fetchone()
                    old_item = self._row_to_item(existing) if existing else None  # damaged: rewritten afresh
                    merges = int(old_item.value.get("merges", 0)) if old_item is not None else 0
                    value = {**base, "text": text, "importance": round(importance, 4), "merges": merges}
                    self._put_row(ns, key, value, text, vec, now)
                    result = WriteResult(key, "created", ns, similarity, merges, importance)
                result.pruned = self._prune(ns, keep=result.key, now=now)
        return result

    def _prune(self, ns: tuple[str, ...], *, keep: str, now: float) -> list[str]:
        ns_json = _ns_json(ns)
        entry = self._index_for(ns_json)  # current with SQLite: its row count too
        count = entry.rows if entry is not None else 0
        excess = count - self.max_items_per_namespace
        if excess <= 0:
            return []
        rows = self._conn.execute(
            "SELECT key, iif(json_valid(value), json_extract(value, '$.importance'), NULL), updated_at FROM items "
            "WHERE ns=? AND key != ?",
            (ns_json, keep),
        ).fetchall()

        def worth(r: Sequence[Any]) -> tuple[float, float]:
            if (updated := integrity.as_time(r[2])) is None:
                return (-1.0, float("-inf"))  # a damaged row goes first
            try:
                imp = min(1.0, max(0.0, float(r[1]))) if r[1] is not None else DEFAULT_IMPORTANCE
            except (TypeError, ValueError):
                imp = DEFAULT_IMPORTANCE
            return (imp * self.ranking.recency(now - updated), updated)

        victims = [r[0] for r in sorted(rows, key=worth)[:excess]]
        return self._delete_rows(ns, victims)

    def recall(
        self,
        namespace: Sequence[str],
        query: str,
        k: int = 5,
        *,
        min_similarity: float = 0.0,
        filter: Mapping[str, Any] | None = None,
        query_vector: Any = None,
    ) -> list[Recalled]:
        """Top ``k`` memories under ``namespace`` (a prefix) by blended rank.

        ``query_vector``: the query already embedded (:meth:`query_vector`, e.g. while the run
        was starting); None embeds ``query`` here."""
        background.wait()  # writes queued by a run come first
        ns = tuple(namespace)
        _validate_labels(ns)
        if k <= 0 or not (query or "").strip():
            return []
        qvec = query_vector if query_vector is not None else self.query_vector(ns, query)
        if qvec is None:
            return []  # nothing to search
        with self._lock:
            self._ensure_open()
            ranked = self._ranked(self._namespaces_under(ns), qvec, k, filter, min_similarity)
        return ranked[:k]

    def query_vector(self, namespace: Sequence[str], query: str) -> Any:
        """``query`` embedded for a recall under ``namespace``; None (no model loaded) when there is
        nothing to search there."""
        background.wait()  # writes queued by a run come first
        ns = tuple(namespace)
        _validate_labels(ns)
        with self._lock:
            self._ensure_open()
            has_any = any(
                (e := self._index_for(n)) is not None and e.index is not None and e.index.ntotal
                for n in self._namespaces_under(ns)
            )
        return self._embed([query])[0] if has_any else None

    def forget(self, namespace: Sequence[str], key: str) -> bool:
        """Delete one memory; True when it existed."""
        background.wait()  # writes queued by a run come first
        ns = tuple(namespace)
        _validate_labels(ns)
        with self._lock:
            self._ensure_open()
            with _Txn(self):
                return bool(self._delete_rows(ns, [key]))

    def count(self, namespace_prefix: Sequence[str] = ()) -> int:
        background.wait()  # writes queued by a run come first
        p = _ns_path(namespace_prefix)
        with self._lock:
            self._ensure_open()
            return self._conn.execute(
                "SELECT COUNT(*) FROM items i JOIN namespaces n ON n.ns = i.ns WHERE substr(n.ns_path, 1, ?) = ?",
                (len(p), p),
            ).fetchone()[0]

    def stats(self, namespace_prefix: Sequence[str] = ()) -> dict[str, Any]:
        """Counts and sizes (never loads the embedding model); the index files are saved first."""
        background.wait()  # writes queued by a run come first
        p = _ns_path(namespace_prefix)
        with self._lock:
            self._ensure_open()
            self.flush()
            # (a damaged time or merges count, see integrity.py, is left out of the figures)
            sound_time = "iif(typeof({c}) IN ('integer', 'real') AND {c} BETWEEN :lo AND :hi, {c}, NULL)"
            rows = self._conn.execute(
                "SELECT i.ns, COUNT(*), SUM(i.vector IS NOT NULL), "
                f"MIN({sound_time.format(c='i.created_at')}), MAX({sound_time.format(c='i.updated_at')}), "
                "TOTAL(CASE WHEN typeof(i.value) = 'text' AND json_valid(i.value) AND json_type(i.value, '$.merges') "
                "= 'integer' THEN max(json_extract(i.value, '$.merges'), 0) ELSE 0 END) FROM items i JOIN "
                "namespaces n ON n.ns = i.ns "
                "WHERE substr(n.ns_path, 1, :n) = :p GROUP BY i.ns ORDER BY i.ns",
                {"n": len(p), "p": p, "lo": integrity.MIN_TIME, "hi": integrity.MAX_TIME},
            ).fetchall()
            meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
            dim = self._dim()
            damaged = integrity.damaged_rows(self._conn, p, dim, scan=True)
        files = list((self.path / INDEX_DIR).glob("*.faiss"))
        db_bytes = sum(f.stat().st_size for f in self.path.glob(DB_NAME + "*") if f.is_file())
        return {
            "path": str(self.path),
            "embedding_model": integrity.printable(meta.get("embedding_model", self.embedding_name)),
            "dim": dim,
            "items": sum(r[1] for r in rows),
            "namespaces": [
                {
                    "namespace": list(integrity.namespace_labels(r[0]) or ()),
                    "items": r[1],
                    "indexed": int(r[2] or 0),
                    "merges": int(r[5] or 0),
                    "oldest": _dt(r[3]).isoformat() if r[3] else None,
                    "newest": _dt(r[4]).isoformat() if r[4] else None,
                }
                for r in rows
            ],
            "max_items_per_namespace": self.max_items_per_namespace,
            "dedupe_threshold": self.dedupe_threshold,
            "ranking": {
                "w_similarity": self.ranking.w_similarity,
                "w_recency": self.ranking.w_recency,
                "w_importance": self.ranking.w_importance,
                "half_life_days": self.ranking.half_life_days,
            },
            "db_bytes": db_bytes,
            "index_bytes": sum(f.stat().st_size for f in files),
            "damaged": damaged,  # rows skipped by recall and search: namespace, key, reason
        }

    def damaged(self, namespace_prefix: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Rows found damaged under a prefix, skipped by recall and search (no full scan: see ``stats``)."""
        background.wait()  # writes queued by a run come first
        with self._lock:
            self._ensure_open()
            return integrity.damaged_rows(self._conn, _ns_path(namespace_prefix), None, scan=False)

    def items(self, namespace_prefix: Sequence[str] = (), *, limit: int = 100, offset: int = 0) -> list[SearchItem]:
        """Memories under a prefix, newest first (no model needed)."""
        return self.search(tuple(namespace_prefix), limit=limit, offset=offset)
