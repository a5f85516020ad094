"""The memory store's FAISS indexes: one per namespace, a cache of SQLite kept in memory.

SQLite is the source of truth. A write goes to SQLite and to the in-memory index; the index
file (``index/<ns-hash>-<version>.faiss``) is saved only on ``close``/``flush``, every
:data:`SAVE_EVERY` writes of a namespace, after a rebuild and after training, never per write.

The namespace's write ``version`` (bumped by every write, in SQLite) is the staleness stamp.
An index whose version is the namespace's is used as it is; otherwise -- another process
wrote, or the file is some writes behind -- it catches up by the difference between the ids it
holds and SQLite's (:meth:`_IndexCache._sync`): a row's vector never changes under its id (a
rewrite inserts a new row), so the id sets tell the whole difference. A missing, unreadable or
foreign file is rebuilt from SQLite; re-embedding with another model starts a new
``vectors_epoch``, which no cached index survives.

Large namespaces get a trained IVF index (``ann.py``), built by a background thread from a
snapshot read through its own connection while the exact index keeps answering, then swapped
in under the lock and caught up. A mixin of :class:`~smart_agent.memory.store.FaissMemoryStore`
(through ``vectors.py``); the methods that touch SQLite are called with the store's lock held.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import ann, integrity
from .matching import _ns_hash

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger("smart_agent.memory.store")

INDEX_DIR = "index"
SAVE_EVERY = 1000  # writes of a namespace between two saves of its index file


@dataclass
class _NsIndex:
    version: int  # the namespace's write version this index is current with
    index: Any  # ann's IndexIVFFlat | None (no vectors yet)
    epoch: int = 0  # vectors_epoch it was built in
    ids: set[int] = field(default_factory=set)  # the ids it holds
    rows: int = 0  # rows of the namespace (with or without a vector): the capacity cap counts them
    unsaved: int = 0  # changes since its file was saved

    def add(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        import numpy as np

        ann.faiss_module()  # one OpenMP thread in this thread
        self.index.add_with_ids(np.ascontiguousarray(vecs, dtype="float32").reshape(len(ids), -1), ids)
        self.ids.update(int(i) for i in ids)

    def remove(self, ids: np.ndarray) -> None:
        if self.index is not None and len(ids):
            ann.remove(self.index, ids)
        self.ids.difference_update(int(i) for i in ids)


def _meta_int(row: Any) -> int | None:
    """A number the ``meta`` table holds as text; None when missing or damaged."""
    try:
        return int(row[0]) if row else None
    except (TypeError, ValueError):
        return None


class _IndexCache:
    """Per-namespace FAISS indexes of a ``FaissMemoryStore`` (attributes set by its ``__init__``)."""

    path: Path
    _db_path: Path
    _lock: threading.RLock
    _indexes: dict[str, _NsIndex]
    _dirty: set[str]
    _training: dict[str, threading.Thread]
    train_in_background: bool
    _closed: bool
    _conn: sqlite3.Connection

    def _dim(self) -> int | None:
        """The stored vectors' size (None: unknown, or a damaged record the next write replaces)."""
        row = self._conn.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        dim = _meta_int(row)
        return dim if dim is not None and 0 < dim <= 65_536 else None

    def _check_dim(self, vec: np.ndarray) -> None:
        dim = self._dim()
        if dim is None:
            self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('dim', ?)", (str(int(vec.shape[0])),))
        elif dim != vec.shape[0]:
            raise ValueError(
                f"Embedding dimension {vec.shape[0]} does not match the store's {dim} ({self.path}); "
                "use the same embedding model or another memory folder."
            )

    def _ns_row(self, ns_json: str) -> tuple[int, str, int] | None:
        return self._conn.execute(
            "SELECT version, file, file_version FROM namespaces WHERE ns=?", (ns_json,)
        ).fetchone()

    def _epoch(self) -> int:
        """The vectors' generation: re-embedding everything (another model) starts a new one."""
        row = self._conn.execute("SELECT value FROM meta WHERE key='vectors_epoch'").fetchone()
        return _meta_int(row) or 0

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
        epoch = self._epoch()
        if cached is not None and cached.epoch == epoch:
            cached.unsaved += self._sync(ns_json, cached)
            cached.version, cached.rows = version, self._row_count(ns_json)
            return cached
        index = self._read_index_file(fname) if fname else None
        if index is not None:
            entry = _NsIndex(file_version, index, epoch, set(ann.ids_of(index).tolist()))
            entry.unsaved = self._sync(ns_json, entry)
        else:
            entry = _NsIndex(version, self._rebuild_index(ns_json), epoch)
            entry.ids = set(ann.ids_of(entry.index).tolist()) if entry.index is not None else set()
        entry.version, entry.rows = version, self._row_count(ns_json)
        self._indexes[ns_json] = entry
        if entry.index is not None and (index is None or entry.unsaved >= SAVE_EVERY):
            # Rebuilt, or a file far behind (short processes that never close the store): the next
            # process reads this one instead, so no catch-up grows past SAVE_EVERY rows.
            self._save(ns_json, entry)
        self._maybe_train(ns_json, entry)
        return self._indexes[ns_json]

    def _row_count(self, ns_json: str) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM items WHERE ns=?", (ns_json,)).fetchone()[0])

    def _sync(self, ns_json: str, entry: _NsIndex) -> int:
        """Bring an index up to SQLite by ids (removes the gone, adds the new); how many changed."""
        import numpy as np

        want = {
            r[0]
            for r in self._conn.execute(
                "SELECT id FROM items WHERE ns=? AND vector IS NOT NULL AND id NOT IN (SELECT id FROM damaged)",
                (ns_json,),
            )
        }
        gone = entry.ids - want
        new = sorted(want - entry.ids)
        entry.remove(np.fromiter(gone, dtype="int64", count=len(gone)))
        for start in range(0, len(new), 500):
            chunk = new[start : start + 500]
            rows = self._conn.execute(
                f"SELECT id, key, vector, json_valid(value) FROM items WHERE id IN ({','.join('?' * len(chunk))}) "
                "ORDER BY id",
                chunk,
            ).fetchall()
            ids, vecs = integrity.sound_vectors(self._conn, ns_json, rows, self._dim())  # damaged: recorded
            if ids:
                if entry.index is None:
                    entry.index = ann.new_index(int(vecs[0].shape[0]))
                entry.add(np.array(ids, dtype="int64"), np.stack(vecs))
        return len(gone) + len(new)

    def _read_index_file(self, fname: str) -> Any:
        faiss = ann.faiss_module()
        fpath = self.path / INDEX_DIR / fname
        if os.sep in fname or "/" in fname or not fpath.is_file():
            return None
        try:
            index = faiss.read_index(str(fpath))
        except Exception as exc:
            log.warning("smart-agent memory: unreadable index %s (%s); rebuilding", fpath, exc)
            return None
        if not ann.is_ours(index):
            log.warning("smart-agent memory: index %s is not an index of this version; rebuilding", fpath)
            return None
        dim = self._dim()
        if dim is not None and index.d != dim:
            return None
        return ann.configure(index)

    def _rebuild_index(self, ns_json: str) -> Any:
        """The namespace's index from SQLite's vectors (exact; a large one is trained in the background)."""
        import numpy as np

        rows = self._conn.execute(
            "SELECT id, key, vector, json_valid(value) FROM items WHERE ns=? AND vector IS NOT NULL ORDER BY id",
            (ns_json,),
        ).fetchall()
        ids, vecs = integrity.sound_vectors(self._conn, ns_json, rows, self._dim())  # damaged rows: skipped, recorded
        if not ids:
            return None
        return ann.build(vecs[0].shape[0], ids, np.stack(vecs), train=False)

    def _bump(self, ns_json: str, entry: _NsIndex) -> None:
        self._conn.execute("UPDATE namespaces SET version = version + 1 WHERE ns=?", (ns_json,))
        entry.version = self._conn.execute("SELECT version FROM namespaces WHERE ns=?", (ns_json,)).fetchone()[0]
        entry.unsaved += 1
        self._dirty.add(ns_json)

    def _after_commit(self, dirty: set[str]) -> None:
        """After a write transaction: save the indexes that reached SAVE_EVERY changes, train the grown."""
        for ns_json in sorted(dirty):
            entry = self._indexes.get(ns_json)
            if entry is None:
                continue
            if entry.unsaved >= SAVE_EVERY:
                self._save(ns_json, entry)
            self._maybe_train(ns_json, entry)

    def _save(self, ns_json: str, entry: _NsIndex) -> None:
        """Persist one namespace's index as ``<hash>-<version>.faiss`` (atomic rename) and record it."""
        h = _ns_hash(ns_json)
        fname = ""
        folder = self.path / INDEX_DIR
        version, index = entry.version, entry.index
        if not folder.is_dir():  # a file in its place (the store's notices say so): kept in memory only
            entry.unsaved = 0
            return
        if index is not None and index.ntotal:
            faiss = ann.faiss_module()
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
            "UPDATE namespaces SET file=?, file_version=? WHERE ns=? AND file_version <= ?",
            (fname, version, ns_json, version),
        )
        entry.unsaved = 0
        if cur.rowcount:
            for old in folder.glob(f"{h}-*.faiss"):
                if old.name != fname:
                    old.unlink(missing_ok=True)
        elif fname:
            (folder / fname).unlink(missing_ok=True)  # another process recorded a newer file

    def flush(self) -> None:
        """Save every index with changes its file does not hold (``close`` does it)."""
        with self._lock:
            if self._closed:
                return
            epoch = self._epoch()
            for ns_json, entry in list(self._indexes.items()):
                if entry.unsaved and entry.epoch == epoch:
                    self._save(ns_json, entry)

    # -- training ------------------------------------------------------------------------
    def _maybe_train(self, ns_json: str, entry: _NsIndex) -> None:
        if entry.index is None or ns_json in self._training or not ann.needs_training(entry.index):
            return
        if not self.train_in_background:
            self._train(ns_json, entry.epoch)
            return
        thread = threading.Thread(
            target=self._train, args=(ns_json, entry.epoch), name="smart-agent-memory-train", daemon=True
        )
        self._training[ns_json] = thread
        thread.start()

    def wait_for_training(self, timeout: float | None = None) -> None:
        """Wait for the background training of IVF indexes (benchmarks, tests)."""
        for thread in list(self._training.values()):
            thread.join(timeout)

    def _train(self, ns_json: str, epoch: int) -> None:
        """Train an IVF index on a snapshot of SQLite (its own read connection, no lock held), then
        swap it in under the lock, caught up with the writes made meanwhile, and save it."""
        import numpy as np

        try:
            snapshot = _snapshot(self._db_path, ns_json)
            if snapshot is None:
                return
            version, dim, ids, vecs = snapshot
            if len(ids) < ann.IVF_MIN:
                return
            index = ann.build(dim, ids, np.stack(vecs), train=True)
            with self._lock:
                cur = self._indexes.get(ns_json)
                if self._closed or cur is None or cur.epoch != epoch or self._epoch() != epoch:
                    return
                fresh = _NsIndex(version, index, epoch, set(ids))
                self._sync(ns_json, fresh)
                fresh.version, fresh.rows = cur.version, cur.rows
                self._indexes[ns_json] = fresh
                self._save(ns_json, fresh)
            log.info("smart-agent memory: %s searches an IVF index of %d lists", ns_json, index.nlist)
        except Exception as exc:  # the exact index keeps answering
            log.warning("smart-agent memory: training the index of %s failed: %s", ns_json, exc)
        finally:
            self._training.pop(ns_json, None)


def _snapshot(db_path: Path, ns_json: str) -> tuple[int, int, list[int], list[Any]] | None:
    """``(version, dim, ids, vectors)`` of a namespace's sound rows, read in one transaction."""
    conn = sqlite3.connect(str(db_path), timeout=30.0)
    try:
        conn.execute("BEGIN")
        version = conn.execute("SELECT version FROM namespaces WHERE ns=?", (ns_json,)).fetchone()
        dim_row = conn.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        rows = conn.execute(
            "SELECT id, vector FROM items WHERE ns=? AND vector IS NOT NULL AND json_valid(value) "
            "AND id NOT IN (SELECT id FROM damaged) ORDER BY id",
            (ns_json,),
        ).fetchall()
        conn.execute("COMMIT")
    finally:
        conn.close()
    if version is None or dim_row is None:
        return None
    dim = int(dim_row[0])
    ids, vecs = [], []
    for item_id, blob in rows:
        vec, _ = integrity.check_vector(blob, dim)
        if vec is not None:  # a damaged one: the catch-up under the lock records it
            ids.append(int(item_id))
            vecs.append(vec)
    return int(version[0]), dim, ids, vecs
