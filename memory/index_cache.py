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
in under the lock and caught up.

:class:`VectorIndex` owns the indexes and the lock around them (a FAISS index is not safe to
search while another thread adds to it); it reads SQLite through the store's
:class:`~smart_agent.memory.rows.RowTable`, always taking the table's lock before its own.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import ann
from .matching import ns_hash
from .rows import FIELD_ID_BASE, RowTable

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger("smart_agent.memory.store")

__all__ = ["INDEX_DIR", "SAVE_EVERY", "NamespaceIndex", "VectorIndex"]

INDEX_DIR = "index"
SAVE_EVERY = 1000  # writes of a namespace between two saves of its index file
SWAP_AFTER = 2000  # journaled vectors left to add under the locks when a trained index is swapped in
REPLAY_ROUNDS = 8  # rounds of catching up outside the locks before the rest is added under them


class NamespaceIndex:
    """One namespace's FAISS index and what it is current with.

    An index read from a file that is current with SQLite is memory-mapped (``mapped``: the file),
    read-only: opening a store and its first recall read only the pages a search touches (about
    16 ms and a few MB at 100,000 memories, instead of reading the whole file). The first change
    reads it into memory. Its ids and the namespace's row count are looked up when first needed.
    """

    def __init__(self, version: int, index: Any, epoch: int = 0, *, mapped: Path | None = None) -> None:
        self.version = version  # the namespace's write version this index is current with
        self.index = index  # ann's IndexIVFFlat | None (no vectors yet)
        self.epoch = epoch  # vectors_epoch it was built in
        self.mapped = mapped
        self.unsaved = 0  # changes since its file was saved
        self.rows: int | None = None  # rows of the namespace (with or without a vector): the cap counts them
        self._ids: set[int] | None = None
        self._fields = 0  # of the ids, vectors of items' other fields (FIELD_ID_BASE and up)

    @property
    def ids(self) -> set[int]:
        """The ids it holds."""
        if self._ids is None:
            self._ids = set(ann.ids_of(self.index).tolist()) if self.index is not None else set()
            self._fields = sum(1 for i in self._ids if i >= FIELD_ID_BASE)
        return self._ids

    @property
    def fields(self) -> int | None:
        """How many of its vectors are items' other fields' (None: its ids are not read yet)."""
        return None if self._ids is None else self._fields

    def _writable(self) -> None:
        """A memory-mapped index read into memory, before its first change."""
        if self.mapped is not None:
            self.index = ann.configure(ann.faiss_module().read_index(str(self.mapped)))
            self.mapped = None

    def add(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        import numpy as np

        if not len(ids):
            return
        held = self.ids
        self._writable()
        vecs = np.ascontiguousarray(vecs, dtype="float32").reshape(len(ids), -1)
        if self.index is None:
            self.index = ann.new_index(int(vecs.shape[1]))
        ann.faiss_module()  # one OpenMP thread in this thread
        self.index.add_with_ids(vecs, ids)
        new = {int(i) for i in ids} - held
        self._fields += sum(1 for i in new if i >= FIELD_ID_BASE)
        held |= new

    def remove(self, ids: np.ndarray) -> None:
        if not len(ids):
            return
        held = self.ids
        gone = {int(i) for i in ids} & held
        if self.index is not None and gone:
            self._writable()
            ann.remove(self.index, ids)
        self._fields -= sum(1 for i in gone if i >= FIELD_ID_BASE)
        held -= gone


class VectorIndex:
    """The per-namespace FAISS indexes of one store folder (a cache of its :class:`RowTable`)."""

    def __init__(self, rows: RowTable, folder: Path, *, train_in_background: bool = True) -> None:
        self.rows = rows
        self.folder = folder  # index/
        self.train_in_background = train_in_background
        self.lock = threading.RLock()
        self._indexes: dict[str, NamespaceIndex] = {}
        self._dirty: set[str] = set()
        self._training: dict[str, threading.Thread] = {}
        # While a namespace trains: the changes made to it meanwhile, replayed on the trained index
        # (None: a change came another way -- another process, a rollback -- so it catches up by ids).
        self._journal: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] | None] = {}
        self._expected: dict[str, int] = {}  # namespace -> the size a bulk import will bring it to
        self._closed = False

    def clear(self) -> None:
        """Forget every cached index (a rolled-back write may have changed them; another model)."""
        with self.lock:
            self._indexes.clear()
            self._dirty.clear()
            self._journal = dict.fromkeys(self._journal)

    def close(self) -> None:
        with self.rows.lock, self.lock:
            self._closed = True
            self._indexes.clear()

    def index_for(self, ns: str) -> NamespaceIndex | None:
        """The namespace's FAISS index, current with SQLite (None: unknown namespace)."""
        with self.rows.lock, self.lock:
            row = self.rows.ns_row(ns)
            if row is None:
                self._indexes.pop(ns, None)
                return None
            version, fname, file_version = row
            cached = self._indexes.get(ns)
            if cached is not None and cached.version == version:
                return cached
            epoch = self.rows.epoch()
            if ns in self._journal:
                self._journal[ns] = None  # changed outside apply(): the trained index catches up by ids
            if cached is not None and cached.epoch == epoch:
                cached.unsaved += self._sync(ns, cached)
                cached.version, cached.rows = version, None
                return cached
            current = file_version == version  # the file holds exactly this version: mapped, no catch-up
            index = self._read_file(fname, mapped=current) if fname else None
            if index is not None:
                entry = NamespaceIndex(file_version, index, epoch, mapped=self.folder / fname if current else None)
                if not current:
                    entry.unsaved = self._sync(ns, entry)
            else:
                index = self._rebuild(ns)
                entry = NamespaceIndex(version, index, epoch)
                index = None  # (rebuilt: saved below)
            entry.version = version
            self._indexes[ns] = entry
            if entry.index is not None and (index is None or entry.unsaved >= SAVE_EVERY):
                # Rebuilt, or a file far behind (short processes that never close the store): the next
                # process reads this one instead, so no catch-up grows past SAVE_EVERY rows.
                self._save(ns, entry)
            self._maybe_train(ns, entry)
            return self._indexes[ns]

    def size(self, ns_list: Sequence[str]) -> int:
        """Vectors the namespaces' indexes hold."""
        return sum(
            (e.index.ntotal if (e := self.index_for(ns)) is not None and e.index is not None else 0) for ns in ns_list
        )

    def _sync(self, ns: str, entry: NamespaceIndex) -> int:
        """Bring an index up to SQLite by ids (removes the gone, adds the new); how many changed."""
        import numpy as np

        want = self.rows.indexed_ids(ns)
        gone = entry.ids - want
        new = sorted(want - entry.ids)
        entry.remove(np.fromiter(gone, dtype="int64", count=len(gone)))
        for start in range(0, len(new), 500):
            ids, vecs = self.rows.vectors(ns, new[start : start + 500])  # damaged: recorded
            if ids:
                entry.add(np.array(ids, dtype="int64"), np.stack(vecs))
        return len(gone) + len(new)

    def _read_file(self, fname: str, *, mapped: bool = False) -> Any:
        faiss = ann.faiss_module()
        fpath = self.folder / fname
        if os.sep in fname or "/" in fname or not fpath.is_file():
            return None
        try:
            index = faiss.read_index(str(fpath), faiss.IO_FLAG_MMAP if mapped else 0)
        except Exception as exc:
            log.warning("smart-agent memory: unreadable index %s (%s); rebuilding", fpath, exc)
            return None
        if not ann.is_ours(index):
            log.warning("smart-agent memory: index %s is not an index of this version; rebuilding", fpath)
            return None
        dim = self.rows.dim()
        if dim is not None and index.d != dim:
            return None
        return ann.configure(index)

    def _rebuild(self, ns: str) -> Any:
        """The namespace's index from SQLite's vectors (exact; a large one is trained in the background)."""
        import numpy as np

        ids, vecs = self.rows.vectors(ns)  # damaged rows: skipped, recorded
        if not ids:
            return None
        return ann.build(vecs[0].shape[0], ids, np.stack(vecs), train=False)

    # -- changes (inside the store's write transaction) ----------------------------------------
    def apply(self, ns: str, added: Sequence[int], vecs: Sequence[np.ndarray], removed: Sequence[int]) -> None:
        """A write to the namespace: FAISS ids removed and added (with their vectors), its version bumped."""
        import numpy as np

        with self.rows.lock, self.lock:
            entry = self.index_for(ns)
            assert entry is not None
            change = (np.array(removed, dtype="int64"), np.array(added, dtype="int64"),
                      np.stack(list(vecs)) if added else None)
            _replay(entry, [change])
            if (journal := self._journal.get(ns)) is not None:
                journal.append(change)
            entry.version = self.rows.bump(ns)
            entry.unsaved += 1
            self._dirty.add(ns)

    def count_rows(self, ns: str, delta: int) -> None:
        with self.lock:
            entry = self._indexes.get(ns)
            if entry is not None and entry.rows is not None:
                entry.rows += delta

    def rows_in(self, ns: str) -> int:
        """Rows of the namespace (the capacity cap counts them)."""
        with self.rows.lock, self.lock:
            entry = self.index_for(ns)
            if entry is None:
                return 0
            if entry.rows is None:
                entry.rows = self.rows.row_count(ns)
            return entry.rows

    def committed(self) -> None:
        """After a write transaction: save the indexes that reached SAVE_EVERY changes, train the grown."""
        with self.rows.lock, self.lock:
            dirty, self._dirty = self._dirty, set()
            for ns in sorted(dirty):
                entry = self._indexes.get(ns)
                if entry is None:
                    continue
                if entry.unsaved >= SAVE_EVERY:
                    self._save(ns, entry)
                self._maybe_train(ns, entry)

    # -- search ------------------------------------------------------------------------------------
    def search(self, ns_list: Sequence[str], qvec: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The nearest items over several namespaces, ``(item id, cosine)``, most similar first: an
        item indexed on several fields scores its best field (max pooling, as LangGraph's stores)."""
        ann.faiss_module()  # one OpenMP thread in this thread
        q = qvec.reshape(1, -1).astype("float32")
        found: list[tuple[int, float]] = []
        with self.rows.lock, self.lock:
            for ns in ns_list:
                entry = self.index_for(ns)
                if entry is None or entry.index is None or entry.index.ntotal == 0:
                    continue
                if entry.index.d != q.shape[1]:
                    raise ValueError(f"Query dimension {q.shape[1]} does not match the index's {entry.index.d}")
                # (an item's other fields' vectors can take places: asked for on top)
                extra = entry.fields if entry.fields is not None else self.rows.field_count(ns)
                dists, ids = entry.index.search(q, min(n + extra, entry.index.ntotal))
                found.extend((int(i), float(d)) for d, i in zip(dists[0], ids[0], strict=True) if i >= 0)
        if any(i >= FIELD_ID_BASE for i, _ in found):
            owner = self.rows.items_of([i for i, _ in found])
            best: dict[int, float] = {}
            for i, sim in found:
                item = owner.get(i)
                if item is not None and sim > best.get(item, -2.0):
                    best[item] = sim
            found = list(best.items())
        found.sort(key=lambda t: -t[1])
        return found[:n]

    # -- files ---------------------------------------------------------------------------------------
    def _save(self, ns: str, entry: NamespaceIndex) -> None:
        """Persist one namespace's index as ``<hash>-<version>.faiss`` (atomic rename) and record it
        (the locks held: the index does not change meanwhile)."""
        if not self.folder.is_dir():  # a file in its place (the store's notices say so): kept in memory only
            entry.unsaved = 0
            return
        fname = self._write_file(ns, entry.index, entry.version)
        if fname is not None:
            self._record(ns, fname, entry.version, entry, entry.unsaved)

    def _write_file(self, ns: str, index: Any, version: int) -> str | None:
        """Write ``index`` as the namespace's file of ``version``: its name ('' for no vectors),
        None when it could not be written (it can always be rebuilt from SQLite)."""
        if index is None or not index.ntotal:
            return ""
        fname = f"{ns_hash(ns)}-{version}.faiss"
        tmp = self.folder / f".{fname}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            ann.faiss_module().write_index(index, str(tmp))
            os.replace(tmp, self.folder / fname)
        except Exception as exc:
            log.warning("smart-agent memory: could not write %s: %s", self.folder / fname, exc)
            tmp.unlink(missing_ok=True)
            return None
        return fname

    def _record(self, ns: str, fname: str, version: int, entry: NamespaceIndex, unsaved: int) -> None:
        """The file is the namespace's current one (unless another process recorded a newer one);
        ``unsaved``: the changes of ``entry`` it holds."""
        with self.rows.lock, self.lock:
            recorded = self.rows.record_file(ns, fname, version)
            entry.unsaved = max(0, entry.unsaved - unsaved)
        h = ns_hash(ns)
        if recorded:
            for old in self.folder.glob(f"{h}-*.faiss"):
                if old.name != fname and old.name.endswith(".faiss") and _version_of(old.name) < version:
                    old.unlink(missing_ok=True)
        elif fname:
            (self.folder / fname).unlink(missing_ok=True)  # another process recorded a newer file

    def flush(self) -> None:
        """Save every index with changes its file does not hold (the store's ``close`` does it)."""
        with self.rows.lock, self.lock:
            if self._closed:
                return
            epoch = self.rows.epoch()
            for ns, entry in list(self._indexes.items()):
                if entry.unsaved and entry.epoch == epoch:
                    self._save(ns, entry)

    # -- training ------------------------------------------------------------------------
    def expect(self, ns: str, total: int) -> None:
        """A bulk import will add about ``total`` vectors to the namespace (0: it is over).

        Its IVF index is then trained once, with the lists of that size, as soon as enough vectors
        have arrived to sample (``TRAIN_POINTS_PER_LIST`` a list), while the import goes on --
        instead of at :data:`~ann.IVF_MIN` and again each time it grows ``RETRAIN_GROWTH`` times,
        the last time only after the import is over."""
        with self.rows.lock, self.lock:
            if total > 0:
                entry = self.index_for(ns)
                held = int(entry.index.ntotal) if entry is not None and entry.index is not None else 0
                self._expected[ns] = held + int(total)
                return
            self._expected.pop(ns, None)
            entry = self._indexes.get(ns)
            if entry is not None:
                self._maybe_train(ns, entry)  # an import that ended short of its size: lists too many

    def _lists_to_train(self, ns: str, index: Any) -> int:
        """How many lists to train the namespace's index with now (0: none)."""
        n = int(index.ntotal)
        expected = self._expected.get(ns, 0)
        if expected > n:
            want = ann.nlist_for(expected)
            enough = n >= max(ann.IVF_MIN, ann.TRAIN_POINTS_PER_LIST * want)
            return want if want > 1 and enough and int(index.nlist) < want else 0
        return ann.nlist_for(n) if ann.needs_training(index) else 0

    def _maybe_train(self, ns: str, entry: NamespaceIndex) -> None:
        if entry.index is None or ns in self._training or not (nlist := self._lists_to_train(ns, entry.index)):
            return
        # What to train on: the vectors the index holds (they mirror SQLite's sound rows), copied
        # under the lock -- no read of every row from SQLite.
        ids, vecs = ann.contents(entry.index)
        snapshot = (entry.version, int(entry.index.d), ids, vecs, nlist)
        if not self.train_in_background:
            self._train(ns, entry.epoch, snapshot)
            return
        self._journal[ns] = []
        thread = threading.Thread(target=self._train, args=(ns, entry.epoch, snapshot),
                                  name="smart-agent-memory-train", daemon=True)
        self._training[ns] = thread
        thread.start()

    def wait_for_training(self, timeout: float | None = None) -> None:
        """Wait for the background training of IVF indexes (benchmarks, tests)."""
        for thread in list(self._training.values()):
            thread.join(timeout)

    def _train(self, ns: str, epoch: int, snapshot: tuple[int, int, Any, Any, int]) -> None:
        """Train an IVF index on a snapshot of the index (no lock held), catch it up with the
        writes made meanwhile (their journal replayed, mostly outside the locks, or by ids), swap
        it in under the locks and save it."""
        try:
            version, dim, ids, vecs, nlist = snapshot
            if len(ids) < ann.IVF_MIN:
                return
            fresh = NamespaceIndex(version, ann.build(dim, ids, vecs, train=True, nlist=nlist), epoch)
            replayed = 0
            for rounds_left in range(REPLAY_ROUNDS, -1, -1):
                with self.rows.lock, self.lock:
                    cur = self._indexes.get(ns)
                    if self._closed or cur is None or cur.epoch != epoch or self.rows.epoch() != epoch:
                        return
                    journal = self._journal.get(ns)
                    todo = journal[replayed:] if journal is not None else []
                    if journal is None or not rounds_left or sum(len(new) for _, new, _ in todo) <= SWAP_AFTER:
                        # The rest under the locks, then swapped in.
                        fresh.unsaved = 1 + (_replay(fresh, todo) if journal is not None else self._sync(ns, fresh))
                        fresh.version, fresh.rows = cur.version, cur.rows
                        self._indexes[ns] = fresh
                        # Saved from a copy, outside the locks: writes go on while the file is written.
                        copy = ann.faiss_module().clone_index(fresh.index) if self.folder.is_dir() else None
                        saved_version, unsaved = fresh.version, fresh.unsaved
                        break
                    replayed = len(journal)
                _replay(fresh, todo)  # (fresh is no one else's yet: no lock needed)
            if copy is not None and (fname := self._write_file(ns, copy, saved_version)) is not None:
                self._record(ns, fname, saved_version, fresh, unsaved)
            log.info("smart-agent memory: %s searches an IVF index of %d lists", ns, fresh.index.nlist)
        except Exception as exc:  # the exact index keeps answering
            log.warning("smart-agent memory: training the index of %s failed: %s", ns, exc)
        finally:
            self._journal.pop(ns, None)  # (first: no new training of ns starts before its own pop)
            self._training.pop(ns, None)


def _replay(entry: NamespaceIndex, changes: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray | None]]) -> int:
    """Apply journaled changes to an index in their order; how many."""
    for gone, new, arr in changes:
        entry.remove(gone)
        if arr is not None:
            entry.add(new, arr)
    return len(changes)


def _version_of(fname: str) -> int:
    """The write version in an index file's name (``<hash>-<version>.faiss``); -1 when none."""
    try:
        return int(fname.rsplit("-", 1)[1].split(".", 1)[0])
    except (IndexError, ValueError):
        return -1
