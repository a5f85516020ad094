"""The memory store's rows: the ``BaseStore`` operations over SQLite and FAISS.

A mixin of :class:`~smart_agent.memory.store.FaissMemoryStore` (``batch`` and the
low-level reads and writes it uses, called with the store's lock held) and the
write transaction that persists the indexes it changed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from . import ann, background, integrity
from .matching import _ns_json, _ns_matches, _ns_path, _validate_labels, match_filter
from .ranking import Recalled, _importance
from .vectors import _NoTxn, _NsIndex, _Txn, _vec_bytes, _VectorIndexes

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def _no_time(ts: Any) -> bool:
    return integrity.as_time(ts) is None


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)



class _Rows(_VectorIndexes):
    """Reads, writes and ``batch`` of a ``FaissMemoryStore``."""

    # -- low-level writes (lock held, inside a transaction) -----------------------
    def _touch_ns(self, ns: tuple[str, ...], ns_json: str) -> _NsIndex:
        self._conn.execute(
            "INSERT OR IGNORE INTO namespaces(ns, ns_path) VALUES (?, ?)", (ns_json, _ns_path(ns))
        )
        entry = self._index_for(ns_json)
        assert entry is not None
        return entry

    def _put_row(
        self,
        ns: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        text: str | None,
        vec: np.ndarray | None,
        now: float,
    ) -> int:
        import numpy as np

        ns_json = _ns_json(ns)
        # The store writes no row it would read as damaged (integrity.check_row).
        try:
            payload = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
        except (ValueError, RecursionError) as exc:  # NaN/Infinity, nesting past Python's recursion limit
            raise ValueError(f"Cannot store {key!r} in {ns}: the value is not JSON ({exc})") from None
        if problem := integrity.value_problem(payload):
            raise ValueError(f"Cannot store {key!r} in {ns}: {problem}")
        entry = self._touch_ns(ns, ns_json)
        old = self._conn.execute("SELECT id, created_at FROM items WHERE ns=? AND key=?", (ns_json, key)).fetchone()
        blob = None
        if vec is not None:
            self._check_dim(vec)
            blob = _vec_bytes(vec)
        created = now
        if old:
            # A rewrite is a new row (a new id): a row's vector never changes under its id, so
            # another process's index catches up by ids alone (index_cache.py).
            created = old[1] if integrity.as_time(old[1]) is not None else now  # (damaged: now)
            self._conn.execute("DELETE FROM items WHERE id=?", (old[0],))
            entry.remove(np.array([old[0]], dtype="int64"))
        else:
            entry.rows += 1
        item_id = self._conn.execute(
            "INSERT INTO items(ns, key, value, text, vector, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
            (ns_json, key, payload, text, blob, created, now),
        ).lastrowid
        assert item_id is not None
        if vec is not None:
            if entry.index is None:
                entry.index = ann.new_index(int(vec.shape[0]))
            entry.add(np.array([item_id], dtype="int64"), vec.reshape(1, -1))
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
            entry.remove(np.array(ids, dtype="int64"))
            entry.rows -= len(ids)
            self._bump(ns_json, entry)
        return deleted

    # -- import ---------------------------------------------------------------------
    def restore(self, namespace: Sequence[str], records: Sequence[Mapping[str, Any]]) -> list[str]:
        """Write memories as they were (an import): each record's ``key``, ``value`` (with its
        ``text``) and ``created``/``updated`` epoch seconds; embeddings are computed here, in one
        batch. An existing key is replaced; no consolidation, no cap. Returns the keys written."""
        background.wait()  # writes queued by a run come first
        ns = tuple(namespace)
        _validate_labels(ns)
        if not records:
            return []
        vecs = self._embed([str(r["value"]["text"]) for r in records])
        with self._lock:
            self._ensure_open()
            with _Txn(self):
                for rec, vec in zip(records, vecs, strict=True):
                    value = {k: v for k, v in rec["value"].items() if k not in ("created_at", "updated_at")}
                    item_id = self._put_row(ns, rec["key"], value, str(value["text"]), vec, float(rec["updated"]))
                    self._conn.execute("UPDATE items SET created_at=? WHERE id=?", (float(rec["created"]), item_id))
        return [str(r["key"]) for r in records]

    # -- reads (lock held) --------------------------------------------------------
    def _row_to_item(self, row: Sequence[Any], score: float | None = None) -> SearchItem | None:
        """A row read as ``integrity.ROW_COLUMNS`` as an item; None (recorded as damaged) when
        ``integrity.check_row`` refuses it. Every read of whole rows goes through here."""
        sound, reason = integrity.check_row(row)
        if sound is None:
            integrity.record_damaged(self._conn, row[0], [(row[5], row[1], reason)])
            return None
        ns, key, val, created, updated = sound
        return SearchItem(
            namespace=ns, key=key, value=val, created_at=_dt(created), updated_at=_dt(updated), score=score
        )

    def _get(self, op: GetOp) -> Item | None:
        row = self._conn.execute(
            f"SELECT {integrity.ROW_COLUMNS} FROM items WHERE ns=? AND key=?",
            (_ns_json(op.namespace), op.key),
        ).fetchone()
        item = self._row_to_item(row) if row else None
        if item is None:
            return None
        return Item(
            value=item.value, key=item.key, namespace=item.namespace,
            created_at=item.created_at, updated_at=item.updated_at,
        )

    def _namespaces_under(self, prefix: Sequence[str]) -> list[str]:
        p = _ns_path(prefix)
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT ns FROM namespaces WHERE substr(ns_path, 1, ?) = ? ORDER BY ns", (len(p), p)
            ).fetchall()
        ]

    def _candidates(
        self, ns_list: Sequence[str], qvec: np.ndarray, n: int
    ) -> list[tuple[int, float]]:
        """Nearest (id, cosine) pairs over several namespaces."""
        ann.faiss_module()  # one OpenMP thread in this thread
        out: list[tuple[int, float]] = []
        q = qvec.reshape(1, -1).astype("float32")
        for ns_json in ns_list:
            entry = self._index_for(ns_json)
            if entry is None or entry.index is None or entry.index.ntotal == 0:
                continue
            if entry.index.d != q.shape[1]:
                raise ValueError(f"Query dimension {q.shape[1]} does not match the index's {entry.index.d}")
            dists, ids = entry.index.search(q, min(n, entry.index.ntotal))
            out.extend((int(i), float(d)) for d, i in zip(dists[0], ids[0], strict=True) if i >= 0)
        out.sort(key=lambda t: -t[1])
        return out[:n] if len(ns_list) > 1 else out

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
        total = sum(
            (e.index.ntotal if (e := self._index_for(ns)) is not None and e.index is not None else 0) for ns in ns_list
        )
        if total == 0:
            return []
        n = max(self.ranking.candidates, 4 * need)
        now = self.clock()
        while True:
            cands = [c for c in self._candidates(ns_list, qvec, n) if c[1] >= min_similarity]
            if flt:
                results = self._score(self._full_rows([i for i, _ in cands]), dict(cands), now, flt)
                if len(results) < need and n < total:
                    n *= 4
                    continue
                return self._order(results, by_similarity)[:need]
            return self._best(cands, need, now, by_similarity)

    @staticmethod
    def _order(results: list[Recalled], by_similarity: bool) -> list[Recalled]:
        if by_similarity:
            return sorted(results, key=lambda r: (-r.similarity, r.item.key))
        return sorted(results, key=lambda r: (-r.score, -r.similarity, r.item.key))

    def _full_rows(self, ids: Sequence[int]) -> list[Any]:
        rows: list[Any] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows.extend(
                self._conn.execute(
                    f"SELECT {integrity.ROW_COLUMNS} FROM items WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            )
        return rows

    def _score(
        self, rows: Sequence[Any], sims: Mapping[int, float], now: float, flt: Mapping[str, Any] | None
    ) -> list[Recalled]:
        results: list[Recalled] = []
        for row in rows:
            item = self._row_to_item(row)
            if item is None or not match_filter(item.value, flt):
                continue
            imp = _importance(item.value)
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
        light = []
        ids = list(sims)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            light.extend(
                self._conn.execute(
                    # (the key as bytes: UTF-8 sorts as its text does, and any key sorts; check_row judges it)
                    "SELECT id, CAST(ifnull(key, '') AS BLOB), updated_at, "
                    "iif(json_valid(value), json_extract(value, '$.importance'), NULL) "
                    f"FROM items WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            )
        lo, hi = integrity.MIN_TIME, integrity.MAX_TIME
        if bad := {r[0] for r in light if not (type(r[2]) is float and lo <= r[2] <= hi) and _no_time(r[2])}:
            for row in self._full_rows(sorted(bad)):  # a time that cannot be ranked: recorded (check_row)
                self._row_to_item(row)
            light = [r for r in light if r[0] not in bad]
        if by_similarity:
            light.sort(key=lambda r: (-sims[r[0]], r[1]))
        else:
            rank = self.ranking
            scored = {r[0]: rank.score(sims[r[0]], now - r[2], _importance({"importance": r[3]})) for r in light}
            light.sort(key=lambda r: (-scored[r[0]], -sims[r[0]], r[1]))
        out: list[Recalled] = []
        pos = 0
        while len(out) < need and pos < len(light):
            chunk = [r[0] for r in light[pos : pos + need - len(out)]]
            pos += len(chunk)
            rows = {r[5]: r for r in self._full_rows(chunk)}
            out.extend(self._score([rows[i] for i in chunk if i in rows], sims, now, None))
        return self._order(out, by_similarity)

    def _search(self, op: SearchOp, qvec: np.ndarray | None) -> list[SearchItem]:
        ns_list = self._namespaces_under(op.namespace_prefix)
        if qvec is not None:
            # Like LangGraph's stores: most similar first, the score is the cosine (recall blends).
            ranked = self._ranked(ns_list, qvec, op.offset + op.limit, op.filter, by_similarity=True)
            for r in ranked:
                r.item.score = r.similarity
            return [r.item for r in ranked[op.offset : op.offset + op.limit]]
        p = _ns_path(op.namespace_prefix)
        sql = (
            "SELECT i.ns, i.key, i.value, i.created_at, i.updated_at, i.id FROM items i "
            "JOIN namespaces n ON n.ns = i.ns WHERE substr(n.ns_path, 1, ?) = ? {} "
            "ORDER BY i.updated_at DESC, i.id DESC"
        )
        params: list[Any] = [len(p), p]
        if not op.filter:
            # A page of sound rows (the offset counts those): rows known damaged (other than by
            # their vector, which listing does not read) are left out by SQL; one found damaged
            # in the page is recorded and the page read again without it.
            sql = sql.format(
                "AND i.id NOT IN (SELECT id FROM damaged WHERE reason NOT LIKE 'vector%')"
            ) + " LIMIT ? OFFSET ?"
            params += [op.limit, op.offset]
            while True:
                items = [self._row_to_item(r) for r in self._conn.execute(sql, params).fetchall()]
                if all(items):
                    return [i for i in items if i is not None]
        sql = sql.format("")
        out: list[SearchItem] = []
        skipped = 0
        for r in self._conn.execute(sql, params):
            item = self._row_to_item(r)
            if item is None or not match_filter(item.value, op.filter):
                continue
            if skipped < op.offset:
                skipped += 1
                continue
            out.append(item)
            if len(out) >= op.limit:
                break
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = (integrity.namespace_labels(r[0]) for r in self._conn.execute("SELECT DISTINCT ns FROM items"))
        nss = [ns for ns in found if ns is not None]  # (a damaged one: its rows are damaged)
        if op.match_conditions:
            nss = [ns for ns in nss if all(_ns_matches(c, ns) for c in op.match_conditions)]
        nss = sorted({ns[: op.max_depth] for ns in nss}) if op.max_depth is not None else sorted(nss)
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
        background.wait()  # writes queued by a run come first
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
