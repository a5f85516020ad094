"""Values computed from objects and found again by the objects' identity (:class:`IdentityCache`).

No third-party imports: ``context.py`` (loaded by every command, before LangChain) uses it too;
``tokens.py`` measures messages and tools with it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["IdentityCache"]

K = TypeVar("K")
V = TypeVar("V")


class Entry(weakref.ref):
    """A cached object's entry: a weak reference to it (calling the entry gives the object,
    or None once it has died) that also holds its key and value. One object per entry: a
    message measured at every step is cached with nothing else for the garbage collector
    to count."""

    __slots__ = ("key", "value")
    key: int
    value: Any


class Kept:
    """The entry of an object that takes no weak reference (a schema dict): it keeps the
    object, so its ``id`` stays its own while the entry exists."""

    __slots__ = ("key", "obj", "value")
    key: int
    value: Any

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __call__(self) -> Any:
        return self.obj


class IdentityCache(Generic[K, V]):
    """Values computed from objects, found again by the object's identity. An object that
    takes weak references (messages, tools) is not kept alive by the cache: its entry goes
    when it does, before its ``id`` can be reused; any other object (a schema dict) is kept
    with its value. The oldest entries go beyond ``size``. For objects nobody changes in
    place - the messages of a thread's state, the tools of a registry.

    ``entries`` maps ``id(obj)`` to the object's entry (:class:`Entry` or :class:`Kept`): a hit
    is an entry whose call returns ``obj``; its ``value`` is the value."""

    def __init__(self, compute: Callable[[K], V], size: int = 8192) -> None:
        self.compute = compute
        self.size = size
        self.misses = 0
        self.entries: dict[int, Entry | Kept] = {}
        self._lock = threading.Lock()
        self._died = self._forget  # (one callback for every entry)

    def __call__(self, obj: K) -> V:
        hit = self.entries.get(id(obj))
        if hit is not None and hit() is obj:
            return hit.value
        value = self.compute(obj)
        entry: Entry | Kept
        try:
            entry = Entry(obj, self._died)
        except TypeError:  # no weak references: keep the object (its id stays its own)
            entry = Kept(obj)
        entry.key, entry.value = id(obj), value
        with self._lock:
            self.misses += 1
            while len(self.entries) >= self.size:
                self.entries.pop(next(iter(self.entries)), None)
            self.entries[entry.key] = entry
        return value

    def _forget(self, entry: Entry) -> None:
        """The object died: drop its entry (from the garbage collector: no lock)."""
        if self.entries.get(entry.key) is entry:
            self.entries.pop(entry.key, None)
