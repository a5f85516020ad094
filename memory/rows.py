"""The memory store's row table: the SQLite database, the source of truth.

:class:`RowTable` owns the connection and the lock that serializes its use: every method takes
the lock itself (it is reentrant, so :meth:`RowTable.transaction` can span several calls). It
knows rows, namespaces and the ``meta`` values, and checks every row it reads
(``integrity.py``); it knows nothing of FAISS or of embedding models.

Tables (``SCHEMA``): ``items`` (one row per memory: namespace, key, JSON value, the first indexed
text and its vector), ``field_vectors`` (the vectors of an item's other indexed texts: a document
indexed on several fields has one vector per field, as in LangGraph's stores), ``namespaces``
(write version, current index file), ``meta`` (embedding model, dimension, vectors epoch) and
``damaged`` (rows skipped as corrupt, ``integrity.py``).

FAISS ids: an item's own vector is searched under ``items.id``; a ``field_vectors`` row under
``FIELD_ID_BASE + field_vectors.id`` (:func:`item_of` maps an id back to its item only through
the table, since the base is far above any item id).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.store.base import Item, ListNamespacesOp, SearchItem

from . import integrity
from .matching import match_filter, ns_json, ns_matches, ns_path

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["FIELD_ID_BASE", "SCHEMA", "RowTable", "as_datetime", "vector_bytes"]

#: FAISS ids from here on are ``field_vectors`` rows (items' ids stay far below: 2**48).
FIELD_ID_BASE = 1 << 48

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS field_vectors (
    id INTEGER PRIMARY KEY AUTOINCREMENT,   -- the FAISS id is FIELD_ID_BASE + id
    item INTEGER NOT NULL,                  -- items.id
    path TEXT NOT NULL,                     -- the indexed field ('.N' per text of a list)
    text TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS field_vectors_item ON field_vectors (item);
CREATE TRIGGER IF NOT EXISTS field_vectors_gone AFTER DELETE ON items
    BEGIN DELETE FROM field_vectors WHERE item = old.id; END;
"""


def as_datetime(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def vector_bytes(vec: np.ndarray) -> bytes:
    """A vector as the table stores it: little-endian float32."""
    import numpy as np

    return np.asarray(vec, dtype="<f4").tobytes()


def _meta_int(row: Any) -> int | None:
    """A number the ``meta`` table holds as text; None when missing or damaged."""
    try:
        return int(row[0]) if row else None
    except (TypeError, ValueError):
        return None


def _no_time(ts: Any) -> bool:
    return integrity.as_time(ts) is None


def _kept_time(old: tuple[int, Any] | None, now: float) -> float:
    """A rewritten item keeps its creation time (a damaged one: now)."""
    return old[1] if old is not None and integrity.as_time(old[1]) is not None else now


_VALUE_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)  # a value as the table stores it


def _marks(n: int) -> str:
    return ",".join("?" * n)


class RowTable:
    """The SQLite database of one store folder, and the lock around its one connection.

    Refuses (``integrity.MemoryUnavailable``) a file that is not a memory database, leaving it
    as it was; repairs the ``namespaces`` table from the items on open (``repairs`` says what).
    """

    def __init__(self, db_path: Path) -> None:
        self.path = db_path
        self.lock = threading.RLock()
        self._known_dim = -1  # the dimension write_item checked last in this transaction
        self.conn = integrity.open_database(db_path, SCHEMA)
        try:
            self.repairs = [f"{db_path}: {note}" for note in integrity.check_namespaces(self.conn)]
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE``: SQLite serializes writers across processes);
        the lock is held throughout, so a caller's reads inside it see one state."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            self._known_dim = -1  # (another process may have changed the model since)
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    # -- meta ---------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        with self.lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.lock:
            self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def all_meta(self) -> dict[str, Any]:
        with self.lock:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def dim(self) -> int | None:
        """The stored vectors' size (None: unknown, or a damaged record the next write replaces)."""
        with self.lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        dim = _meta_int(row)
        return dim if dim is not None and 0 < dim <= 65_536 else None

    def check_dim(self, vec: np.ndarray) -> None:
        dim = self.dim()
        if dim is None:
            self.set_meta("dim", str(int(vec.shape[0])))
        elif dim != vec.shape[0]:
            raise ValueError(
                f"Embedding dimension {vec.shape[0]} does not match the store's {dim} ({self.path.parent}); "
                "use the same embedding model or another memory folder."
            )

    def forget_dim(self) -> None:
        with self.lock:
            self.conn.execute("DELETE FROM meta WHERE key='dim'")

    def epoch(self) -> int:
        """The vectors' generation: re-embedding everything (another model) starts a new one."""
        with self.lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key='vectors_epoch'").fetchone()
        return _meta_int(row) or 0

    def has_vectors(self) -> bool:
        with self.lock:
            return self.conn.execute("SELECT 1 FROM items WHERE vector IS NOT NULL LIMIT 1").fetchone() is not None

    # -- namespaces -----------------------------------------------------------------------
    def ns_row(self, ns: str) -> tuple[int, str, int] | None:
        """``(version, file, file_version)`` of a namespace (its JSON), None when unknown."""
        with self.lock:
            return self.conn.execute(
                "SELECT version, file, file_version FROM namespaces WHERE ns=?", (ns,)
            ).fetchone()

    def touch_ns(self, labels: Sequence[str]) -> str:
        ns = ns_json(labels)
        with self.lock:
            self.conn.execute("INSERT OR IGNORE INTO namespaces(ns, ns_path) VALUES (?, ?)", (ns, ns_path(labels)))
        return ns

    def bump(self, ns: str) -> int:
        """A write to the namespace: its new write version."""
        with self.lock:
            self.conn.execute("UPDATE namespaces SET version = version + 1 WHERE ns=?", (ns,))
            return int(self.conn.execute("SELECT version FROM namespaces WHERE ns=?", (ns,)).fetchone()[0])

    def record_file(self, ns: str, fname: str, version: int) -> bool:
        """The namespace's index file is ``fname`` at ``version``; False when a newer one is recorded."""
        with self.lock:
            cur = self.conn.execute(
                "UPDATE namespaces SET file=?, file_version=? WHERE ns=? AND file_version <= ?",
                (fname, version, ns, version),
            )
        return bool(cur.rowcount)

    def namespaces_under(self, prefix: Sequence[str]) -> list[str]:
        p = ns_path(prefix)
        with self.lock:
            return [
                r[0]
                for r in self.conn.execute(
                    "SELECT ns FROM namespaces WHERE substr(ns_path, 1, ?) = ? ORDER BY ns", (len(p), p)
                ).fetchall()
            ]

    def row_count(self, ns: str) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM items WHERE ns=?", (ns,)).fetchone()[0])

    def list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        with self.lock:
            rows = self.conn.execute("SELECT DISTINCT ns FROM items").fetchall()
        found = (integrity.namespace_labels(r[0]) for r in rows)
        nss = [ns for ns in found if ns is not None]  # (a damaged one: its rows are damaged)
        if op.match_conditions:
            nss = [ns for ns in nss if all(ns_matches(c, ns) for c in op.match_conditions)]
        nss = sorted({ns[: op.max_depth] for ns in nss}) if op.max_depth is not None else sorted(nss)
        return nss[op.offset : op.offset + op.limit]

    # -- vectors (for the FAISS indexes) ------------------------------------------------------
    def indexed_ids(self, ns: str) -> set[int]:
        """The FAISS ids a current index of the namespace holds: its sound items' vectors and
        their other fields' vectors."""
        with self.lock:
            ids = {
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM items WHERE ns=? AND vector IS NOT NULL AND id NOT IN (SELECT id FROM damaged)",
                    (ns,),
                )
            }
            ids.update(
                FIELD_ID_BASE + r[0]
                for r in self.conn.execute(
                    "SELECT f.id FROM items i JOIN field_vectors f ON f.item = i.id WHERE i.ns=? "
                    "AND i.vector IS NOT NULL AND i.id NOT IN (SELECT id FROM damaged)",
                    (ns,),
                )
            )
        return ids

    def vectors(self, ns: str, ids: Sequence[int] | None = None) -> tuple[list[int], list[np.ndarray]]:
        """The sound vectors of the namespace (or of those FAISS ``ids``), in id order; a damaged
        one is recorded (its item) and left out."""
        with self.lock:
            dim = self.dim()
            if ids is None:
                rows = self.conn.execute(
                    "SELECT id, key, vector, json_valid(value) FROM items WHERE ns=? AND vector IS NOT NULL "
                    "ORDER BY id",
                    (ns,),
                ).fetchall()
                fields = self.conn.execute(
                    "SELECT f.id, i.key, f.vector, json_valid(i.value), i.id FROM items i JOIN field_vectors f "
                    "ON f.item = i.id WHERE i.ns=? AND i.vector IS NOT NULL ORDER BY f.id",
                    (ns,),
                ).fetchall()
            else:
                own = [i for i in ids if i < FIELD_ID_BASE]
                extra = [i - FIELD_ID_BASE for i in ids if i >= FIELD_ID_BASE]
                rows, fields = [], []
                for start in range(0, len(own), 500):
                    chunk = own[start : start + 500]
                    rows += self.conn.execute(
                        f"SELECT id, key, vector, json_valid(value) FROM items WHERE id IN ({_marks(len(chunk))}) "
                        "ORDER BY id",
                        chunk,
                    ).fetchall()
                for start in range(0, len(extra), 500):
                    chunk = extra[start : start + 500]
                    fields += self.conn.execute(
                        "SELECT f.id, i.key, f.vector, json_valid(i.value), i.id FROM field_vectors f JOIN items i "
                        f"ON i.id = f.item WHERE f.id IN ({_marks(len(chunk))}) ORDER BY f.id",
                        chunk,
                    ).fetchall()
            out_ids, vecs = integrity.sound_vectors(self.conn, ns, rows, dim)  # damaged rows: recorded
            if fields:
                bad_items = set()
                for fid, key, blob, json_ok, item in fields:
                    vec, reason = integrity.check_vector(blob, dim) if dim else (None, "vector size unknown")
                    if vec is None or not json_ok:
                        bad_items.add((int(item), str(key), f"{reason or 'value is not valid JSON'} (another field)"))
                        continue
                    out_ids.append(FIELD_ID_BASE + int(fid))
                    vecs.append(vec)
                if bad_items:
                    integrity.record_damaged(self.conn, ns, sorted(bad_items))
                    bad = {b[0] for b in bad_items}
                    keep = [
                        (i, v) for i, v in zip(out_ids, vecs, strict=True)
                        if (i if i < FIELD_ID_BASE else self._field_item(i)) not in bad
                    ]
                    out_ids, vecs = [i for i, _ in keep], [v for _, v in keep]
        return out_ids, vecs

    def field_count(self, ns: str) -> int:
        """How many vectors of items' other fields the namespace has."""
        with self.lock:
            if self.conn.execute("SELECT 1 FROM field_vectors LIMIT 1").fetchone() is None:
                return 0
            return int(
                self.conn.execute(
                    "SELECT COUNT(*) FROM items i JOIN field_vectors f ON f.item = i.id WHERE i.ns=?", (ns,)
                ).fetchone()[0]
            )

    def _field_item(self, faiss_id: int) -> int:
        row = self.conn.execute("SELECT item FROM field_vectors WHERE id=?", (faiss_id - FIELD_ID_BASE,)).fetchone()
        return int(row[0]) if row else -1

    def items_of(self, faiss_ids: Sequence[int]) -> dict[int, int]:
        """FAISS id -> item id (an item's own id is its own; a field vector's through the table)."""
        out = {i: i for i in faiss_ids if i < FIELD_ID_BASE}
        extra = [i - FIELD_ID_BASE for i in faiss_ids if i >= FIELD_ID_BASE]
        if extra:
            with self.lock:
                for start in range(0, len(extra), 500):
                    chunk = extra[start : start + 500]
                    for fid, item in self.conn.execute(
                        f"SELECT id, item FROM field_vectors WHERE id IN ({_marks(len(chunk))})", chunk
                    ):
                        out[FIELD_ID_BASE + int(fid)] = int(item)
        return out

    def field_ids(self, item_ids: Sequence[int]) -> list[int]:
        """The FAISS ids of these items' other fields' vectors."""
        out: list[int] = []
        with self.lock:
            for start in range(0, len(item_ids), 500):
                chunk = list(item_ids[start : start + 500])
                out += [
                    FIELD_ID_BASE + int(r[0])
                    for r in self.conn.execute(
                        f"SELECT id FROM field_vectors WHERE item IN ({_marks(len(chunk))})", chunk
                    )
                ]
        return out

    # -- writes (inside a transaction) -------------------------------------------------------
    def write_item(
        self,
        labels: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        texts: Sequence[tuple[str, str]],
        vecs: Sequence[np.ndarray],
        now: float,
    ) -> tuple[int, list[int], list[int]]:
        """Insert or replace an item with its indexed ``(path, text)`` pairs and their vectors.

        The namespace's row must exist (:meth:`touch_ns`). Returns ``(item id, FAISS ids added,
        FAISS ids removed)``. A rewrite is a new row (a new id):
        a row's vector never changes under its id, so another process's index catches up by ids.
        """
        ns = ns_json(labels)
        # The store writes no row it would read as damaged (integrity.check_row).
        try:
            payload = _VALUE_JSON.encode(dict(value))
        except (ValueError, RecursionError) as exc:  # NaN/Infinity, nesting past Python's recursion limit
            raise ValueError(f"Cannot store {key!r} in {tuple(labels)}: the value is not JSON ({exc})") from None
        if problem := integrity.value_problem(payload):
            raise ValueError(f"Cannot store {key!r} in {tuple(labels)}: {problem}")
        with self.lock:
            for vec in vecs[:1]:
                if vec.shape[0] != self._known_dim:
                    self.check_dim(vec)
                    self._known_dim = int(vec.shape[0])
            old = self.conn.execute("SELECT id, created_at FROM items WHERE ns=? AND key=?", (ns, key)).fetchone()
            created, removed = now, []
            if old:
                created = old[1] if integrity.as_time(old[1]) is not None else now  # (damaged: now)
                removed = [int(old[0]), *self.field_ids([int(old[0])])]
                self.conn.execute("DELETE FROM items WHERE id=?", (old[0],))
            first_text, first_blob = (texts[0][1], vector_bytes(vecs[0])) if texts else (None, None)
            item_id = self.conn.execute(
                "INSERT INTO items(ns, key, value, text, vector, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                (ns, key, payload, first_text, first_blob, created, now),
            ).lastrowid
            assert item_id is not None
            added = [int(item_id)] if texts else []
            for (path, text), vec in zip(texts[1:], vecs[1:], strict=True):
                fid = self.conn.execute(
                    "INSERT INTO field_vectors(item, path, text, vector) VALUES (?,?,?,?)",
                    (item_id, path, text, vector_bytes(vec)),
                ).lastrowid
                assert fid is not None
                added.append(FIELD_ID_BASE + int(fid))
        return int(item_id), added, removed

    def write_many(
        self,
        labels: Sequence[str],
        items: Sequence[tuple[str, Mapping[str, Any], tuple[str, str] | None, np.ndarray | None]],
        now: float,
    ) -> tuple[list[int], list[int], list[int]]:
        """Insert or replace many items of one namespace, each indexed on at most one text
        (``(key, value, (path, text) or None, vector or None)``, distinct keys): one statement for
        them all. Returns ``(item ids, FAISS ids added, FAISS ids removed)`` (:meth:`write_item`)."""
        ns = ns_json(labels)
        rows = []
        for key, value, text, vec in items:
            try:
                payload = _VALUE_JSON.encode(dict(value))
            except (ValueError, RecursionError) as exc:
                raise ValueError(f"Cannot store {key!r} in {tuple(labels)}: the value is not JSON ({exc})") from None
            if problem := integrity.value_problem(payload):
                raise ValueError(f"Cannot store {key!r} in {tuple(labels)}: {problem}")
            rows.append((key, payload, text[1] if text else None, vector_bytes(vec) if vec is not None else None))
        with self.lock:
            first = next((v for _, _, _, v in items if v is not None), None)
            if first is not None and first.shape[0] != self._known_dim:
                self.check_dim(first)
                self._known_dim = int(first.shape[0])
            old: dict[str, tuple[int, Any]] = {}
            keys = [r[0] for r in rows]
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                for item_id, key, created in self.conn.execute(
                    f"SELECT id, key, created_at FROM items WHERE ns=? AND key IN ({_marks(len(chunk))})",
                    [ns, *chunk],
                ):
                    old[key] = (int(item_id), created)
            removed = [i for i, _ in old.values()]
            removed += self.field_ids(removed)
            for start in range(0, len(removed), 500):
                gone = [i for i in removed[start : start + 500] if i < FIELD_ID_BASE]
                self.conn.execute(f"DELETE FROM items WHERE id IN ({_marks(len(gone))})", gone)
            self.conn.executemany(
                "INSERT INTO items(ns, key, value, text, vector, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                [
                    (ns, key, payload, text, blob, _kept_time(old.get(key), now), now)
                    for key, payload, text, blob in rows
                ],
            )
            # AUTOINCREMENT inside this (exclusive) transaction: the rows got the ids up to the sequence's.
            last = int(self.conn.execute("SELECT seq FROM sqlite_sequence WHERE name='items'").fetchone()[0])
        ids = list(range(last - len(rows) + 1, last + 1))
        added = [i for i, r in zip(ids, rows, strict=True) if r[3] is not None]
        return ids, added, removed

    def set_created(self, item_id: int, created: float) -> None:
        with self.lock:
            self.conn.execute("UPDATE items SET created_at=? WHERE id=?", (created, item_id))

    def delete_keys(self, labels: Sequence[str], keys: Sequence[str]) -> tuple[list[str], list[int]]:
        """Delete items by key: the keys deleted and the FAISS ids they had."""
        ns = ns_json(labels)
        deleted, ids = [], []
        with self.lock:
            for key in keys:
                row = self.conn.execute("SELECT id FROM items WHERE ns=? AND key=?", (ns, key)).fetchone()
                if row:
                    ids += [int(row[0]), *self.field_ids([int(row[0])])]
                    self.conn.execute("DELETE FROM items WHERE id=?", (row[0],))
                    deleted.append(key)
        return deleted, ids

    def prune_rows(self, ns: str, keep: str) -> list[Any]:
        """``(key, importance, updated_at)`` of the namespace's other items (pruning ranks them)."""
        with self.lock:
            return self.conn.execute(
                "SELECT key, iif(json_valid(value), json_extract(value, '$.importance'), NULL), updated_at "
                "FROM items WHERE ns=? AND key != ?",
                (ns, keep),
            ).fetchall()

    # -- reads ---------------------------------------------------------------------------------
    def to_item(self, row: Sequence[Any], score: float | None = None) -> SearchItem | None:
        """A row read as ``integrity.ROW_COLUMNS`` as an item; None (recorded as damaged) when
        ``integrity.check_row`` refuses it. Every read of whole rows goes through here."""
        sound, reason = integrity.check_row(row)
        if sound is None:
            with self.lock:
                integrity.record_damaged(self.conn, row[0], [(row[5], row[1], reason)])
            return None
        labels, key, val, created, updated = sound
        return SearchItem(
            namespace=labels, key=key, value=val, created_at=as_datetime(created), updated_at=as_datetime(updated),
            score=score,
        )

    def row_by_id(self, item_id: int) -> Any:
        with self.lock:
            return self.conn.execute(f"SELECT {integrity.ROW_COLUMNS} FROM items WHERE id=?", (item_id,)).fetchone()

    def get(self, labels: Sequence[str], key: str) -> Item | None:
        with self.lock:
            row = self.conn.execute(
                f"SELECT {integrity.ROW_COLUMNS} FROM items WHERE ns=? AND key=?", (ns_json(labels), key)
            ).fetchone()
        item = self.to_item(row) if row else None
        if item is None:
            return None
        return Item(
            value=item.value, key=item.key, namespace=item.namespace,
            created_at=item.created_at, updated_at=item.updated_at,
        )

    def full_rows(self, ids: Sequence[int]) -> list[Any]:
        rows: list[Any] = []
        with self.lock:
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                rows.extend(
                    self.conn.execute(
                        f"SELECT {integrity.ROW_COLUMNS} FROM items WHERE id IN ({_marks(len(chunk))})", chunk
                    ).fetchall()
                )
        return rows

    def light_rows(self, ids: Sequence[int]) -> list[Any]:
        """``(id, key as bytes, updated_at, importance)`` of items: what ranking needs, without
        decoding values. Rows whose time cannot be ranked are read whole (``to_item`` records them)
        and left out."""
        light: list[Any] = []
        with self.lock:
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                light.extend(
                    self.conn.execute(
                        # (the key as bytes: UTF-8 sorts as its text does, and any key sorts; check_row judges it)
                        "SELECT id, CAST(ifnull(key, '') AS BLOB), updated_at, "
                        "iif(json_valid(value), json_extract(value, '$.importance'), NULL) "
                        f"FROM items WHERE id IN ({_marks(len(chunk))})",
                        chunk,
                    ).fetchall()
                )
        lo, hi = integrity.MIN_TIME, integrity.MAX_TIME
        if bad := {r[0] for r in light if not (type(r[2]) is float and lo <= r[2] <= hi) and _no_time(r[2])}:
            for row in self.full_rows(sorted(bad)):  # a time that cannot be ranked: recorded (check_row)
                self.to_item(row)
            light = [r for r in light if r[0] not in bad]
        return light

    def listing(
        self, prefix: Sequence[str], flt: Mapping[str, Any] | None, limit: int, offset: int, *, unindexed: bool = False
    ) -> list[SearchItem]:
        """Items under a prefix, newest first, matching ``flt``, a page of sound rows (the offset
        counts those). ``unindexed``: only items without a vector, oldest first (a search by query
        pads its results with them, as LangGraph's stores do)."""
        p = ns_path(prefix)
        order = "ORDER BY i.id" if unindexed else "ORDER BY i.updated_at DESC, i.id DESC"
        sql = (
            "SELECT i.ns, i.key, i.value, i.created_at, i.updated_at, i.id FROM items i "
            "JOIN namespaces n ON n.ns = i.ns WHERE substr(n.ns_path, 1, ?) = ? {} "
            + ("AND i.vector IS NULL " if unindexed else "")
            + order
        )
        params: list[Any] = [len(p), p]
        with self.lock:
            if not flt:
                # A page of sound rows: rows known damaged (other than by their vector, which listing
                # does not read) are left out by SQL; one found damaged in the page is recorded and
                # the page read again without it.
                sql = sql.format("AND i.id NOT IN (SELECT id FROM damaged WHERE reason NOT LIKE 'vector%')")
                sql += " LIMIT ? OFFSET ?"
                params += [limit, offset]
                while True:
                    items = [self.to_item(r) for r in self.conn.execute(sql, params).fetchall()]
                    if all(items):
                        return [i for i in items if i is not None]
            out: list[SearchItem] = []
            skipped = 0
            for r in self.conn.execute(sql.format(""), params).fetchall():
                item = self.to_item(r)
                if item is None or not match_filter(item.value, flt):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                out.append(item)
                if len(out) >= limit:
                    break
            return out

    def count(self, prefix: Sequence[str]) -> int:
        p = ns_path(prefix)
        with self.lock:
            return int(
                self.conn.execute(
                    "SELECT COUNT(*) FROM items i JOIN namespaces n ON n.ns = i.ns WHERE substr(n.ns_path, 1, ?) = ?",
                    (len(p), p),
                ).fetchone()[0]
            )

    def namespace_stats(self, prefix: Sequence[str]) -> list[Any]:
        """Per namespace under a prefix: ``(ns, items, indexed, oldest, newest, merges)``."""
        p = ns_path(prefix)
        # (a damaged time or merges count, see integrity.py, is left out of the figures)
        sound_time = "iif(typeof({c}) IN ('integer', 'real') AND {c} BETWEEN :lo AND :hi, {c}, NULL)"
        with self.lock:
            return self.conn.execute(
                "SELECT i.ns, COUNT(*), SUM(i.vector IS NOT NULL), "
                f"MIN({sound_time.format(c='i.created_at')}), MAX({sound_time.format(c='i.updated_at')}), "
                "TOTAL(CASE WHEN typeof(i.value) = 'text' AND json_valid(i.value) AND json_type(i.value, '$.merges') "
                "= 'integer' THEN max(json_extract(i.value, '$.merges'), 0) ELSE 0 END) FROM items i JOIN "
                "namespaces n ON n.ns = i.ns "
                "WHERE substr(n.ns_path, 1, :n) = :p GROUP BY i.ns ORDER BY i.ns",
                {"n": len(p), "p": p, "lo": integrity.MIN_TIME, "hi": integrity.MAX_TIME},
            ).fetchall()

    def damaged(self, prefix: Sequence[str], *, scan: bool) -> list[dict[str, Any]]:
        with self.lock:
            return integrity.damaged_rows(self.conn, ns_path(prefix), self.dim() if scan else None, scan=scan)

    # -- re-embedding ------------------------------------------------------------------------------
    def texts(self) -> tuple[list[Any], list[Any]]:
        """Every embedded text: ``(items (id, text), field_vectors (id, text))``."""
        with self.lock:
            own = self.conn.execute("SELECT id, text FROM items WHERE typeof(text) = 'text'").fetchall()
            fields = self.conn.execute("SELECT id, text FROM field_vectors WHERE typeof(text) = 'text'").fetchall()
        return own, fields

    def replace_vectors(
        self, own: Sequence[tuple[bytes, int]], fields: Sequence[tuple[bytes, int]], model: str
    ) -> None:
        """Every vector re-embedded by ``model`` (``(vector, id)`` pairs): a new vectors epoch, so
        no index file or cached index of the old vectors is used again."""
        with self.transaction():
            self.conn.executemany("UPDATE items SET vector=? WHERE id=?", own)
            self.conn.executemany("UPDATE field_vectors SET vector=? WHERE id=?", fields)
            self.conn.execute("UPDATE namespaces SET version = version + 1, file = '', file_version = -1")
            self.set_meta("vectors_epoch", str(self.epoch() + 1))
            self.forget_dim()  # the new model's: set by the next write
            self.set_meta("embedding_model", model)

    def repairable(self, prefix: Sequence[str]) -> list[Any]:
        """``(id, text)`` of damaged rows whose only damage is their vector (re-embedding repairs them)."""
        p = ns_path(prefix)
        with self.lock:
            return self.conn.execute(
                # (from the recorded rows, CROSS JOIN keeping them outermost: not a scan of every memory)
                "SELECT i.id, i.text FROM damaged d CROSS JOIN items i ON i.id = d.id "
                "CROSS JOIN namespaces n ON n.ns = i.ns "
                "WHERE substr(n.ns_path, 1, ?) = ? AND d.reason LIKE 'vector%' AND typeof(i.text) = 'text' "
                "AND json_valid(i.value) ORDER BY i.id",
                (len(p), p),
            ).fetchall()

    def fields_of(self, item_id: int) -> list[Any]:
        with self.lock:
            return self.conn.execute(
                "SELECT id, text FROM field_vectors WHERE item=? ORDER BY id", (item_id,)
            ).fetchall()

    def repair_vector(self, item_id: int, text: str, vec: np.ndarray, fields: Sequence[tuple[int, np.ndarray]]) -> Any:
        """Write a damaged row's re-embedded vectors; ``(ns, key)`` of the row, None when it was
        rewritten meanwhile (then it is left alone)."""
        with self.lock:
            row = self.conn.execute(
                "SELECT i.ns, i.key FROM items i JOIN damaged d ON d.id = i.id WHERE i.id = ? AND i.text = ?",
                (item_id, text),
            ).fetchone()
            if row is None:
                return None
            self.check_dim(vec)
            for fid, fvec in fields:
                self.conn.execute("UPDATE field_vectors SET vector=? WHERE id=?", (vector_bytes(fvec), fid))
            # (the trigger forgets the damage record)
            self.conn.execute("UPDATE items SET vector=? WHERE id=?", (vector_bytes(vec), item_id))
        return row
