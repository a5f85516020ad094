"""identity.IdentityCache: values found again by the object's identity, entries that go with
their objects, one object per entry for the garbage collector."""

from __future__ import annotations

import gc

from langchain_core.messages import AIMessage

from smart_agent.runs.identity import IdentityCache


def test_a_value_is_computed_once_per_object():
    calls = []
    cache = IdentityCache(lambda m: calls.append(m) or len(m.content))
    a, b = AIMessage("abc"), AIMessage("abc")  # equal, not the same object
    assert [cache(a), cache(a), cache(b), cache(a)] == [3, 3, 3, 3]
    assert calls == [a, b] and cache.misses == 2


def test_an_entry_goes_with_its_object_and_is_not_found_for_another():
    cache = IdentityCache(lambda m: m.content)
    message = AIMessage("first")
    assert cache(message) == "first"
    key = id(message)
    del message
    assert key not in cache.entries  # (freed by its last reference: the entry's callback dropped it)
    assert all(cache(AIMessage(f"m{i}")) == f"m{i}" for i in range(50))  # a reused id is measured anew


def test_an_object_without_weak_references_is_kept_with_its_value():
    cache = IdentityCache(len)
    schema = {"a": 1, "b": 2}
    assert cache(schema) == 2
    entry = cache.entries[id(schema)]
    assert entry() is schema and entry.value == 2


def test_the_oldest_entries_go_beyond_size():
    cache = IdentityCache(lambda m: m.content, size=3)
    messages = [AIMessage(str(i)) for i in range(5)]
    for m in messages:
        cache(m)
    assert list(cache.entries) == [id(m) for m in messages[2:]]


def test_an_entry_is_one_object_for_the_garbage_collector():
    cache = IdentityCache(lambda m: 7)  # (an int value: nothing the collector tracks)
    messages = [AIMessage(str(i)) for i in range(200)]
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        for m in messages:
            cache(m)
        grown = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert 200 <= grown < 220  # one entry each (a weak reference holding key and value)
