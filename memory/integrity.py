"""Integrity of the memory database: refuse files that are not ours, skip damaged rows.

Opening (:func:`open_database`):

* a missing file is created under a temporary name with the schema and this
  project's marker (``PRAGMA application_id`` = :data:`APPLICATION_ID`,
  ``PRAGMA user_version`` = :data:`FORMAT_VERSION`) and then hard-linked into
  place, so no other process ever sees a half-made (e.g. 0-byte) database;
* an existing file must be an SQLite file carrying the marker -- or a database
  made before the marker existed, recognized by its exact tables and columns,
  which is then marked. Anything else (0 bytes, not SQLite, someone else's
  schema, another application id) raises :class:`MemoryUnavailable` with one
  line naming the file, and the file is left byte-for-byte as it was: it is
  inspected through a read-only connection before anything writes to it.

Rows (``damaged`` table): a row whose vector blob has the wrong size or type,
non-finite values or a norm other than 1 (or 0), or whose JSON value does not
parse, is recorded in ``damaged`` with the reason, kept out of the FAISS index
and out of results, and logged. Triggers forget the record when the row is
rewritten or deleted, so a repaired row is checked again. The row itself is
left in SQLite as it was (``smart-agent memory forget ID`` deletes it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger("smart_agent.memory.store")

APPLICATION_ID = 0x534D454D  # "SMEM"
FORMAT_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"
ITEM_COLUMNS = ("id", "ns", "key", "value", "text", "vector", "created_at", "updated_at")
_TABLES = {"meta", "namespaces", "items"}  # what every memory database has
_OPTIONAL_TABLES = {"damaged"}

DAMAGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS damaged (
    id INTEGER PRIMARY KEY,           -- items.id
    reason TEXT NOT NULL,
    found_at REAL NOT NULL
);
CREATE TRIGGER IF NOT EXISTS damaged_forget_deleted AFTER DELETE ON items
    BEGIN DELETE FROM damaged WHERE id = old.id; END;
CREATE TRIGGER IF NOT EXISTS damaged_forget_rewritten AFTER UPDATE OF value, vector ON items
    BEGIN DELETE FROM damaged WHERE id = new.id; END;
"""
_MARK = f"PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {FORMAT_VERSION};"


class MemoryUnavailable(ValueError):
    """The memory database cannot be used; the message is one line naming the file."""


def _refuse(path: Path, why: str) -> MemoryUnavailable:
    return MemoryUnavailable(
        f"{path} is not a smart-agent memory database ({why}); move it away or point SMART_AGENT_HOME elsewhere"
    )


# --------------------------------------------------------------------------- opening
def open_database(path: Path, schema: str) -> sqlite3.Connection:
    """A read-write connection to the memory database at ``path`` (see the module doc)."""
    if not path.exists() and not path.is_symlink():
        _create(path, schema)
    marked = verify_database(path)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        with contextlib.suppress(sqlite3.DatabaseError):  # e.g. some network filesystems
            if str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower() == "wal":
                # A commit survives the process exiting or crashing (the WAL is the application's
                # log); only a power cut can lose the last commits, never the database's
                # consistency. FULL would fsync every commit: 8 ms of a 9 ms remember().
                conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(schema + DAMAGE_SCHEMA + ("" if marked else _MARK))
    except BaseException:
        conn.close()
        raise
    if not marked:
        log.info("smart-agent memory: marked %s as a memory database (format %d)", path, FORMAT_VERSION)
    return conn


def _create(path: Path, schema: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        conn = sqlite3.connect(str(tmp))
        try:
            conn.executescript(schema + DAMAGE_SCHEMA + _MARK)
        finally:
            conn.close()
        try:
            os.link(tmp, path)  # fails if another process created it first: then use theirs
        except FileExistsError:
            pass
        except OSError:  # no hard links on this file system
            if not path.exists():
                os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def verify_database(path: Path) -> bool:
    """Raise :class:`MemoryUnavailable` unless ``path`` is a memory database.

    Returns True when it carries the marker, False for a database of the
    current layout made before the marker existed (the caller marks it).
    Reads only: a refused file is not modified.
    """
    if not path.is_file():
        raise _refuse(path, "not a regular file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise _refuse(path, f"unreadable: {exc.strerror or exc}") from None
    if not head:
        raise _refuse(path, "the file is empty")
    if head != SQLITE_MAGIC:
        raise _refuse(path, "not an SQLite file")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise _refuse(path, f"SQLite: {exc}") from None
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id == APPLICATION_ID:
            if version > FORMAT_VERSION:
                raise MemoryUnavailable(
                    f"{path} is a memory database of a newer smart-agent (format {version}, this one reads "
                    f"{FORMAT_VERSION}); upgrade smart-agent or point SMART_AGENT_HOME elsewhere"
                )
            return True
        if app_id:
            raise _refuse(path, f"SQLite application id {app_id:#x}")
        tables = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if not r[0].startswith("sqlite_")
        }
        columns = tuple(r[1] for r in conn.execute("PRAGMA table_info(items)"))
    except sqlite3.Error as exc:
        raise _refuse(path, f"SQLite: {exc}") from None
    finally:
        conn.close()
    if not tables >= _TABLES or tables - _TABLES - _OPTIONAL_TABLES or columns != ITEM_COLUMNS:
        shown = ", ".join(sorted(tables)[:5]) or "none"
        raise _refuse(path, f"no smart-agent marker and other tables: {shown}")
    return False


# --------------------------------------------------------------------------- rows
def decode_value(raw: Any) -> dict[str, Any] | None:
    """A row's JSON value as a dict (a non-object is wrapped as ``{"value": ...}``); None: damaged."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(raw, str):
        return None
    try:
        val = json.loads(raw)
    except ValueError:  # JSONDecodeError, and NaN-free parsing errors
        return None
    return val if isinstance(val, dict) else {"value": val}


def check_vector(blob: Any, dim: int) -> tuple[np.ndarray | None, str]:
    """``(vector, "")`` for a sound stored vector, else ``(None, reason)``."""
    import numpy as np

    if not isinstance(blob, bytes):
        return None, f"vector is {type(blob).__name__}, not bytes"
    if len(blob) != 4 * dim:
        return None, f"vector has {len(blob)} bytes, expected {4 * dim}"
    vec = np.frombuffer(blob, dtype="<f4")
    if not np.isfinite(vec).all():
        return None, "vector has non-finite values"
    norm = float(np.linalg.norm(vec.astype("float64")))
    if norm != 0.0 and abs(norm - 1.0) > 1e-2:
        return None, f"vector norm is {norm:.3g}, not 1"
    return vec, ""


def infer_dim(blobs: Iterable[Any]) -> int | None:
    """The most common vector size (in floats) when the database does not record it."""
    sizes: dict[int, int] = {}
    for b in blobs:
        if isinstance(b, bytes) and b and len(b) % 4 == 0:
            sizes[len(b) // 4] = sizes.get(len(b) // 4, 0) + 1
    return max(sizes, key=lambda s: sizes[s]) if sizes else None


def sound_vectors(
    conn: sqlite3.Connection, ns_json: str, rows: Sequence[Sequence[Any]], dim: int | None
) -> tuple[list[int], list[np.ndarray]]:
    """Check ``(id, key, vector, value_is_json)`` rows: the sound ids and vectors; the rest are recorded."""
    dim = dim or infer_dim(r[2] for r in rows)
    ids: list[int] = []
    vecs: list[Any] = []
    bad: list[tuple[int, str, str]] = []
    for item_id, key, blob, json_ok in rows:
        vec, reason = check_vector(blob, dim) if dim else (None, "vector size unknown")
        if vec is not None and not json_ok:
            vec, reason = None, "value is not valid JSON"
        if vec is None:
            bad.append((int(item_id), str(key), reason))
        else:
            ids.append(int(item_id))
            vecs.append(vec)
    if bad:
        record_damaged(conn, ns_json, bad)
        log.warning(
            "smart-agent memory: skipped %d damaged row(s) of %s (not indexed, not recalled): %s",
            len(bad), ns_json, "; ".join(f"{k}: {why}" for _, k, why in bad[:5]),
        )
    return ids, vecs


def record_damaged(conn: sqlite3.Connection, ns_json: str, bad: Sequence[tuple[int, str, str]]) -> int:
    """Remember damaged rows (``(id, key, reason)``); returns how many were new."""
    now = time.time()
    new = 0
    for item_id, key, reason in bad:
        cur = conn.execute(
            "INSERT OR IGNORE INTO damaged(id, reason, found_at) VALUES (?, ?, ?)", (item_id, reason, now)
        )
        if cur.rowcount:
            new += 1
            log.warning("smart-agent memory: damaged row %s in %s: %s", key, ns_json, reason)
    return new


def record_bad_value(conn: sqlite3.Connection, ns_json: str, key: str) -> None:
    row = conn.execute("SELECT id FROM items WHERE ns=? AND key=?", (ns_json, key)).fetchone()
    if row:
        record_damaged(conn, ns_json, [(row[0], key, "value is not valid JSON")])


def damaged_rows(conn: sqlite3.Connection, ns_path: str, dim: int | None, *, scan: bool) -> list[dict[str, Any]]:
    """Damaged rows under a namespace prefix path: the recorded ones, and with ``scan``
    also those SQL can see without decoding (invalid JSON, wrong vector size).

    Without ``scan`` (every recall and write asks) the query starts from the ``damaged`` table
    (CROSS JOIN keeps it outermost): it reads the recorded rows only, not every memory of the
    namespace (100,000 memories: 23.6 ms a call before)."""
    if scan:
        rows = conn.execute(
            "SELECT i.ns, i.key, d.reason, json_valid(i.value), length(i.vector) FROM items i "
            "JOIN namespaces n ON n.ns = i.ns LEFT JOIN damaged d ON d.id = i.id "
            "WHERE substr(n.ns_path, 1, ?) = ? AND (d.id IS NOT NULL OR NOT json_valid(i.value) OR (i.vector IS NOT "
            "NULL AND (typeof(i.vector) != 'blob' OR length(i.vector) != ?))) ORDER BY i.ns, i.id",
            [len(ns_path), ns_path, 4 * dim if dim else None],
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT i.ns, i.key, d.reason, json_valid(i.value), length(i.vector) FROM damaged d "
            "CROSS JOIN items i ON i.id = d.id CROSS JOIN namespaces n ON n.ns = i.ns "
            "WHERE substr(n.ns_path, 1, ?) = ? ORDER BY i.ns, i.id",
            [len(ns_path), ns_path],
        ).fetchall()
    out = []
    for ns_json, key, reason, json_ok, size in rows:
        if reason is None:
            reason = "value is not valid JSON" if not json_ok else f"vector has {size} bytes, expected {4 * (dim or 0)}"
        out.append({"namespace": json.loads(ns_json), "key": key, "reason": reason})
    return out
