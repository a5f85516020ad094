"""How recall ranks memories, and what the memory operations return.

Ranking (``RankingConfig``)::

    score = w_sim * max(cos, 0) + w_rec * 0.5 ** (age_days / half_life_days) + w_imp * importance

with defaults w_sim=0.70, w_rec=0.15, w_imp=0.15 and a 30-day half-life; ``age``
is measured from ``updated_at`` (the last write or merge). The FAISS search
returns the ``candidates`` most similar items first; the blend re-orders them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import SearchItem

DEFAULT_IMPORTANCE = 0.5


def humanize_age(seconds: float) -> str:
    """'just now', '5 minutes ago', '3 days ago', '2 months ago'..."""
    s = max(0.0, seconds)
    if s < 60:
        return "just now"
    for size, unit in (
        (31_536_000, "year"),
        (2_592_000, "month"),
        (604_800, "week"),
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
    ):
        if s >= size:
            n = int(s // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"  # pragma: no cover


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


def memory_times(item: Any) -> tuple[float, float]:
    """``(created, updated)`` of a memory in epoch seconds: the ``created_at`` / ``updated_at``
    numbers its value carries (written by ``memory/backend.py``, kept by export and import,
    since a ``BaseStore`` sets its own item times on every put), else the store item's times."""
    value = item.value if isinstance(item.value, Mapping) else {}
    out = []
    for name in ("created_at", "updated_at"):
        v = value.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
        else:
            out.append(getattr(item, name).timestamp())
    return out[0], out[1]


def importance_of(value: Mapping[str, Any]) -> float:
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
        created, updated = memory_times(self.item)
        age = now - updated
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
            "created_at": datetime.fromtimestamp(created, tz=UTC).isoformat(),
            "updated_at": datetime.fromtimestamp(updated, tz=UTC).isoformat(),
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

