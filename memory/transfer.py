"""Moving memories between stores: JSON Lines export and import.

One JSON object a line, one memory each, no vectors::

    {"key": "...", "text": "...", "kind": "note", "importance": 0.8, "merges": 0,
     "metadata": {"source": "run"}, "created_at": "2026-11-23T13:00:00+00:00",
     "updated_at": "2026-11-23T13:05:00+00:00"}

Import recomputes the embeddings with the target store's model, keeps keys, importance and both
times; a key already in the namespace (or twice in the file) is written once, the last line
winning. Every line is checked before anything is written: a bad one is a one-line
:class:`ImportLineError` naming its line number.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .backend import INDEX_FIELDS, is_memory_store, list_memories
from .ranking import DEFAULT_IMPORTANCE, memory_times

__all__ = ["ImportLineError", "export_records", "import_records", "parse_records"]

_CORE = ("text", "kind", "importance", "merges", "created_at", "updated_at")
BATCH = 64  # memories embedded and written per request


class ImportLineError(ValueError):
    """A line of an import file is not a memory; the message names the line."""


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def record_of(item: Any) -> dict[str, Any]:
    """The export line of a store item."""
    value = dict(item.value)
    created, updated = memory_times(item)
    return {
        "key": item.key,
        "text": value.get("text") if isinstance(value.get("text"), str) else json.dumps(value, ensure_ascii=False),
        "kind": value.get("kind"),
        "importance": value.get("importance", DEFAULT_IMPORTANCE),
        "merges": value.get("merges", 0),
        "metadata": {k: v for k, v in value.items() if k not in _CORE},
        "created_at": _iso(created),
        "updated_at": _iso(updated),
    }


async def export_records(store: Any, namespace: Sequence[str]) -> list[dict[str, Any]]:
    """Every memory of the namespace as an export record, oldest first (import keeps the order)."""
    items, _ = await list_memories(store, namespace)
    return [record_of(i) for i in reversed(items)]


def _time(raw: Any, name: str) -> float:
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
        return float(raw)
    if isinstance(raw, str):
        try:
            parsed = datetime.fromisoformat(raw)
        except ValueError:
            pass
        else:
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    raise ValueError(f"{name} must be an ISO 8601 time or epoch seconds, got {raw!r}")


def _parse(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, Mapping):
        raise ValueError("not a JSON object")
    key, text = obj.get("key"), obj.get("text")
    if not isinstance(key, str) or not key.strip() or "\x00" in key:
        raise ValueError("'key' must be a non-empty string")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("'text' must be a non-empty string")
    importance = obj.get("importance", DEFAULT_IMPORTANCE)
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
        raise ValueError(f"'importance' must be a number from 0 to 1, got {importance!r}")
    merges = obj.get("merges", 0)
    if isinstance(merges, bool) or not isinstance(merges, int) or merges < 0:
        raise ValueError(f"'merges' must be a whole number >= 0, got {merges!r}")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise ValueError("'metadata' must be a JSON object")
    now = datetime.now(tz=UTC).timestamp()
    created = _time(obj["created_at"], "created_at") if "created_at" in obj else now
    updated = _time(obj["updated_at"], "updated_at") if "updated_at" in obj else created
    value = {k: v for k, v in metadata.items() if k not in _CORE}
    value.update(text=text.strip(), kind=obj.get("kind") or "note", importance=float(importance), merges=merges)
    return {"key": key, "value": value, "created": created, "updated": updated}


def parse_records(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Checked import records (blank lines skipped; a repeated key: the last one)."""
    by_key: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = _parse(json.loads(line))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            reason = f"invalid JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise ImportLineError(f"line {number}: {reason}") from None
        by_key.pop(record["key"], None)
        by_key[record["key"]] = record
    return list(by_key.values())


async def import_records(store: Any, namespace: Sequence[str], records: Sequence[Mapping[str, Any]]) -> int:
    """Write checked records into the namespace, embeddings computed by the store; the count."""
    ns = tuple(namespace)
    bulk = getattr(store, "importing", None) if is_memory_store(store) else None
    with bulk(ns, len(records)) if callable(bulk) else contextlib.nullcontext():
        await _write_records(store, ns, records)
    return len(records)


async def _write_records(store: Any, ns: tuple[str, ...], records: Sequence[Mapping[str, Any]]) -> None:
    import asyncio

    from langgraph.store.base import PutOp

    for start in range(0, len(records), BATCH):
        chunk = records[start : start + BATCH]
        if is_memory_store(store) and callable(getattr(store, "restore", None)):
            await asyncio.to_thread(store.restore, ns, chunk)
            continue
        ops = [
            PutOp(ns, r["key"], {**r["value"], "created_at": r["created"], "updated_at": r["updated"]},
                  index=INDEX_FIELDS)
            for r in chunk
        ]
        await store.abatch(ops)
