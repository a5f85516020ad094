"""Values computed from objects and found again by the objects' identity (:class:`IdentityCache`).

No third-party imports: ``context.py`` (loaded by every command, before LangChain) uses it too;
``tokens.py`` measures messages and tools with it.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["IdentityCache"]

K = TypeVar("K")
V = TypeVar("V")


class IdentityCache(Generic[K, V]):
    """Values computed from objects, found again by the object's identity. An object that
    takes weak references (messages, tools) is not kept alive by the cache: its entry goes
    when it does, before its ``id`` can be reused; any other object (a schema dict) is kept
    with its value. The oldest entries go beyond ``size``. For objects nobody changes in
    place - the messages of a thread's state, the tools of a registry."""

    def __init__(self, compute: Callable[[K], V], size: int = 8192) -> None:
        self.compute = compute
        self.size = size
        self.misses = 0
        self._data: dict[int, tuple[Callable[[], Any], V]] = {}
        self._lock = threading.Lock()

    def __call__(self, obj: K) -> V:
        hit = self._data.get(id(obj))
        if hit is not None and hit[0]() is obj:
            return hit[1]
        value = self.compute(obj)
        key = id(obj)
        try:
            ref: Callable[[], Any] = weakref.ref(obj, functools.partial(self._forget, key))
        except TypeError:  # no weak references: keep the object (its id stays its own)
            ref = functools.partial(_same, obj)
        with self._lock:
            self.misses += 1
            while len(self._data) >= self.size:
                self._data.pop(next(iter(self._data)), None)
            self._data[key] = (ref, value)
        return value

    def _forget(self, key: int, ref: Any) -> None:
        """The object died: drop its entry (from the garbage collector: no lock)."""
        hit = self._data.get(key)
        if hit is not None and hit[0] is ref:
            self._data.pop(key, None)


def _same(obj: Any) -> Any:
    return obj
