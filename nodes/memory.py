"""memory_recall / memory_write: long-term memory around a run.

``memory_recall`` runs at the start of a run: it searches the user's memories
with the task (the last human message) and puts a text block into
``memory_context``, which the agent node appends to the system prompt. On the FAISS store the
recall starts earlier, with the run: :func:`prefetch_recall` is a resolver hook that queues the
task for the store's embedder while the resolver and the step to ``memory_recall`` go on;
``memory_recall`` then awaits the vector and searches, checking for damaged rows. Both steps run
on the loop when the store is open and free (:func:`_start_on_loop` says why), else on a memory
thread (opening the store reads files; a busy store would make the loop wait). Other stores embed
inside their ``asearch``, awaited in ``memory_recall``. With
nothing stored yet (no runtime store and no memory database in the data folder: a first run)
neither opens the store: the recall is empty, and the run's write creates the store.
``memory_write`` runs when the run ends: it writes one deterministic observation
(task, answer, what the tools did) with consolidation -- no extra model call. On the FAISS
store (the default, or a runtime one) the write itself -- embedding the observation,
consolidation, repair of damaged rows -- is queued on the memory thread
(``memory/background.py``) and runs after the answer was returned: the node emits
``memory_write`` with ``deferred: true`` at once, and the write's own result is logged and kept
for ``background.drain()``. Nothing is lost when the process exits normally (the memory thread
is joined at interpreter exit after its queued jobs; the store's ``close`` waits for them), and
every later read of the store in the process waits for it. Other stores (async, bound to the
run's event loop) are written in the node as before.

Both are no-ops when the context's ``memory`` is False, and neither can fail a
run: a memory error is logged and reported as an event (a memory file that is not
a smart-agent memory database is refused, untouched, and memory is off for the
run; damaged rows the store skipped are reported as a ``warning``, and
``memory_write`` re-embeds those whose text is intact, reported as ``repaired``). The store is
``runtime.store`` whenever the run has one -- any ``BaseStore`` with a vector index, through
``memory/backend.py`` -- and the default FAISS store in ``$SMART_AGENT_HOME/memory`` when it has
none. A runtime store without an index turns memory off for the run with one ``error`` event
(from ``memory_recall``; ``memory_write`` then reports ``skipped``). FAISS work that could wait
(opening, writing, a busy store) runs in a thread so the event loop keeps streaming.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any, NamedTuple

from langgraph.runtime import Runtime

from ..config.context import AgentContext, context_field
from ..memory import backend, background
from ..memory.backend import NoVectorIndex, is_memory_store
from ..memory.integrity import MemoryUnavailable
from ..memory.service import (
    OBSERVATION_INDEX,
    build_observation,
    format_memory_context,
    memory_enabled,
    min_similarity,
    namespace_for,
    nothing_stored,
    observation_metadata,
    opened_store_for,
    run_task_and_facts,
    store_for,
)
from ..runs.events import emit
from ..state import AgentState

log = logging.getLogger(__name__)

__all__ = ["memory_recall", "memory_write", "prefetch_recall"]

class _OnLoop(NamedTuple):
    """A prefetched recall started on the run's event loop: its store, the future of the query
    vector (the embedder's queue), the writes it comes after and the similarity floor."""

    store: Any
    vector: Future[Any]
    writes: int
    floor: float


# The recalls started for runs that started, by run key: a future of the whole recall (the memory
# threads run it) or, started on the loop, an _OnLoop.
_prefetched: dict[tuple[int, tuple[str, ...], str, int], Future[Any] | _OnLoop] = {}
_prefetched_lock = threading.Lock()
RECALL_ON_LOOP = True  # False: every prefetched recall on the memory threads (benchmarks compare the two)
MAX_PREFETCHED = 64  # runs whose memory_recall never came (an error in the resolver) are dropped


def _runtime_parts(runtime: Any) -> tuple[Any, Any]:
    return getattr(runtime, "context", None), getattr(runtime, "store", None)


def _failure(exc: Exception) -> dict[str, Any]:
    """Event fields for a memory error; a refused memory file speaks for itself (one line naming it)."""
    if isinstance(exc, MemoryUnavailable):
        return {"error": str(exc), "memory": "off"}
    return {"error": f"{type(exc).__name__}: {exc}"}


def damage_report(store: Any, ns: tuple[str, ...], *, repair: bool = False) -> dict[str, Any]:
    """Event fields reporting the namespace's damaged rows (skipped by recall and writes), if any;
    with ``repair``, rows whose only damage is their vector are re-embedded first."""
    fields: dict[str, Any] = {}
    if repair and callable(getattr(store, "repair", None)):
        try:
            if fixed := store.repair(ns):
                fields["repaired"] = len(fixed)
        except Exception as exc:  # the write itself succeeded
            log.warning("smart-agent memory: repair failed: %s", exc)
    found = store.damaged(ns) if callable(getattr(store, "damaged", None)) else []
    take = getattr(store, "take_notices", None)
    warnings = take() if callable(take) else []  # the folder worked around or repaired
    if found:
        reasons = "; ".join(f"{d['key']}: {d['reason']}" for d in found[:3])
        warnings.insert(0, f"{len(found)} damaged memory row(s) skipped ({reasons})")
        fields["damaged"] = len(found)
    if warnings:
        fields["warning"] = "; ".join(warnings)
    return fields


async def _store(runtime_store: Any, ctx: Any) -> Any:
    """``store_for``'s store: found on the loop when that reads no file (the runtime store, the
    default store once open), else looked up in a thread (opening the default store reads files)."""
    store = opened_store_for(runtime_store, ctx)
    return store if store is not None else await asyncio.to_thread(store_for, runtime_store, ctx)


def recall_job(runtime_store: Any, ctx: Any, ns: tuple[str, ...], task: str, k: int, floor: float) -> Any:
    """A run's whole recall in this thread (the FAISS store): open the store, embed the task,
    search, look for damaged rows; None for another store. (The prefetch runs the same in two
    steps around the embedder's queue; ``benchmarks/memory_bench.py`` times this.)"""
    store = store_for(runtime_store, ctx)
    if not is_memory_store(store):
        return None
    return store.recall(ns, task, k, min_similarity=floor), damage_report(store, ns)


def _start_recall(runtime_store: Any, ctx: Any, ns: tuple[str, ...], task: str, writes: int) -> Any:
    """First step of a prefetched recall (a read thread): open the store and queue the task for the
    embedder; ``(store, future of the query vector)``, or None for another store."""
    store = store_for(runtime_store, ctx)
    if not is_memory_store(store):
        return None
    with background.as_of(writes):  # the writes queued before this run started, not those after
        later = getattr(store, "query_vector_later", None)
        return store, (later(ns, task) if callable(later) else None)


def _after_embedding(started: Any, ns: tuple[str, ...], task: str, k: int, floor: float, writes: int) -> Any:
    """Once the first step is done: the rest, after the query vector (a future of it)."""
    if started is None or started[1] is None:
        return _finish_recall(started, ns, task, k, floor, writes)
    return background.then(started[1], lambda _: _finish_recall(started, ns, task, k, floor, writes))


def _finish_recall(
    started: Any, ns: tuple[str, ...], task: str, k: int, floor: float, writes: int
) -> Any:
    """Second step (a read thread, once the query is embedded): search, look for damaged rows."""
    if started is None:
        return None
    store, vector = started
    qvec = vector.result() if vector is not None else None  # (None: nothing to search, recall says so)
    return _search(store, ns, task, k, floor, writes, qvec)


def _search(store: Any, ns: tuple[str, ...], task: str, k: int, floor: float, writes: int, qvec: Any) -> Any:
    """A recall's search once its query is embedded, and the check for damaged rows:
    ``(recalled, damage)``, waiting only for the writes queued before the run started."""
    with background.as_of(writes):
        return store.recall(ns, task, k, min_similarity=floor, query_vector=qvec), damage_report(store, ns)


def _start_on_loop(
    runtime_store: Any, ctx: Any, ns: tuple[str, ...], task: str, writes: int, floor: float
) -> _OnLoop | None:
    """The recall's first step right here, on the run's event loop, when that reads no file and
    waits for nothing (the FAISS store already open, free, every earlier write done:
    ``held_if_free``); None otherwise.

    Why not a read thread, as the first recall of a process takes: each of a recall's steps makes
    a few dozen calls that give up the GIL (SQLite, FAISS, locks), and a thread taking the GIL
    back from a busy event loop waits up to the switch interval (5 ms) each time. Measured: a
    recall that takes 0.66 ms alone took 198 ms in a thread beside a busy Python thread; 32
    concurrent runs' recalls ended up to ~500 ms after their queries were embedded."""
    if not RECALL_ON_LOOP:
        return None
    store = opened_store_for(runtime_store, ctx)
    held = getattr(store, "held_if_free", None)
    if store is None or not callable(held) or not is_memory_store(store):
        return None
    with background.as_of(writes), held() as free:
        return _OnLoop(store, store.query_vector_later(ns, task), writes, floor) if free else None


def _finish_on_loop(entry: _OnLoop, ns: tuple[str, ...], task: str, k: int, qvec: Any) -> Any:
    """The recall's second step on the loop once its query is embedded (``(recalled, damage)``),
    or None when the store is busy (then a read thread does it)."""
    with background.as_of(entry.writes), entry.store.held_if_free() as free:
        return _search(entry.store, ns, task, k, entry.floor, entry.writes, qvec) if free else None


def prefetch_recall(state: Mapping[str, Any], update: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
    """Resolver hook: start this run's recall, on the loop or the memory threads (never fails)."""
    try:
        k = int(context_field(ctx, "memory_k", 5))
        if not memory_enabled(ctx) or k <= 0:
            return {}
        task, _, _ = run_task_and_facts(state)
        if not task:
            return {}
        from langgraph.runtime import get_runtime

        runtime_store = getattr(get_runtime(), "store", None)
        if nothing_stored(runtime_store) or not (runtime_store is None or is_memory_store(runtime_store)):
            return {}  # nothing to find, or a store memory_recall searches on the run's loop
        ns = namespace_for(ctx)
        writes, floor = background.writes_queued(), min_similarity()
        # The query waits in the embedder's queue (the queries waiting there are embedded a few
        # a call, oldest first) with no thread waiting for it; the search then runs on the loop (memory_recall)
        # or, when the store is not open yet or busy, on a read thread.
        entry: Future[Any] | _OnLoop | None = _start_on_loop(runtime_store, ctx, ns, task, writes, floor)
        if entry is None:
            started = background.submit_read(_start_recall, runtime_store, ctx, ns, task, writes)
            entry = background.then(started, lambda s: _after_embedding(s, ns, task, k, floor, writes))
        with _prefetched_lock:
            _prefetched[(id(runtime_store), ns, task, k)] = entry
            while len(_prefetched) > MAX_PREFETCHED:
                _prefetched.pop(next(iter(_prefetched)))
    except Exception as exc:  # memory_recall recalls itself
        log.debug("smart-agent memory: no prefetch: %s", exc)
    return {}


async def _prefetched_recall(runtime_store: Any, ns: tuple[str, ...], task: str, k: int) -> Any:
    """What the prefetch found, ``(recalled, damage)``; None when there was none or it was for
    another store (an error the job raised is raised here, as the recall's own)."""
    with _prefetched_lock:
        entry = _prefetched.pop((id(runtime_store), ns, task, k), None)
    if not isinstance(entry, _OnLoop):
        return None if entry is None else await asyncio.wrap_future(entry)
    qvec = await asyncio.wrap_future(entry.vector)
    found = _finish_on_loop(entry, ns, task, k, qvec)
    if found is None:  # (taken since the run started: a read thread waits for it)
        read = background.submit_read(_search, entry.store, ns, task, k, entry.floor, entry.writes, qvec)
        found = await asyncio.wrap_future(read)
    return found


def _cleared(state: Mapping[str, Any]) -> dict[str, Any]:
    """Disabled: change nothing, except a stale block left by an earlier run."""
    if state.get("memory_context") or state.get("recalled_memories"):
        return {"memory_context": "", "recalled_memories": []}
    return {}


async def memory_recall(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Recall the top ``memory_k`` memories for this run's task into ``memory_context``."""
    ctx, runtime_store = _runtime_parts(runtime)
    k = int(context_field(ctx, "memory_k", 5))
    if not memory_enabled(ctx) or k <= 0:
        return _cleared(state)
    task, _, _ = run_task_and_facts(state)
    if not task:
        return _cleared(state)
    start = time.perf_counter()
    ns = namespace_for(ctx)
    if nothing_stored(runtime_store):  # a first run: no store to open (memory_write creates it)
        emit("memory_recall", query=task[:200], namespace=list(ns), count=0, memories=[],
             took_ms=round((time.perf_counter() - start) * 1000, 1))
        return {"memory_context": "", "recalled_memories": []}  # what an empty recall returns
    try:
        # Opening the store and searching touch files: off the event loop (a server's loop).
        found = await _prefetched_recall(runtime_store, ns, task, k)
        if found is None:
            store = await _store(runtime_store, ctx)
            recalled = await backend.recall(store, ns, task, k, min_similarity=min_similarity())
            damage = await asyncio.to_thread(damage_report, store, ns)
        else:
            recalled, damage = found
    except NoVectorIndex as exc:
        emit("error", node="memory_recall", error=str(exc), memory="off")
        return _cleared(state)
    except Exception as exc:  # memory must never break a run
        log.warning("smart-agent memory: recall failed: %s", exc)
        emit("memory_recall", **_failure(exc), count=0, namespace=list(ns))
        return _cleared(state)
    now = time.time()
    memories = [r.to_dict(now) for r in recalled]
    emit(
        "memory_recall",
        query=task[:200],
        namespace=list(ns),
        count=len(memories),
        memories=[{k_: m[k_] for k_ in ("key", "score", "similarity", "age")} for m in memories],
        took_ms=round((time.perf_counter() - start) * 1000, 1),
        **damage,
    )
    return {"memory_context": format_memory_context(recalled, now), "recalled_memories": memories}


def _write_later(store: Any, ns: tuple[str, ...], text: str, importance: float, start: float, task: str) -> None:
    """The deferred write (memory thread): what the ``memory_write`` event would have said is
    logged and kept for ``background.drain()``. Indexed on the task, it reuses the vector the
    run's recall computed for it (``vectors.Embedder``): no model call."""
    try:
        result = store.remember(
            ns, text, importance=importance, kind="observation", metadata=observation_metadata(task),
            index=OBSERVATION_INDEX,
        )
        fields = {**result.to_dict(), "took_ms": round((time.perf_counter() - start) * 1000, 1)}
        fields.update(damage_report(store, ns, repair=True))
        log.debug("smart-agent memory: wrote %s", fields)
    except Exception as exc:
        log.warning("smart-agent memory: write failed: %s", exc)
        fields = {**_failure(exc), "namespace": list(ns)}
    background.record({"event": "memory_write", **fields})


async def memory_write(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Write an observation of the finished task (task, answer, tool facts)."""
    ctx, runtime_store = _runtime_parts(runtime)
    if not memory_enabled(ctx):
        return {}
    task, answer, facts = run_task_and_facts(state)
    if not task or not answer:
        emit("memory_write", skipped="no task or no answer")
        return {}
    text, importance = build_observation(task, answer, tool_facts=facts, failed=bool(state.get("error")))
    start = time.perf_counter()
    ns = namespace_for(ctx)
    try:
        store = await _store(runtime_store, ctx)  # (a refused store: the event says so)
        if is_memory_store(store):  # the FAISS store: after the answer, on the memory thread
            background.submit(_write_later, store, ns, text, importance, start, task)
            emit("memory_write", deferred=True, action="queued", namespace=list(ns), importance=importance)
            return {}
        result = await backend.remember(
            store, ns, text, importance=importance, kind="observation", metadata=observation_metadata(task),
            index=OBSERVATION_INDEX,
        )
        damage = await asyncio.to_thread(damage_report, store, ns, repair=True)
    except NoVectorIndex as exc:  # memory_recall reported it
        emit("memory_write", skipped=str(exc), namespace=list(ns))
        return {}
    except Exception as exc:
        log.warning("smart-agent memory: write failed: %s", exc)
        emit("memory_write", **_failure(exc), namespace=list(ns))
        return {}
    emit("memory_write", **result.to_dict(), took_ms=round((time.perf_counter() - start) * 1000, 1), **damage)
    return {}
