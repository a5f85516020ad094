"""Namespaces and filters of the memory store (LangGraph ``BaseStore`` semantics)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition


def ns_json(ns: Sequence[str]) -> str:
    """A namespace as the table stores it: a JSON list of labels."""
    return _ns_json(tuple(ns))


@functools.lru_cache(maxsize=4096)
def _ns_json(ns: tuple[str, ...]) -> str:
    return json.dumps(list(ns), ensure_ascii=False)


def ns_path(ns: Sequence[str]) -> str:
    """Labels joined by '.', plus a trailing '.' (a prefix match is a string prefix)."""
    return "".join(f"{label}." for label in ns)


def ns_hash(ns_json: str) -> str:
    return hashlib.sha1(ns_json.encode("utf-8")).hexdigest()[:16]


def validate_labels(ns: Sequence[str]) -> None:
    for label in ns:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            from langgraph.store.base import InvalidNamespaceError

            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {tuple(ns)}: labels are non-empty strings "
                "without '.' or NUL."
            )


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
            and all(_compare(a, b) for a, b in zip(item_value, filter_value, strict=True))
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


def ns_matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    # The path may be shorter than the namespace: compare its length only.
    pairs = (
        zip(ns, path, strict=False) if cond.match_type == "prefix" else zip(reversed(ns), reversed(path), strict=False)
    )
    if cond.match_type not in ("prefix", "suffix"):
        raise ValueError(f"Unsupported match type: {cond.match_type}")
    return all(p == "*" or a == p for a, p in pairs)

