"""Long-term memory: a LangGraph ``BaseStore`` on FAISS + SQLite, without pickle.

Layout of a store folder (``$SMART_AGENT_HOME/memory`` by default)::

    memory.sqlite3              items (namespace, key, JSON value, embedded text,
                                float32 vector bytes, timestamps), namespaces
                                (write version, current index file), meta, damaged
                                (rows skipped as corrupt: see integrity.py)
    index/<ns-hash>-<version>.faiss
                                one IndexIDMap2(IndexFlatIP) per namespace,
                                written with faiss.write_index

SQLite is the source of truth; FAISS files are a derived cache that is rebuilt
from the stored vectors whenever it is missing, stale (its version is not the
namespace's current write version, e.g. another process wrote since) or
unreadable. Nothing is ever unpickled, so a tampered folder cannot run code:
values are JSON, vectors are raw little-endian float32, indexes are parsed by
FAISS's own binary reader.

Besides the generic ``BaseStore`` operations (``get``/``put``/``search`` with a
semantic ``query``/``list_namespaces``), the store has the memory operations the
agent uses: :meth:`FaissMemoryStore.remember` (write with consolidation and a
capacity cap) and :meth:`FaissMemoryStore.recall` (blended ranking).

Ranking (``RankingConfig``)::

    score = w_sim * max(cos, 0) + w_rec * 0.5 ** (age_days / half_life_days) + w_imp * importance

with defaults w_sim=0.70, w_rec=0.15, w_imp=0.15 and a 30-day half-life; ``age``
is measured from ``updated_at`` (the last write or merge). The FAISS search
returns the ``candidates`` most similar items first; the blend re-orders them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from smart_agent.sessions import data_home

from . import integrity
from .embeddings import embed_texts, embedding_id, load_embeddings

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger(__name__)

MEMORY_NAMESPACE_ROOT = "memories"
DB_NAME = "memory.sqlite3"
INDEX_DIR = "index"
DEFAULT_MAX_ITEMS = 10_000
DEFAULT_DEDUPE_THRESHOLD = 0.90
DEFAULT_IMPORTANCE = 0.5
MERGE_IMPORTANCE_BUMP = 0.05

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


def _faiss() -> Any:
    import faiss

    if not getattr(_faiss, "_configured", False):
        # One thread is about twice as fast for single queries on a flat index
        # (no OpenMP fork/join) and keeps the agent's other threads free.
        faiss.omp_set_num_threads(1)
        _faiss._configured = True  # type: ignore[attr-defined]
    return faiss


def _ns_json(ns: Sequence[str]) -> str:
    return json.dumps(list(ns), ensure_ascii=False)


def _ns_path(ns: Sequence[str]) -> str:
    return "".join(f"{label}." for label in ns)


def _ns_hash(ns_json: str) -> str:
    return hashlib.sha1(ns_json.encode("utf-8")).hexdigest()[:16]


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def _vec_bytes(vec: "np.ndarray") -> bytes:
    import numpy as np

    return np.asarray(vec, dtype="<f4").tobytes()


def _validate_labels(ns: Sequence[str]) -> None:
    for label in ns:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            from langgraph.store.base import InvalidNamespaceError

            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {tuple(ns)}: labels are non-empty strings "
                "without '.' or NUL."
            )


def humanize_age(seconds: float) -> str:
    """'just now', '5 minutes ago', '3 days ago', '2 months ago'..."""
    s = max(0.0, seconds)
    if s < 60:
        return "just now"
    for size, unit in ((31_536_000, "year"), (2_592_000, "month"), (604_800, "week"), (86_400, "day"), (3_600, "hour"), (60, "minute")):
        if s >= size:
            n = int(s // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"  # pragma: no cover


def match_filter(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph filter semantics: exact match or ``$eq/$ne/$gt/$gte/$lt/$lte``."""
    if not flt:
        return True
    return all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_apply_op(item_value, k, v) for k, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value))
        )
    return item_value == filter_value


def _apply_op(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return value == arg
    if op == "$ne":
        return value != arg
    if value is None:
        return False
    try:
        a, b = float(value), float(arg)
    except (TypeError, ValueError):
        return False
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    if op == "$lte":
        return a <= b
    raise ValueError(f"Unsupported filter operator: {op}")


def _ns_matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if cond.match_type == "prefix" else zip(reversed(ns), reversed(path))
    if cond.match_type not in ("prefix", "suffix"):
        raise ValueError(f"Unsupported match type: {cond.match_type}")
    return all(p == "*" or a == p for a, p in pairs)


# --------------------------------------------------------------------------- ranking
@dataclass(frozen=True)
class RankingConfig:
    """How recall orders memories: a weighted blend of three signals in [0, 1].

    * similarity: cosine between query and memory (negative clipped to 0);
    * recency: ``0.5 ** (age_days / half_life_days)`` from ``updated_at``;
    * importance: the memory's ``importance`` (0..1, default 0.5).

    ``candidates``: how many nearest neighbours FAISS returns before re-ranking.
    """

    w_similarity: float = 0.70
    w_recency: float = 0.15
    w_importance: float = 0.15
    half_life_days: float = 30.0
    candidates: int = 50

    def recency(self, age_s: float) -> float:
        if self.half_life_days <= 0:
            return 1.0
        return 0.5 ** (max(0.0, age_s) / 86_400.0 / self.half_life_days)

    def score(self, similarity: float, age_s: float, importance: float) -> float:
        return (
            self.w_similarity * max(0.0, similarity)
            + self.w_recency * self.recency(age_s)
            + self.w_importance * min(1.0, max(0.0, importance))
        )


def _importance(value: Mapping[str, Any]) -> float:
    try:
        return min(1.0, max(0.0, float(value.get("importance", DEFAULT_IMPORTANCE))))
    except (TypeError, ValueError):
        return DEFAULT_IMPORTANCE


@dataclass
class Recalled:
    """One recalled memory with its ranking signals."""

    item: SearchItem
    similarity: float
    recency: float
    importance: float
    score: float

    @property
    def key(self) -> str:
        return self.item.key

    @property
    def text(self) -> str:
        v = self.item.value
        return str(v.get("text") if isinstance(v.get("text"), str) else json.dumps(v, ensure_ascii=False))

    def to_dict(self, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        age = now - self.item.updated_at.timestamp()
        return {
            "key": self.item.key,
            "namespace": list(self.item.namespace),
            "text": self.text,
            "score": round(self.score, 4),
            "similarity": round(self.similarity, 4),
            "recency": round(self.recency, 4),
            "importance": round(self.importance, 4),
            "merges": int(self.item.value.get("merges", 0) or 0),
            "kind": self.item.value.get("kind"),
            "age_s": round(age, 1),
            "age": humanize_age(age),
            "created_at": self.item.created_at.isoformat(),
            "updated_at": self.item.updated_at.isoformat(),
        }


@dataclass
class WriteResult:
    """What :meth:`FaissMemoryStore.remember` did."""

    key: str
    action: str  # "created" | "merged"
    namespace: tuple[str, ...]
    similarity: float | None = None  # to the memory it merged with / the nearest one
    merges: int = 0
    importance: float = DEFAULT_IMPORTANCE
    pruned: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "action": self.action,
            "namespace": list(self.namespace),
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "merges": self.merges,
            "importance": round(self.importance, 4),
            "pruned": list(self.pruned),
        }


@dataclass
class _NsIndex:
    version: int
    index: Any  # faiss.IndexIDMap2 | None (no vectors yet)


# --------------------------------------------------------------------------- the store
class FaissMemoryStore(BaseStore):
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

    Thread-safe: every operation holds one lock; embedding runs outside it.
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
    ) -> None:
        self.path = Path(path) if path is not None else default_memory_dir()
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / INDEX_DIR).mkdir(exist_ok=True)
        self._embeddings_spec = embeddings if embeddings is not None else "local"
        self._embeddings: Embeddings | None = None
        self.embedding_name = embedding_name or embedding_id(self._embeddings_spec)
        self.index_fields = tuple(index_fields)
        self.ranking = ranking or RankingConfig()
        self.dedupe_threshold = dedupe_threshold
        if max_items_per_namespace is None:
            raw = os.environ.get("SMART_AGENT_MEMORY_MAX_ITEMS", "")
            max_items_per_namespace = int(raw) if raw.strip() else DEFAULT_MAX_ITEMS
        self.max_items_per_namespace = max_items_per_namespace or DEFAULT_MAX_ITEMS
        self.clock = clock
        self._lock = threading.RLock()
        self._indexes: dict[str, _NsIndex] = {}
        self._dirty: set[str] = set()
        self._model_checked = False
        self._closed = False
        # Refuses (MemoryUnavailable) a file that is not a memory database, leaving it as it was.
        self._conn = integrity.open_database(self.path / DB_NAME, _SCHEMA)

    # -- lifecycle ----------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._indexes.clear()
                self._conn.close()

    def __enter__(self) -> "FaissMemoryStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FaissMemoryStore(path={str(self.path)!r}, embeddings={self.embedding_name!r})"

    @property
    def embeddings(self) -> Embeddings:
        if self._embeddings is None:
            self._embeddings = load_embeddings(self._embeddings_spec)
        return self._embeddings

    # -- embedding ------------------------------------------------------------
    def _embed(self, texts: Sequence[str]) -> "np.ndarray":
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
            self._conn.executemany("UPDATE items SET vector=? WHERE id=?", [(v, r[0]) for v, r in zip(vecs, rows)])
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

    def _rebuild_index(self, ns_json: str) -> Any:
        import numpy as np

        rows = self._conn.execute(
            "SELECT id, key, vector, json_valid(value) FROM items WHERE ns=? AND vector IS NOT NULL ORDER BY id", (ns_json,)
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

    # -- low-level writes (lock held, inside a transaction) -----------------------
    def _touch_ns(self, ns: tuple[str, ...], ns_json: str) -> _NsIndex:
        self._conn.execute(
            "INSERT OR IGNORE INTO namespaces(ns, ns_path) VALUES (?, ?)", (ns_json, _ns_path(ns))
        )
        entry = self._index_for(ns_json)
        assert entry is not None
        return entry

    def _bump(self, ns_json: str, entry: _NsIndex) -> None:
        self._conn.execute("UPDATE namespaces SET version = version + 1 WHERE ns=?", (ns_json,))
        entry.version = self._conn.execute("SELECT version FROM namespaces WHERE ns=?", (ns_json,)).fetchone()[0]
        self._dirty.add(ns_json)

    def _check_dim(self, vec: "np.ndarray") -> None:
        dim = self._dim()
        if dim is None:
            self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('dim', ?)", (str(int(vec.shape[0])),))
        elif dim != vec.shape[0]:
            raise ValueError(
                f"Embedding dimension {vec.shape[0]} does not match the store's {dim} ({self.path}); "
                "use the same embedding model or another memory folder."
            )

    def _put_row(
        self,
        ns: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        text: str | None,
        vec: "np.ndarray | None",
        now: float,
    ) -> int:
        import numpy as np

        ns_json = _ns_json(ns)
        entry = self._touch_ns(ns, ns_json)
        old = self._conn.execute("SELECT id FROM items WHERE ns=? AND key=?", (ns_json, key)).fetchone()
        blob = None
        if vec is not None:
            self._check_dim(vec)
            blob = _vec_bytes(vec)
        payload = json.dumps(dict(value), ensure_ascii=False)
        if old:
            item_id = old[0]
            self._conn.execute(
                "UPDATE items SET value=?, text=?, vector=?, updated_at=? WHERE id=?",
                (payload, text, blob, now, item_id),
            )
            if entry.index is not None:
                entry.index.remove_ids(np.array([item_id], dtype="int64"))
        else:
            item_id = self._conn.execute(
                "INSERT INTO items(ns, key, value, text, vector, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                (ns_json, key, payload, text, blob, now, now),
            ).lastrowid
        if vec is not None:
            if entry.index is None:
                entry.index = self._new_index(int(vec.shape[0]))
            entry.index.add_with_ids(
                np.ascontiguousarray(vec.reshape(1, -1), dtype="float32"), np.array([item_id], dtype="int64")
            )
        self._bump(ns_json, entry)
        return int(item_id)

    def _delete_rows(self, ns: tuple[str, ...], keys: Sequence[str]) -> list[str]:
        import numpy as np

        ns_json = _ns_json(ns)
        entry = self._index_for(ns_json)
        if entry is None:
            return []
        deleted, ids = [], []
        for key in keys:
            row = self._conn.execute("SELECT id FROM items WHERE ns=? AND key=?", (ns_json, key)).fetchone()
            if row:
                self._conn.execute("DELETE FROM items WHERE id=?", (row[0],))
                ids.append(row[0])
                deleted.append(key)
        if ids:
            if entry.index is not None:
                entry.index.remove_ids(np.array(ids, dtype="int64"))
            self._bump(ns_json, entry)
        return deleted

    def _write_txn(self) -> "_Txn":
        return _Txn(self)

    # -- reads (lock held) --------------------------------------------------------
    def _row_to_item(self, row: Sequence[Any], score: float | None = None, cls: type = SearchItem) -> Item | None:
        """The row as an item; None (recorded as damaged) when its value is not JSON."""
        ns_json, key, value, created, updated = row[:5]
        ns = tuple(json.loads(ns_json))
        if (val := integrity.decode_value(value)) is None:
            integrity.record_bad_value(self._conn, ns_json, key)
            return None
        if cls is Item:
            return Item(value=val, key=key, namespace=ns, created_at=_dt(created), updated_at=_dt(updated))
        return SearchItem(namespace=ns, key=key, value=val, created_at=_dt(created), updated_at=_dt(updated), score=score)

    def _get(self, op: GetOp) -> Item | None:
        row = self._conn.execute(
            "SELECT ns, key, value, created_at, updated_at FROM items WHERE ns=? AND key=?",
            (_ns_json(op.namespace), op.key),
        ).fetchone()
        return self._row_to_item(row, cls=Item) if row else None

    def _namespaces_under(self, prefix: Sequence[str]) -> list[str]:
        p = _ns_path(prefix)
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT ns FROM namespaces WHERE substr(ns_path, 1, ?) = ? ORDER BY ns", (len(p), p)
            ).fetchall()
        ]

    def _candidates(
        self, ns_list: Sequence[str], qvec: "np.ndarray", n: int
    ) -> list[tuple[int, float]]:
        """Nearest (id, cosine) pairs over several namespaces."""
        out: list[tuple[int, float]] = []
        q = qvec.reshape(1, -1).astype("float32")
        for ns_json in ns_list:
            entry = self._index_for(ns_json)
            if entry is None or entry.index is None or entry.index.ntotal == 0:
                continue
            if entry.index.d != q.shape[1]:
                raise ValueError(f"Query dimension {q.shape[1]} does not match the index's {entry.index.d}")
            dists, ids = entry.index.search(q, min(n, entry.index.ntotal))
            out.extend((int(i), float(d)) for d, i in zip(dists[0], ids[0]) if i >= 0)
        out.sort(key=lambda t: -t[1])
        return out[:n] if len(ns_list) > 1 else out

    def _ranked(
        self,
        ns_list: Sequence[str],
        qvec: "np.ndarray",
        need: int,
        flt: Mapping[str, Any] | None,
        min_similarity: float = -1.0,
    ) -> list[Recalled]:
        total = sum(
            (e.index.ntotal if (e := self._index_for(ns)) is not None and e.index is not None else 0) for ns in ns_list
        )
        if total == 0:
            return []
        n = max(self.ranking.candidates, 4 * need)
        now = self.clock()
        while True:
            cands = self._candidates(ns_list, qvec, n)
            sims = dict(cands)
            rows: list[Any] = []
            ids = [i for i, _ in cands]
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                rows.extend(
                    self._conn.execute(
                        f"SELECT ns, key, value, created_at, updated_at, id FROM items WHERE id IN ({','.join('?' * len(chunk))})",
                        chunk,
                    ).fetchall()
                )
            results: list[Recalled] = []
            for row in rows:
                sim = sims[row[5]]
                if sim < min_similarity:
                    continue
                item = self._row_to_item(row)
                if item is None or not match_filter(item.value, flt):
                    continue
                imp = _importance(item.value)
                age = now - row[4]
                rec = self.ranking.recency(age)
                score = self.ranking.score(sim, age, imp)
                item.score = score
                results.append(Recalled(item, sim, rec, imp, score))
            if len(results) >= need or n >= total or not flt:
                break
            n *= 4
        results.sort(key=lambda r: (-r.score, -r.similarity, r.item.key))
        return results

    def _search(self, op: SearchOp, qvec: "np.ndarray | None") -> list[SearchItem]:
        ns_list = self._namespaces_under(op.namespace_prefix)
        if qvec is not None:
            ranked = self._ranked(ns_list, qvec, op.offset + op.limit, op.filter)
            return [r.item for r in ranked[op.offset : op.offset + op.limit]]  # type: ignore[misc]
        p = _ns_path(op.namespace_prefix)
        sql = (
            "SELECT i.ns, i.key, i.value, i.created_at, i.updated_at FROM items i JOIN namespaces n ON n.ns = i.ns "
            "WHERE substr(n.ns_path, 1, ?) = ? ORDER BY i.updated_at DESC, i.id DESC"
        )
        params: list[Any] = [len(p), p]
        if not op.filter:
            sql += " LIMIT ? OFFSET ?"
            params += [op.limit, op.offset]
            return [i for r in self._conn.execute(sql, params).fetchall() if (i := self._row_to_item(r))]  # type: ignore[misc]
        out: list[SearchItem] = []
        skipped = 0
        for r in self._conn.execute(sql, params):
            item = self._row_to_item(r)
            if item is None or not match_filter(item.value, op.filter):
                continue
            if skipped < op.offset:
                skipped += 1
                continue
            out.append(item)  # type: ignore[arg-type]
            if len(out) >= op.limit:
                break
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        nss = [tuple(json.loads(r[0])) for r in self._conn.execute("SELECT DISTINCT ns FROM items")]
        if op.match_conditions:
            nss = [ns for ns in nss if all(_ns_matches(c, ns) for c in op.match_conditions)]
        if op.max_depth is not None:
            nss = sorted({ns[: op.max_depth] for ns in nss})
        else:
            nss = sorted(nss)
        return nss[op.offset : op.offset + op.limit]

    # -- text to embed for a put ----------------------------------------------------
    def _text_for(self, op: PutOp) -> str | None:
        if op.value is None or op.index is False:
            return None
        from langgraph.store.base.embed import get_text_at_path

        fields_ = list(op.index) if op.index else list(self.index_fields)
        parts: list[str] = []
        for f in fields_:
            parts.extend(t for t in get_text_at_path(op.value, f) if t)
        if not parts and op.index is None:
            parts = get_text_at_path(op.value, "$")
        text = "\n".join(parts).strip()
        return text or None

    # -- BaseStore ------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            if isinstance(op, (GetOp, PutOp)):
                _validate_labels(op.namespace)
                if isinstance(op, PutOp) and op.value is not None and not isinstance(op.value, Mapping):
                    raise TypeError("PutOp.value must be a mapping (or None to delete)")
            elif isinstance(op, SearchOp):
                _validate_labels(op.namespace_prefix)
            elif isinstance(op, ListNamespacesOp):
                pass
            else:
                raise TypeError(f"Unknown store operation: {type(op).__name__}")
        # Embed everything first, outside the lock.
        put_texts: dict[int, str] = {}
        query_texts: dict[int, str] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                text = self._text_for(op)
                if text:
                    put_texts[i] = text
            elif isinstance(op, SearchOp) and op.query:
                query_texts[i] = op.query
        vecs: dict[int, Any] = {}
        if query_texts and not put_texts:
            # Don't load an embedding model to search a store that is empty.
            with self._lock:
                if not self._conn.execute("SELECT 1 FROM items WHERE vector IS NOT NULL LIMIT 1").fetchone():
                    query_texts = {}
        order = list(put_texts) + list(query_texts)
        if order:
            texts = [put_texts.get(i) or query_texts[i] for i in order]
            arr = self._embed(texts)
            vecs = {i: arr[j] for j, i in enumerate(order)}
        results: list[Result] = []
        with self._lock:
            self._ensure_open()
            has_writes = any(isinstance(op, PutOp) for op in ops)
            with _Txn(self) if has_writes else _NoTxn():
                now = self.clock()
                for i, op in enumerate(ops):
                    if isinstance(op, GetOp):
                        results.append(self._get(op))
                    elif isinstance(op, SearchOp):
                        if op.query and i not in vecs:
                            results.append([])  # empty store
                        else:
                            results.append(self._search(op, vecs.get(i)))
                    elif isinstance(op, ListNamespacesOp):
                        results.append(self._list_namespaces(op))
                    else:
                        assert isinstance(op, PutOp)
                        ns = tuple(op.namespace)
                        if op.value is None:
                            self._delete_rows(ns, [op.key])
                        else:
                            self._put_row(ns, op.key, op.value, put_texts.get(i), vecs.get(i), now)
                        results.append(None)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _ensure_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

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
                        "SELECT ns, key, value, created_at, updated_at FROM items WHERE id=?", (nearest[0],)
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
                        "SELECT value FROM items WHERE ns=? AND key=?", (ns_json, key)
                    ).fetchone()
                    merges = 0
                    if existing:
                        merges = int((integrity.decode_value(existing[0]) or {}).get("merges", 0) or 0)
                    value = {**base, "text": text, "importance": round(importance, 4), "merges": merges}
                    self._put_row(ns, key, value, text, vec, now)
                    result = WriteResult(key, "created", ns, similarity, merges, importance)
                result.pruned = self._prune(ns, keep=result.key, now=now)
        return result

    def _prune(self, ns: tuple[str, ...], *, keep: str, now: float) -> list[str]:
        ns_json = _ns_json(ns)
        count = self._conn.execute("SELECT COUNT(*) FROM items WHERE ns=?", (ns_json,)).fetchone()[0]
        excess = count - self.max_items_per_namespace
        if excess <= 0:
            return []
        rows = self._conn.execute(
            "SELECT key, iif(json_valid(value), json_extract(value, '$.importance'), NULL), updated_at FROM items "
            "WHERE ns=? AND key != ?",
            (ns_json, keep),
        ).fetchall()

        def worth(r: Sequence[Any]) -> tuple[float, float]:
            try:
                imp = min(1.0, max(0.0, float(r[1]))) if r[1] is not None else DEFAULT_IMPORTANCE
            except (TypeError, ValueError):
                imp = DEFAULT_IMPORTANCE
            return (imp * self.ranking.recency(now - r[2]), r[2])

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
    ) -> list[Recalled]:
        """Top ``k`` memories under ``namespace`` (a prefix) by blended rank."""
        ns = tuple(namespace)
        _validate_labels(ns)
        if k <= 0 or not (query or "").strip():
            return []
        with self._lock:
            self._ensure_open()
            ns_list = self._namespaces_under(ns)
            has_any = any(
                (e := self._index_for(n)) is not None and e.index is not None and e.index.ntotal for n in ns_list
            )
        if not has_any:
            return []  # nothing to search: don't load the model
        qvec = self._embed([query])[0]
        with self._lock:
            self._ensure_open()
            ranked = self._ranked(self._namespaces_under(ns), qvec, k, filter, min_similarity)
        return ranked[:k]

    def forget(self, namespace: Sequence[str], key: str) -> bool:
        """Delete one memory; True when it existed."""
        ns = tuple(namespace)
        _validate_labels(ns)
        with self._lock:
            self._ensure_open()
            with _Txn(self):
                return bool(self._delete_rows(ns, [key]))

    def count(self, namespace_prefix: Sequence[str] = ()) -> int:
        p = _ns_path(namespace_prefix)
        with self._lock:
            self._ensure_open()
            return self._conn.execute(
                "SELECT COUNT(*) FROM items i JOIN namespaces n ON n.ns = i.ns WHERE substr(n.ns_path, 1, ?) = ?",
                (len(p), p),
            ).fetchone()[0]

    def stats(self, namespace_prefix: Sequence[str] = ()) -> dict[str, Any]:
        """Counts and sizes (never loads the embedding model)."""
        p = _ns_path(namespace_prefix)
        with self._lock:
            self._ensure_open()
            rows = self._conn.execute(
                "SELECT i.ns, COUNT(*), SUM(i.vector IS NOT NULL), MIN(i.created_at), MAX(i.updated_at), "
                "SUM(iif(json_valid(i.value), COALESCE(json_extract(i.value, '$.merges'), 0), 0)) FROM items i JOIN namespaces n ON n.ns = i.ns "
                "WHERE substr(n.ns_path, 1, ?) = ? GROUP BY i.ns ORDER BY i.ns",
                (len(p), p),
            ).fetchall()
            meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
            damaged = integrity.damaged_rows(self._conn, p, self._dim(), scan=True)
        files = list((self.path / INDEX_DIR).glob("*.faiss"))
        db_bytes = sum(f.stat().st_size for f in self.path.glob(DB_NAME + "*") if f.is_file())
        return {
            "path": str(self.path),
            "embedding_model": meta.get("embedding_model", self.embedding_name),
            "dim": int(meta["dim"]) if "dim" in meta else None,
            "items": sum(r[1] for r in rows),
            "namespaces": [
                {
                    "namespace": json.loads(r[0]),
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
        with self._lock:
            self._ensure_open()
            return integrity.damaged_rows(self._conn, _ns_path(namespace_prefix), None, scan=False)

    def items(self, namespace_prefix: Sequence[str] = (), *, limit: int = 100, offset: int = 0) -> list[SearchItem]:
        """Memories under a prefix, newest first (no model needed)."""
        return self.search(tuple(namespace_prefix), limit=limit, offset=offset)


class _Txn:
    """A write transaction; on success, persists the indexes it changed."""

    def __init__(self, store: FaissMemoryStore) -> None:
        self.store = store

    def __enter__(self) -> "_Txn":
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


# --------------------------------------------------------------------------- default store
_stores: dict[tuple[str, str], FaissMemoryStore] = {}
_stores_lock = threading.Lock()


def open_store(path: str | os.PathLike[str] | None = None, *, embeddings: str | Embeddings | None = "local") -> FaissMemoryStore:
    """The store in ``path`` (default ``$SMART_AGENT_HOME/memory``), cached per folder and model."""
    folder = Path(path) if path is not None else default_memory_dir()
    key = (str(folder.expanduser().resolve()), embedding_id(embeddings))
    with _stores_lock:
        store = _stores.get(key)
        if store is None or store._closed:
            store = FaissMemoryStore(folder, embeddings=embeddings)
            _stores[key] = store
        return store


def is_memory_store(store: Any) -> bool:
    """A store the memory nodes/tools can use directly (``remember`` + ``recall``)."""
    return store is not None and callable(getattr(store, "remember", None)) and callable(getattr(store, "recall", None))


def close_stores() -> None:
    with _stores_lock:
        for store in _stores.values():
            store.close()
        _stores.clear()
