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

Rows (``damaged`` table): every row is checked where it is read from SQLite, by
:func:`check_row` (the whole row) or :func:`check_vector` (its vector), and a row
that fails is recorded in ``damaged`` with the reason, kept out of the FAISS index
and out of results, and logged -- one damaged row never fails a read of the
others. Damage: a vector blob of the wrong size or type, with non-finite values
or a norm other than 1 (or 0); a namespace that is not a JSON list of labels; a
key that is not text; ``created_at``/``updated_at`` that are not epoch seconds a
date can show; a value that is not text, larger than :data:`MAX_VALUE_CHARS`,
nested deeper than :data:`MAX_VALUE_DEPTH`, not strict JSON (``NaN``), not an
object, or with text that is not valid Unicode (invalid UTF-8, an unpaired
``\\ud800``), or whose memory fields have the wrong type (``importance`` not a
number, ``merges`` not a whole number >= 0, ``created_at``/``updated_at`` not
epoch seconds). Triggers forget the record when the row is rewritten or deleted,
so a repaired row is checked again. The row itself is left in SQLite as it was
(``smart-agent memory forget ID`` deletes it).

Namespaces (:func:`check_namespaces`, on open): the ``namespaces`` table is derived
from the items' namespaces; a row of it that is damaged (a namespace that does not
parse, a wrong ``ns_path``, a version or file of the wrong type) or missing is
repaired from the items, so no memory silently drops out of its namespace.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.files import DEFAULT_MAX_DEPTH, json_depth_problem
from .matching import ns_path

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger("smart_agent.memory.store")

APPLICATION_ID = 0x534D454D  # "SMEM"
FORMAT_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"
ITEM_COLUMNS = ("id", "ns", "key", "value", "text", "vector", "created_at", "updated_at")
_TABLES = {"meta", "namespaces", "items"}  # what every memory database has
_OPTIONAL_TABLES = {"damaged", "field_vectors"}

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
CREATE TRIGGER IF NOT EXISTS damaged_forget_changed AFTER UPDATE OF ns, key, text, created_at, updated_at ON items
    BEGIN DELETE FROM damaged WHERE id = new.id; END;
"""
_MARK = f"PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {FORMAT_VERSION};"


_TEXT = functools.partial(str, encoding="utf-8", errors="surrogateescape")


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
    # Text that is not UTF-8 (bytes written behind the store's back) reads as text with lone
    # surrogates, which check_row reports, instead of failing the whole query (sqlite3's default).
    conn.text_factory = _TEXT
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
#: Largest JSON value a row may hold, in characters (the store writes none larger).
MAX_VALUE_CHARS = 1_000_000
#: Deepest nesting of a row's JSON value (``json.loads`` recurses per level).
MAX_VALUE_DEPTH = DEFAULT_MAX_DEPTH
#: Times a row may carry, in epoch seconds: what a date can show (years 1 to 9999).
MIN_TIME, MAX_TIME = -62_135_596_800.0, 253_402_300_799.0
#: The columns every read of whole rows selects, in the order :func:`check_row` takes them.
ROW_COLUMNS = "ns, key, value, created_at, updated_at, id"
_TIME_FIELDS = ("created_at", "updated_at")


def _kind(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, str):
        return "text"
    if isinstance(x, (bytes, bytearray, memoryview)):
        return "bytes"
    if isinstance(x, bool):
        return "a boolean"
    return {int: "an integer", float: "a number", list: "a list", dict: "an object"}.get(type(x), type(x).__name__)


def _is_unicode(text: str) -> bool:
    """No lone surrogate (from an unpaired ``\\ud800`` escape, or bytes that were not UTF-8)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(x: Any) -> str:
    """``x`` as text that can be printed and JSON-encoded (a damaged key in a report)."""
    return str(x).encode("utf-8", "backslashreplace").decode("utf-8")


def time_problem(ts: Any, name: str) -> str | None:
    """Why ``ts`` is not a time a row may carry (epoch seconds); None when it is."""
    if isinstance(ts, bool) or not isinstance(ts, (int, float)):
        return f"{name} is {_kind(ts)}, not epoch seconds"
    if not MIN_TIME <= ts <= MAX_TIME:  # (also NaN)
        return f"{name} {ts:.6g} is out of range"
    return None


def as_time(ts: Any) -> float | None:
    """``ts`` as epoch seconds; None when it is damaged (:func:`time_problem`)."""
    if type(ts) is float and MIN_TIME <= ts <= MAX_TIME:  # (what the store writes)
        return ts
    return float(ts) if time_problem(ts, "") is None else None


@functools.lru_cache(maxsize=1024)
def namespace_labels(ns_json: Any) -> tuple[str, ...] | None:
    """The labels of a stored namespace (a JSON list of labels, written as ``matching._ns_json``
    writes it); None when it is damaged."""
    if not isinstance(ns_json, str) or len(ns_json) > 10_000 or not _is_unicode(ns_json):
        return None
    try:
        labels = json.loads(ns_json)
    except (ValueError, RecursionError):
        return None
    if not isinstance(labels, list) or not all(
        isinstance(label, str) and label and "." not in label and "\x00" not in label for label in labels
    ):
        return None
    if json.dumps(labels, ensure_ascii=False) != ns_json:  # not as the store writes it: lookups miss it
        return None
    return tuple(labels)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)  # strict JSON: no NaN, no Infinity


def decode_value(raw: Any) -> tuple[dict[str, Any] | None, str]:
    """A row's value: ``(value, "")``, or ``(None, reason)`` when it is damaged (see the module doc)."""
    if not isinstance(raw, str):
        return None, f"value is {_kind(raw)}, not JSON text"
    if len(raw) > MAX_VALUE_CHARS:
        return None, f"value is {len(raw):,} characters, more than {MAX_VALUE_CHARS:,}"
    if not _is_unicode(raw):
        return None, "value is not valid UTF-8 text"
    if raw.count("[") + raw.count("{") > MAX_VALUE_DEPTH and (problem := json_depth_problem(raw, MAX_VALUE_DEPTH)):
        return None, f"value is {problem}"
    try:
        val = _DECODER.decode(raw)
    except (ValueError, RecursionError):  # JSONDecodeError, NaN/Infinity
        return None, "value is not valid JSON"
    if not isinstance(val, dict):
        return None, f"value is {_kind(val)}, not a JSON object"
    if "\\u" in raw and not _is_unicode(json.dumps(val, ensure_ascii=False)):
        return None, "value has an unpaired surrogate escape (\\ud800-\\udfff), not text"
    imp = val.get("importance")
    if imp is not None and (isinstance(imp, bool) or not isinstance(imp, (int, float))):
        return None, f"importance is {_kind(imp)}, not a number"
    merges = val.get("merges", 0)
    if isinstance(merges, bool) or not isinstance(merges, int) or merges < 0:
        shown = merges if isinstance(merges, int) and not isinstance(merges, bool) else _kind(merges)
        return None, f"merges is {shown}, not a whole number >= 0"
    for name in _TIME_FIELDS:
        if name in val and (problem := time_problem(val[name], f"the value's {name}")):
            return None, problem
    return val, ""


def value_problem(payload: str) -> str | None:
    """Why the store must not write the JSON ``payload`` (it would read it as damaged)."""
    if len(payload) > MAX_VALUE_CHARS:
        return f"the value is {len(payload):,} characters of JSON, more than the store's {MAX_VALUE_CHARS:,}"
    if payload.count("[") + payload.count("{") > MAX_VALUE_DEPTH and (
        problem := json_depth_problem(payload, MAX_VALUE_DEPTH)
    ):
        return f"the value is {problem}"
    return None


def check_row(row: Sequence[Any]) -> tuple[tuple[tuple[str, ...], str, dict[str, Any], float, float] | None, str]:
    """A row read as :data:`ROW_COLUMNS`: ``((labels, key, value, created, updated), "")``, or
    ``(None, reason)`` when it is damaged. The one check of a whole row: every read uses it."""
    ns_json, key, raw, created, updated = row[:5]
    labels = namespace_labels(ns_json)
    if labels is None:
        return None, "namespace is not a JSON list of labels"
    if not isinstance(key, str) or not key:
        return None, f"key is {_kind(key) if key != '' else 'empty'}, not text"
    if not _is_unicode(key):
        return None, "key is not valid UTF-8 text"
    for name, ts in (("created_at", created), ("updated_at", updated)):
        if as_time(ts) is None:
            return None, time_problem(ts, name) or ""
    value, reason = decode_value(raw)
    if value is None:
        return None, reason
    return (labels, key, value, float(created), float(updated)), ""


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


def sound_mask(blobs: Sequence[Any], dim: int) -> tuple[list[bool], np.ndarray]:
    """:func:`check_vector` of many blobs at once: which are sound, and those vectors stacked
    (``[sound, dim]`` float32). One pass of NumPy over all of them instead of one per blob."""
    import numpy as np

    sized = [isinstance(b, bytes) and len(b) == 4 * dim for b in blobs]
    arr = np.frombuffer(b"".join(b for b, ok in zip(blobs, sized, strict=True) if ok), dtype="<f4").reshape(-1, dim)
    with np.errstate(all="ignore"):  # (inf, NaN and overflow make the norm non-finite: refused)
        norms = np.sqrt(np.einsum("ij,ij->i", arr, arr))
    good = np.isfinite(norms) & ((norms == 0.0) | (np.abs(norms - 1.0) <= 1e-2))
    flags = iter(good.tolist())
    mask = [next(flags) if ok else False for ok in sized]
    return mask, np.ascontiguousarray(arr[good], dtype="float32")


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
    if dim:
        mask, sound = sound_mask([r[2] for r in rows], dim)
        pos = 0
        for (item_id, key, blob, json_ok), ok in zip(rows, mask, strict=True):
            if ok and json_ok:
                ids.append(int(item_id))
                vecs.append(sound[pos])
            elif ok:
                bad.append((int(item_id), str(key), "value is not valid JSON"))
            else:
                bad.append((int(item_id), str(key), check_vector(blob, dim)[1]))
            pos += ok
    else:
        bad = [(int(r[0]), str(r[1]), "vector size unknown") for r in rows]
    if bad:
        record_damaged(conn, ns_json, bad)
        log.info(
            "smart-agent memory: skipped %d damaged row(s) of %s (not indexed, not recalled): %s",
            len(bad), ns_json, "; ".join(f"{printable(k)}: {why}" for _, k, why in bad[:5]),
        )
    return ids, vecs


def record_damaged(conn: sqlite3.Connection, ns_json: Any, bad: Sequence[tuple[int, Any, str]]) -> int:
    """Remember damaged rows (``(id, key, reason)``); returns how many were new. A row recorded
    for its vector that turns out damaged otherwise gets that reason (it cannot be repaired by
    re-embedding it, and listing leaves it out). (Logged at INFO: what reads the rows reports
    them -- the run's events, the ``smart-agent memory`` commands.)"""
    now = time.time()
    new = 0
    for item_id, key, reason in bad:
        cur = conn.execute(
            "INSERT INTO damaged(id, reason, found_at) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "reason = excluded.reason, found_at = excluded.found_at "
            "WHERE damaged.reason LIKE 'vector%' AND excluded.reason NOT LIKE 'vector%'",
            (item_id, reason, now),
        )
        if cur.rowcount:
            new += 1
            log.info("smart-agent memory: damaged row %s in %s: %s", printable(key), printable(ns_json), reason)
    return new


def damaged_rows(conn: sqlite3.Connection, prefix_path: str, dim: int | None, *, scan: bool) -> list[dict[str, Any]]:
    """Damaged rows under a namespace prefix path: the recorded ones, and with ``scan`` also
    those not read yet (every row through :func:`check_row`, and vectors of the wrong size: a
    vector's values are checked when an index is built from it).

    Without ``scan`` (every recall and write asks) the query starts from the ``damaged`` table
    (CROSS JOIN keeps it outermost): it reads the recorded rows only, not every memory of the
    namespace (100,000 memories: 23.6 ms a call before)."""
    out = []
    if not scan:
        rows = conn.execute(
            "SELECT i.ns, i.key, d.reason FROM damaged d "
            "CROSS JOIN items i ON i.id = d.id CROSS JOIN namespaces n ON n.ns = i.ns "
            "WHERE substr(n.ns_path, 1, ?) = ? ORDER BY i.ns, i.id",
            [len(prefix_path), prefix_path],
        ).fetchall()
        for ns_json, key, reason in rows:
            out.append({"namespace": list(namespace_labels(ns_json) or ()), "key": printable(key), "reason": reason})
        return out
    cursor = conn.execute(
        "SELECT i.ns, i.key, i.value, i.created_at, i.updated_at, i.id, d.reason, CASE WHEN i.vector IS NULL OR "
        "(typeof(i.vector) = 'blob' AND length(i.vector) = ?) THEN NULL ELSE i.vector END "  # (the wrong size only)
        "FROM items i JOIN namespaces n ON n.ns = i.ns LEFT JOIN damaged d ON d.id = i.id "
        "WHERE substr(n.ns_path, 1, ?) = ? ORDER BY i.ns, i.id",
        [4 * dim if dim else None, len(prefix_path), prefix_path],
    )
    for row in cursor:
        reason = row[6] or check_row(row)[1]
        if not reason and row[7] is not None and dim:
            reason = check_vector(row[7], dim)[1]
        if reason:
            out.append({"namespace": list(namespace_labels(row[0]) or ()), "key": printable(row[1]), "reason": reason})
    return out


# --------------------------------------------------------------------------- namespaces
def check_namespaces(conn: sqlite3.Connection) -> list[str]:
    """Repair the ``namespaces`` table from the items (see the module doc); one line per repair.

    Reads the table (one row per namespace) and the items' distinct namespaces (one index seek
    each, not a scan of the items); writes only when something is wrong."""
    found: dict[Any, tuple[int, Any, str, str, str]] = {}
    used = []
    conn.execute("BEGIN")  # one snapshot (a write committed meanwhile is not a missing row)
    try:
        for rowid, ns, path, *types in conn.execute(
            "SELECT rowid, ns, ns_path, typeof(version), typeof(file), typeof(file_version) FROM namespaces"
        ).fetchall():
            found[ns] = (rowid, path, *types)
        ns = conn.execute("SELECT min(ns) FROM items").fetchone()[0]
        while ns is not None:
            used.append(ns)
            ns = conn.execute("SELECT min(ns) FROM items WHERE ns > ?", (ns,)).fetchone()[0]
    finally:
        conn.execute("COMMIT")
    fixes: list[tuple[str, tuple[Any, ...]]] = []
    parts: list[str] = []  # what was repaired
    notes: list[str] = []
    for ns, (rowid, path, t_version, t_file, t_file_version) in found.items():
        labels = namespace_labels(ns)
        if labels is None:
            fixes.append(("DELETE FROM namespaces WHERE rowid = ? AND ns IS ?", (rowid, ns)))
            parts.append(f"dropped the row {printable(ns)[:80]!r} (not a JSON list of labels)")
            continue
        if path != ns_path(labels):
            fixes.append(("UPDATE namespaces SET ns_path = ? WHERE ns = ?", (ns_path(labels), ns)))
            parts.append(f"rewrote the path of {printable(ns)}")
        if (t_version, t_file, t_file_version) != ("integer", "text", "integer"):
            fixes.append(("UPDATE namespaces SET version = 0, file = '', file_version = -1 WHERE ns = ?", (ns,)))
            parts.append(f"reset the index version of {printable(ns)} (its index is rebuilt)")
    for ns in used:
        if ns in found and namespace_labels(ns) is not None:
            continue
        labels = namespace_labels(ns)
        if labels is not None:
            fixes.append(("INSERT OR IGNORE INTO namespaces(ns, ns_path) VALUES (?, ?)", (ns, ns_path(labels))))
            parts.append(f"restored the missing row of {printable(ns)}")
        else:
            bad = conn.execute("SELECT id, key FROM items WHERE ns IS ?", (ns,)).fetchall()
            new = record_damaged(conn, ns, [(r[0], r[1], "namespace is not a JSON list of labels") for r in bad])
            if new:
                shown = printable(ns)[:80]
                notes.append(f"{new} row(s) with the namespace {shown!r} (not a JSON list of labels) skipped")
    if fixes:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in fixes:
                conn.execute(sql, params)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        notes.insert(0, "repaired the namespaces table from the memories: " + "; ".join(parts))
    return notes
