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

The store is composed of parts that each own their state and the lock around it (has-a):
:class:`~.rows.RowTable` (the SQLite database: ``rows.py``), :class:`~.index_cache.VectorIndex`
(the FAISS indexes: ``index_cache.py``, ``ann.py``) and :class:`~.vectors.Embedder` (the model,
batched, with recent vectors kept: ``vectors.py``). The store itself holds the memory operations
and ``batch``; ``ranking.py`` (``RankingConfig``, results), ``matching.py`` (namespaces, filters)
and ``integrity.py`` (foreign files, damaged rows) serve them. Lock order: the table's, then the
indexes'; the embedder runs outside both.
"""


from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ..config import settings
from ..sessions.store import data_home
from . import background, integrity
from .backend import DEFAULT_DEDUPE_THRESHOLD, DEFAULT_MAX_ITEMS, MERGE_IMPORTANCE_BUMP, is_memory_store
from .embeddings import LOCAL, LOCAL_DIM, embedding_id
from .index_cache import INDEX_DIR, VectorIndex
from .matching import match_filter, ns_json, validate_labels
from .ranking import (
    DEFAULT_IMPORTANCE,
    RankingConfig,
    Recalled,
    WriteResult,
    humanize_age,
    importance_of,
)
from .rows import FIELD_ID_BASE, RowTable, as_datetime
from .vectors import Embedder

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger(__name__)

__all__ = [
    "DB_NAME", "INDEX_DIR", "TEMPORARY", "FaissMemoryStore", "RankingConfig", "Recalled", "WriteResult",
    "humanize_age", "is_memory_store", "match_filter", "user_namespace",
]

MEMORY_NAMESPACE_ROOT = "memories"
DB_NAME = "memory.sqlite3"
#: ``FaissMemoryStore(TEMPORARY)``: a store in a new temporary folder, removed on ``close``.
TEMPORARY = ":memory:"
LEGACY_FIELDS = ("text",)  # the default fields: the whole value is embedded when none is present


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


def texts_at(value: Mapping[str, Any], fields: Sequence[str], *, whole_if_none: bool) -> list[tuple[str, str]]:
    """The ``(path, text)`` pairs a value is indexed on, as LangGraph's stores take them: each field
    (a JSON path such as ``text``, ``sections[*].body`` or ``$``) gives one text, or ``path.N`` for
    each of several; ``whole_if_none``: the whole value as JSON when no field has text."""
    from langgraph.store.base.embed import get_text_at_path

    out: list[tuple[str, str]] = []
    for path in fields:
        plain = value.get(path) if path.isidentifier() else None  # (a top-level field: no path to parse)
        if isinstance(plain, str):
            if plain:
                out.append((path, plain))
            continue
        found = [t for t in get_text_at_path(value, path if path == "$" else _tokens(path)) if t]
        if len(found) > 1:
            out += [(f"{path}.{i}", t) for i, t in enumerate(found)]
        elif found:
            out.append((path, found[0]))
    if not out and whole_if_none:
        out = [("$", t) for t in get_text_at_path(value, "$") if t]
    return out


@functools.lru_cache(maxsize=256)
def _tokens(path: str) -> list[str]:
    from langgraph.store.base.embed import tokenize_path

    return tokenize_path(path)


# --------------------------------------------------------------------------- the store
class FaissMemoryStore(BaseStore):
    """Persistent ``BaseStore`` with FAISS semantic search and memory consolidation.

    ``FaissMemoryStore(path, index={"dims": 384, "embed": embeddings, "fields": ["text"]})`` is
    called as LangGraph's stores are (``InMemoryStore(index=...)``); ``FaissMemoryStore(TEMPORARY,
    index=...)`` (``":memory:"``) keeps nothing after ``close``.

    Args:
        path: folder of the store (created if missing); default ``$SMART_AGENT_HOME/memory``;
            ``":memory:"``: a new temporary folder, removed on ``close``.
        index: LangGraph's index configuration: ``embed`` (an ``Embeddings``, a function
            ``list[str] -> list[list[float]]`` or a ``"provider:model"`` string), ``dims`` and
            ``fields`` (JSON paths, default ``["$"]``, the whole value). One vector per field;
            an item scores its best field. Overrides ``embeddings`` and ``index_fields``.
        embeddings: ``"local"`` (bundled all-MiniLM-L6-v2, offline), ``"provider:model"``
            or any LangChain ``Embeddings``. Loaded on first use.
        index_fields: value fields embedded by ``put`` when the op gives no ``index`` (with the
            default ``("text",)`` the whole JSON value when none is present).
        ranking: blend weights and half-life (:class:`RankingConfig`).
        dedupe_threshold: cosine at or above which :meth:`remember` merges into the
            nearest existing memory instead of adding one.
        max_items_per_namespace: capacity cap applied by :meth:`remember`
            (``$SMART_AGENT_MEMORY_MAX_ITEMS`` or 10,000); ``0``/``None`` from the
            environment means the default.
        clock: time source (tests).
        train_in_background: train a large namespace's IVF index in a thread (default) or in
            the write that makes it large (tests).

    Thread-safe: its parts lock what they own (the table its connection, the indexes their FAISS
    indexes; lock order table -> indexes), the embedder batches concurrent callers on its own
    thread. Writes a run queued on the memory thread (``background.py``) are waited for by every
    other thread's operation and by ``close``, so a process reads its own writes. Several
    processes may share a folder: SQLite serializes writers and each namespace's write version
    tells a process when its cached index is stale.
    """

    supports_ttl = False

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        index: IndexConfig | None = None,
        embeddings: str | Embeddings | None = "local",
        embedding_name: str | None = None,
        index_fields: Sequence[str] = LEGACY_FIELDS,
        ranking: RankingConfig | None = None,
        dedupe_threshold: float = DEFAULT_DEDUPE_THRESHOLD,
        max_items_per_namespace: int | None = None,
        clock: Callable[[], float] = time.time,
        train_in_background: bool = True,
    ) -> None:
        self._temporary = str(path) == TEMPORARY if path is not None else False
        if self._temporary:
            path = tempfile.mkdtemp(prefix="smart-agent-memory-")
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
        self._dims: int | None = None
        self._whole_if_none = tuple(index_fields) == LEGACY_FIELDS
        if index is not None:
            embeddings = _index_embeddings(index.get("embed"))
            self._dims = index.get("dims")
            index_fields = tuple(index.get("fields") or ["$"])
            self._whole_if_none = False
        spec: str | Embeddings = embeddings if embeddings is not None else LOCAL
        self.embedding_name = embedding_name or embedding_id(spec)
        self.index_fields = tuple(index_fields)
        self.ranking = ranking or RankingConfig()
        self.dedupe_threshold = dedupe_threshold
        if max_items_per_namespace is None:
            max_items_per_namespace = settings.memory_max_items(DEFAULT_MAX_ITEMS)
        self.max_items_per_namespace = max_items_per_namespace or DEFAULT_MAX_ITEMS
        self.clock = clock
        self._closed = False
        # Refuses (MemoryUnavailable) a file that is not a memory database, leaving it as it was.
        self.rows = RowTable(self.path / DB_NAME)
        self.vectors = VectorIndex(self.rows, self.path / INDEX_DIR, train_in_background=train_in_background)
        self.embedder = Embedder(spec, self.embedding_name, self.rows)
        self._repairs = list(self.rows.repairs)
        for note in self._repairs:
            log.info("smart-agent memory: %s", note)

    # -- lifecycle ----------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        background.wait()  # a run's queued write to this store
        with self.rows.lock:
            if not self._closed:
                try:
                    self.vectors.flush()  # the indexes' unsaved changes (SQLite has them all already)
                finally:
                    self._closed = True
                    self.vectors.close()
                    self.rows.close()
                    if self._temporary:
                        shutil.rmtree(self.path, ignore_errors=True)

    def flush(self) -> None:
        """Save every index with changes its file does not hold (``close`` does it)."""
        self.vectors.flush()

    def wait_for_training(self, timeout: float | None = None) -> None:
        """Wait for the background training of IVF indexes (benchmarks, tests)."""
        self.vectors.wait_for_training(timeout)

    @contextlib.contextmanager
    def importing(self, namespace: Sequence[str], total: int) -> Iterator[None]:
        """Announce a bulk import of about ``total`` memories into ``namespace`` (``memory import``
        does): the namespace's IVF index is trained once, for that size, while the import goes on,
        instead of several times as it grows. Writes inside are ordinary writes; an import that
        ends short of ``total`` retrains for the size it reached if its lists are far too many."""
        labels = tuple(namespace)
        validate_labels(labels)
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            raise ValueError(f"total must be a whole number >= 0, got {total!r}")
        ns = ns_json(labels)
        self.vectors.expect(ns, total)
        try:
            yield
        finally:
            self.vectors.expect(ns, 0)

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
    def embeddings(self) -> Embeddings:
        return self.embedder.embeddings

    @property
    def index_config(self) -> dict[str, Any]:
        """LangGraph's ``index_config``: ``dims``, ``embed`` (the model, loaded only when used) and
        ``fields``; this store always has one, so ``memory.backend.has_vector_index`` treats every
        store alike."""
        dims = self._dims
        if dims is None and not self._closed:
            dims = self.rows.dim()
        if dims is None and self.embedding_name == LOCAL:
            dims = LOCAL_DIM
        return {"dims": dims, "embed": self.embedder.embeddings, "fields": list(self.index_fields)}

    def _ensure_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write transaction of the table; the indexes' changes are dropped if it rolls back, and
        saved or trained after it commits as they need."""
        self._ensure_open()
        try:
            with self.rows.transaction():
                yield
        except BaseException:
            self.vectors.clear()  # in-memory indexes may hold uncommitted changes
            raise
        self.vectors.committed()

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedder.check_model(self.vectors.clear)
        return self.embedder.embed(texts)

    def _texts(self, value: Mapping[str, Any], fields: Sequence[str] | None) -> list[tuple[str, str]]:
        if fields is None:
            return texts_at(value, self.index_fields, whole_if_none=self._whole_if_none)
        return texts_at(value, fields, whole_if_none=False)

    # -- low-level writes (inside _writing) -------------------------------------------------------
    def _put(
        self,
        labels: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        texts: Sequence[tuple[str, str]],
        vecs: Sequence[np.ndarray],
        now: float,
        pending: dict[str, _Pending] | None = None,
    ) -> int:
        """Write an item; its vectors go to the index at once, or with ``pending`` (a batch) once
        per namespace when the batch applies them (:meth:`_apply`): one index change and one
        version bump for thousands of puts."""
        ns = ns_json(labels)
        if pending is None or ns not in pending:
            self.rows.touch_ns(labels)
            entry = self.vectors.index_for(ns)  # before the write: its catch-up must not see this row
            assert entry is not None
        item_id, added, removed = self.rows.write_item(labels, key, value, texts, vecs, now)
        change = _Pending() if pending is None else pending.setdefault(ns, _Pending())
        change.added += added
        change.vecs += list(vecs[: len(added)])
        change.removed += removed
        change.new_rows += 0 if removed else 1
        if pending is None:
            self._apply({ns: change})
        return item_id

    def _put_many(self, labels: tuple[str, ...], puts: list[tuple[str, Any, Any, Any]], now: float,
                  pending: dict[str, _Pending]) -> None:
        """:meth:`_put` of many items of one namespace at once (a batch's run of single-text puts)."""
        if not puts:
            return
        ns = ns_json(labels)
        if ns not in pending:
            self.rows.touch_ns(labels)
            assert self.vectors.index_for(ns) is not None  # before the write (see _put)
        last = {key: n for n, (key, *_) in enumerate(puts)}  # a key put twice: the last put
        items = [p for n, p in enumerate(puts) if last[p[0]] == n]
        puts.clear()  # (the caller's run: written now)
        _, added, removed = self.rows.write_many(labels, items, now)
        change = pending.setdefault(ns, _Pending())
        change.added += added
        change.vecs += [v for *_, v in items if v is not None]
        change.removed += removed
        change.new_rows += len(items) - sum(1 for i in removed if i < FIELD_ID_BASE)

    def _apply(self, pending: dict[str, _Pending]) -> None:
        for ns, change in pending.items():
            gone = set(change.removed)
            kept = [(i, v) for i, v in zip(change.added, change.vecs, strict=True) if i not in gone]
            made = set(change.added)
            self.vectors.apply(ns, [i for i, _ in kept], [v for _, v in kept], [i for i in gone if i not in made])
            if change.new_rows:
                self.vectors.count_rows(ns, change.new_rows)
        pending.clear()

    def _delete(self, labels: tuple[str, ...], keys: Sequence[str]) -> list[str]:
        ns = ns_json(labels)
        if self.vectors.index_for(ns) is None:
            return []
        deleted, ids = self.rows.delete_keys(labels, keys)
        if deleted:
            self.vectors.apply(ns, [], [], ids)
            self.vectors.count_rows(ns, -len(deleted))
        return deleted

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
        index: Sequence[str] | None = None,
    ) -> WriteResult:
        """Write a memory with consolidation and the capacity cap.

        ``index``: the value's fields its vectors are made from (default ``["text"]``); e.g. a run's
        observation is indexed on its ``task`` (in ``metadata``), whose vector the run's recall
        already computed. If the nearest memory in ``namespace`` has cosine >= ``dedupe_threshold``
        it is updated instead: the newer text replaces the old one, importance
        becomes ``min(1, max(old, new) + 0.05)``, ``merges`` counts the merges and
        ``updated_at`` is now. Then, if the namespace holds more than
        ``max_items_per_namespace`` memories, the least valuable ones
        (lowest ``importance * recency``) are deleted -- never the one just written.
        """
        background.wait()  # writes queued by a run come first
        labels = tuple(namespace)
        validate_labels(labels)
        text = (text or "").strip()
        if not text:
            raise ValueError("A memory needs non-empty text")
        importance = min(1.0, max(0.0, float(importance)))
        base = {"kind": kind, **(dict(metadata) if metadata else {})}
        texts = self._texts({**base, "text": text}, list(index) if index else ["text"]) or [("text", text)]
        vecs = list(self._embed([t for _, t in texts]))
        with self._writing():
            now = self.clock()
            ns = ns_json(labels)
            nearest: tuple[int, float] | None = None
            if key is None and self.rows.ns_row(ns):
                cands = self.vectors.search([ns], vecs[0], 1)
                nearest = cands[0] if cands else None
            similarity = nearest[1] if nearest else None
            if nearest is not None and nearest[1] >= self.dedupe_threshold:
                row = self.rows.row_by_id(nearest[0])
                old = getattr(self.rows.to_item(row), "value", {})  # damaged: the new text repairs it
                merges = int(old.get("merges", 0) or 0) + 1
                new_imp = min(1.0, max(importance_of(old), importance) + MERGE_IMPORTANCE_BUMP)
                value = {**old, **base, "text": text, "importance": round(new_imp, 4), "merges": merges}
                self._put(labels, row[1], value, texts, vecs, now)
                result = WriteResult(row[1], "merged", labels, similarity, merges, new_imp)
            else:
                key = key or uuid.uuid4().hex[:12]
                old_item = self.rows.get(labels, key)  # damaged: rewritten afresh
                merges = int(old_item.value.get("merges", 0)) if old_item is not None else 0
                value = {**base, "text": text, "importance": round(importance, 4), "merges": merges}
                self._put(labels, key, value, texts, vecs, now)
                result = WriteResult(key, "created", labels, similarity, merges, importance)
            result.pruned = self._prune(labels, keep=result.key, now=now)
        return result

    def _prune(self, labels: tuple[str, ...], *, keep: str, now: float) -> list[str]:
        ns = ns_json(labels)
        excess = self.vectors.rows_in(ns) - self.max_items_per_namespace  # (current with SQLite)
        if excess <= 0:
            return []

        def worth(r: Sequence[Any]) -> tuple[float, float]:
            if (updated := integrity.as_time(r[2])) is None:
                return (-1.0, float("-inf"))  # a damaged row goes first
            try:
                imp = min(1.0, max(0.0, float(r[1]))) if r[1] is not None else DEFAULT_IMPORTANCE
            except (TypeError, ValueError):
                imp = DEFAULT_IMPORTANCE
            return (imp * self.ranking.recency(now - updated), updated)

        victims = [r[0] for r in sorted(self.rows.prune_rows(ns, keep), key=worth)[:excess]]
        return self._delete(labels, victims)

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
        labels = tuple(namespace)
        validate_labels(labels)
        if k <= 0 or not (query or "").strip():
            return []
        qvec = query_vector if query_vector is not None else self.query_vector(labels, query)
        if qvec is None:
            return []  # nothing to search
        self._ensure_open()
        with self.rows.lock:
            ranked = self._ranked(self.rows.namespaces_under(labels), qvec, k, filter, min_similarity)
        return ranked[:k]

    @contextlib.contextmanager
    def held_if_free(self) -> Iterator[bool]:
        """For a caller on an event loop, which must not wait: holds the store (its row and index
        locks, both reentrant) and yields True when no other thread holds it, every write
        :func:`background.wait` would wait for has run and the folder's model was checked (the
        check may re-embed every memory); else holds nothing and yields False (the caller then
        does its work in a thread). A recall in this block waits for nothing."""
        held = (
            not self._closed and self.embedder.model_checked and background.caught_up()
            and self.rows.lock.acquire(blocking=False)
        )
        if held and not self.vectors.lock.acquire(blocking=False):
            self.rows.lock.release()
            held = False
        if not held:
            yield False
            return
        try:
            yield True
        finally:
            self.vectors.lock.release()
            self.rows.lock.release()

    def query_vector(self, namespace: Sequence[str], query: str) -> Any:
        """``query`` embedded for a recall under ``namespace``; None (no model loaded) when there is
        nothing to search there."""
        return self.query_vector_later(namespace, query).result()

    def query_vector_later(self, namespace: Sequence[str], query: str) -> Future[Any]:
        """:meth:`query_vector` as a future: the query waits in the embedder's queue and is
        embedded with the other queries waiting there, a few at a time (``vectors.py``)."""
        background.wait()  # writes queued by a run come first
        labels = tuple(namespace)
        validate_labels(labels)
        self._ensure_open()
        if not self.vectors.size(self.rows.namespaces_under(labels)):
            done: Future[Any] = Future()
            done.set_result(None)
            return done
        self.embedder.check_model(self.vectors.clear)
        out: Future[Any] = Future()

        def first(f: Future[Any]) -> None:
            try:
                out.set_result(f.result()[0])
            except BaseException as exc:
                out.set_exception(exc)

        self.embedder.submit([query]).add_done_callback(first)
        return out

    def forget(self, namespace: Sequence[str], key: str) -> bool:
        """Delete one memory; True when it existed."""
        background.wait()  # writes queued by a run come first
        labels = tuple(namespace)
        validate_labels(labels)
        with self._writing():
            return bool(self._delete(labels, [key]))

    def count(self, namespace_prefix: Sequence[str] = ()) -> int:
        background.wait()  # writes queued by a run come first
        self._ensure_open()
        return self.rows.count(namespace_prefix)

    def stats(self, namespace_prefix: Sequence[str] = ()) -> dict[str, Any]:
        """Counts and sizes (never loads the embedding model); the index files are saved first."""
        background.wait()  # writes queued by a run come first
        self._ensure_open()
        with self.rows.lock:
            self.vectors.flush()
            rows = self.rows.namespace_stats(namespace_prefix)
            meta = self.rows.all_meta()
            dim = self.rows.dim()
            damaged = self.rows.damaged(namespace_prefix, scan=True)
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
                    "oldest": as_datetime(r[3]).isoformat() if r[3] else None,
                    "newest": as_datetime(r[4]).isoformat() if r[4] else None,
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
        self._ensure_open()
        return self.rows.damaged(namespace_prefix, scan=False)

    def items(self, namespace_prefix: Sequence[str] = (), *, limit: int = 100, offset: int = 0) -> list[SearchItem]:
        """Memories under a prefix, newest first (no model needed)."""
        return self.search(tuple(namespace_prefix), limit=limit, offset=offset)

    def restore(self, namespace: Sequence[str], records: Sequence[Mapping[str, Any]]) -> list[str]:
        """Write memories as they were (an import): each record's ``key``, ``value`` (with its
        ``text``) and ``created``/``updated`` epoch seconds; embeddings are computed here, in one
        batch. An existing key is replaced; no consolidation, no cap. Returns the keys written."""
        background.wait()  # writes queued by a run come first
        labels = tuple(namespace)
        validate_labels(labels)
        if not records:
            return []
        vecs = self._embed([str(r["value"]["text"]) for r in records])
        with self._writing():
            for rec, vec in zip(records, vecs, strict=True):
                value = {k: v for k, v in rec["value"].items() if k not in ("created_at", "updated_at")}
                text = str(value["text"])
                item_id = self._put(labels, rec["key"], value, [("text", text)], [vec], float(rec["updated"]))
                self.rows.set_created(item_id, float(rec["created"]))
        return [str(r["key"]) for r in records]

    def repair(self, namespace_prefix: Sequence[str] = ()) -> list[str]:
        """Re-embed the damaged rows whose text and value are intact (only a vector was bad:
        a row damaged otherwise, ``integrity.check_row``, is recorded with that reason instead).

        Returns their keys. Timestamps are kept; a row rewritten meanwhile is left alone.
        """
        self._ensure_open()
        rows = self.rows.repairable(namespace_prefix)
        if not rows:
            return []
        fields = {r[0]: self.rows.fields_of(r[0]) for r in rows}
        texts = [r[1] for r in rows] + [f[1] for fs in fields.values() for f in fs]
        vecs = iter(self._embed(texts))
        own = [next(vecs) for _ in rows]
        field_vecs = {item: [(fid, next(vecs)) for fid, _ in fs] for item, fs in fields.items()}
        repaired: list[str] = []
        with self._writing():
            for (item_id, text), vec in zip(rows, own, strict=True):
                row = self.rows.row_by_id(item_id)
                entry = self.vectors.index_for(str(row[0])) if row is not None else None
                # (looked up before the update: the catch-up still skips this row)
                done = self.rows.repair_vector(item_id, text, vec, field_vecs[item_id])
                if done is None or entry is None:
                    continue
                ids = [item_id, *self.rows.field_ids([item_id])]
                self.vectors.apply(done[0], ids, [vec, *(v for _, v in field_vecs[item_id])], [])
                repaired.append(done[1])
        if repaired:
            log.warning("smart-agent memory: re-embedded %d damaged row(s): %s", len(repaired), ", ".join(repaired[:5]))
        return repaired

    # -- reads ------------------------------------------------------------------------
    def _ranked(
        self,
        ns_list: Sequence[str],
        qvec: np.ndarray,
        need: int,
        flt: Mapping[str, Any] | None,
        min_similarity: float = -1.0,
        *,
        by_similarity: bool = False,
    ) -> list[Recalled]:
        """The best ``need`` memories by blended score (or by similarity), most relevant first.

        FAISS gives ``max(ranking.candidates, 4 * need)`` candidates; without a filter only their
        timestamps and importance are read to rank them, and the full rows only of those returned."""
        total = self.vectors.size(ns_list)
        if total == 0:
            return []
        n = max(self.ranking.candidates, 4 * need)
        now = self.clock()
        while True:
            cands = [c for c in self.vectors.search(ns_list, qvec, n) if c[1] >= min_similarity]
            if flt:
                results = self._score(self.rows.full_rows([i for i, _ in cands]), dict(cands), now, flt)
                if len(results) < need and n < total:
                    n *= 4
                    continue
                return _order(results, by_similarity)[:need]
            return self._best(cands, need, now, by_similarity)

    def _score(
        self, rows: Sequence[Any], sims: Mapping[int, float], now: float, flt: Mapping[str, Any] | None
    ) -> list[Recalled]:
        results: list[Recalled] = []
        for row in rows:
            item = self.rows.to_item(row)
            if item is None or not match_filter(item.value, flt):
                continue
            imp = importance_of(item.value)
            age = now - row[4]
            item.score = score = self.ranking.score(sims[row[5]], age, imp)
            results.append(Recalled(item, sims[row[5]], self.ranking.recency(age), imp, score))
        return results

    def _best(
        self, cands: Sequence[tuple[int, float]], need: int, now: float, by_similarity: bool
    ) -> list[Recalled]:
        """Rank candidates on their light columns, then read the full rows of the best ``need``
        (more when a row turns out damaged)."""
        sims = dict(cands)
        light = self.rows.light_rows(list(sims))
        if by_similarity:
            light.sort(key=lambda r: (-sims[r[0]], r[1]))
        else:
            rank = self.ranking
            scored = {r[0]: rank.score(sims[r[0]], now - r[2], importance_of({"importance": r[3]})) for r in light}
            light.sort(key=lambda r: (-scored[r[0]], -sims[r[0]], r[1]))
        out: list[Recalled] = []
        pos = 0
        while len(out) < need and pos < len(light):
            chunk = [r[0] for r in light[pos : pos + need - len(out)]]
            pos += len(chunk)
            rows = {r[5]: r for r in self.rows.full_rows(chunk)}
            out.extend(self._score([rows[i] for i in chunk if i in rows], sims, now, None))
        return _order(out, by_similarity)

    def _search(self, op: SearchOp, qvec: np.ndarray | None) -> list[SearchItem]:
        if qvec is None:
            return self.rows.listing(op.namespace_prefix, op.filter, op.limit, op.offset)
        # Like LangGraph's stores: most similar first, the score is the cosine (recall blends); an
        # item indexed on several fields scores its best one; items without a vector fill a page
        # the indexed ones leave short, with no score.
        ns_list = self.rows.namespaces_under(op.namespace_prefix)
        ranked = self._ranked(ns_list, qvec, op.offset + op.limit, op.filter, by_similarity=True)
        for r in ranked:
            r.item.score = r.similarity
        out = [r.item for r in ranked[op.offset : op.offset + op.limit]]
        if len(out) < op.limit:
            out += self.rows.listing(op.namespace_prefix, op.filter, op.limit - len(out), 0, unindexed=True)
        return out

    # -- BaseStore ------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        background.wait()  # writes queued by a run come first
        ops = list(ops)
        checked: set[tuple[str, ...]] = set()  # (a batch of many puts has few namespaces)
        for op in ops:
            if isinstance(op, (GetOp, PutOp)):
                if not (type(op.namespace) is tuple and op.namespace in checked):
                    validate_labels(op.namespace)  # (then every label is a str: hashable)
                    checked.add(tuple(op.namespace))
                if isinstance(op, PutOp) and op.value is not None and not isinstance(op.value, Mapping):
                    raise TypeError("PutOp.value must be a mapping (or None to delete)")
            elif isinstance(op, SearchOp):
                validate_labels(op.namespace_prefix)
            elif isinstance(op, ListNamespacesOp):
                pass
            else:
                raise TypeError(f"Unknown store operation: {type(op).__name__}")
        self._ensure_open()
        # Embed everything first, outside the locks, in one call.
        put_texts: dict[int, list[tuple[str, str]]] = {}
        query_texts: dict[int, str] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp) and op.value is not None and op.index is not False:
                if texts := self._texts(op.value, None if op.index is None else list(op.index)):
                    put_texts[i] = texts
            elif isinstance(op, SearchOp) and op.query:
                query_texts[i] = op.query
        if query_texts and not put_texts and not self.rows.has_vectors():
            query_texts = {}  # don't load an embedding model to search a store that is empty
        flat = [t for i in put_texts for _, t in put_texts[i]] + list(query_texts.values())
        arr = self._embed(flat) if flat else None
        put_vecs: dict[int, list[Any]] = {}
        query_vecs: dict[int, Any] = {}
        pos = 0
        for i, texts in put_texts.items():
            put_vecs[i] = [arr[pos + j] for j in range(len(texts))] if arr is not None else []
            pos += len(texts)
        for i in query_texts:
            query_vecs[i] = arr[pos] if arr is not None else None
            pos += 1
        results: list[Result] = []
        pending: dict[str, _Pending] = {}
        run: list[tuple[str, Any, Any, Any]] = []  # single-text puts of one namespace, written together
        run_ns: tuple[str, ...] = ()
        with self._writing() if any(isinstance(op, PutOp) for op in ops) else self.rows.lock:
            now = self.clock()
            for i, op in enumerate(ops):
                texts = put_texts.get(i, [])
                if isinstance(op, PutOp) and op.value is not None and len(texts) <= 1:
                    if run and tuple(op.namespace) != run_ns:
                        self._put_many(run_ns, run, now, pending)
                    run_ns = tuple(op.namespace)
                    vec = put_vecs[i][0] if texts else None
                    run.append((op.key, op.value, texts[0] if texts else None, vec))
                    results.append(None)
                    continue
                self._put_many(run_ns, run, now, pending)
                if isinstance(op, GetOp):
                    results.append(self.rows.get(op.namespace, op.key))
                elif isinstance(op, SearchOp):
                    self._apply(pending)  # the puts before it, searchable
                    if op.query and i not in query_vecs:
                        results.append([])  # empty store
                    else:
                        results.append(self._search(op, query_vecs.get(i)))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self.rows.list_namespaces(op))
                else:
                    assert isinstance(op, PutOp)
                    labels = tuple(op.namespace)
                    if op.value is None:
                        self._apply(pending)
                        self._delete(labels, [op.key])
                    else:
                        self._put(labels, op.key, op.value, put_texts.get(i, []), put_vecs.get(i, []), now, pending)
                    results.append(None)
            self._put_many(run_ns, run, now, pending)
            self._apply(pending)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))


@dataclass
class _Pending:
    """A batch's changes to one namespace's index, applied together."""

    added: list[int] = field(default_factory=list)
    vecs: list[Any] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    new_rows: int = 0


def _order(results: list[Recalled], by_similarity: bool) -> list[Recalled]:
    if by_similarity:
        return sorted(results, key=lambda r: (-r.similarity, r.item.key))
    return sorted(results, key=lambda r: (-r.score, -r.similarity, r.item.key))


def _index_embeddings(embed: Any) -> str | Embeddings:
    """LangGraph's ``index["embed"]``: an ``Embeddings``, a ``"provider:model"`` string, or a function."""
    if embed is None or isinstance(embed, (str, Embeddings)):
        return embed or LOCAL
    from langgraph.store.base.embed import ensure_embeddings

    return ensure_embeddings(embed)
