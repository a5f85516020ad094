"""The memory store's embedder: texts to vectors, batched, with the vectors of recent texts kept.

:class:`Embedder` owns the embedding model (loaded on first use), one thread that runs it, and
the lock of its queue. Every text a store embeds goes through :meth:`Embedder.submit`: requests
that arrive while the model is busy wait in the queue and are then encoded in calls of up to
:data:`CALL_TEXTS` texts, oldest first, so a burst of queries (32 runs that start together) takes
a few short calls instead of 32 calls one after another or one long call (a model behind an API,
where a call costs a round trip whatever its size, takes every waiting text, up to
:data:`MAX_BATCH`, in one call). Each call's requests
are answered when it ends, so the first runs go on (their recall, their first model call, on the
event loop) while the model computes the next call on the other core (ONNX Runtime holds no GIL
while it computes); one call for the whole burst would release every run at its end, together.
A text embedded recently is answered from a bounded cache without running the model again -- a
run's memory, indexed on its task, reuses the vector its recall computed for the same task.

It also keeps the folder's vectors and its model in step: when the folder's vectors came from
another model (``meta.embedding_model``), every stored text is re-embedded once, in a new
vectors epoch (:meth:`Embedder.check_model`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from .embeddings import LocalSentenceEmbeddings, embed_texts, load_embeddings
from .rows import RowTable, vector_bytes

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

log = logging.getLogger("smart_agent.memory.store")

__all__ = ["CACHE_SIZE", "CALL_TEXTS", "EMBED_THREAD", "MAX_BATCH", "Embedder"]

CACHE_SIZE = 4096  # recent texts whose vectors are kept (384 floats: 1.5 KB each)
MAX_BATCH = 256  # texts encoded in one call at most
# Texts of waiting requests taken into one call of a model that computes in this process (the local
# model: its time grows with the texts); a request is never split across calls: a larger one goes
# alone, split by MAX_BATCH. A model behind an API (a call costs a round trip whatever its size)
# takes up to MAX_BATCH. Measured with 32 concurrent runs (benchmarks/memory_concurrency.py, one
# process, interleaved): 8 a call 0.89-0.94x create_agent's throughput against 0.81-0.84x for the
# whole burst in one call; 6 and 12 alike, 4 and 16 below.
CALL_TEXTS = 8
EMBED_THREAD = "smart-agent-memory-embed"


class _Request:
    __slots__ = ("future", "texts")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.future: Future[Any] = Future()


class Embedder:
    """Embeds texts for one store: batched on its own thread, recent vectors reused.

    ``spec``: ``"local"``, ``"provider:model"`` or a LangChain ``Embeddings``; ``name``: what
    the folder records as the model of its vectors.
    """

    def __init__(self, spec: str | Embeddings, name: str, rows: RowTable) -> None:
        self.spec = spec
        self.name = name
        self.rows = rows
        self._model: Embeddings | None = None
        self._model_checked = False
        self._lock = threading.Lock()  # the queue, the cache and the worker's state
        self._queue: list[_Request] = []
        self._wake = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self.encode_calls = 0  # model calls made (tests and benchmarks: batching is visible)
        # Whether the model computes in this process (calls of CALL_TEXTS) or behind an API (calls
        # of up to MAX_BATCH); None: found out from the model on the first call.
        self.in_process: bool | None = None

    @property
    def embeddings(self) -> Embeddings:
        """The model (loaded on first use)."""
        if self._model is None:
            self._model = load_embeddings(self.spec)
        return self._model

    # -- embedding -----------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized float32 vectors of ``texts`` (waits for the model thread)."""
        return self.submit(texts).result()

    def submit(self, texts: Sequence[str]) -> Future[np.ndarray]:
        """The vectors of ``texts``, later: queued for the model thread, which encodes the requests
        waiting, oldest first, a few texts a call (:data:`CALL_TEXTS`, the local model) or all of
        them (a model behind an API); cached texts cost nothing."""
        texts = list(texts)
        req = _Request(texts)
        with self._lock:
            cached = [self._cache.get(t) for t in texts]
            if all(v is not None for v in cached):
                for t in texts:
                    self._cache.move_to_end(t)
                req.future.set_result(_stack(cached, texts))
                return req.future
            self._queue.append(req)
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name=EMBED_THREAD, daemon=True)
                self._worker.start()
            self._wake.notify()
        return req.future

    def known(self, text: str) -> Any:
        """The cached vector of ``text`` (None when it is not cached)."""
        with self._lock:
            return self._cache.get(text)

    def _run(self) -> None:
        while True:
            limit = self._texts_per_call()  # (outside the lock: the first time, it builds the model's client)
            with self._lock:
                while not self._queue:
                    self._wake.wait()
                batch = self._next_call(limit)
            self._encode(batch)

    def _texts_per_call(self) -> int:
        if self.in_process is None:
            try:
                self.in_process = isinstance(self.embeddings, LocalSentenceEmbeddings)
            except Exception:  # (the call that follows reports it to its callers)
                return MAX_BATCH
        return CALL_TEXTS if self.in_process else MAX_BATCH

    def _next_call(self, limit: int) -> list[_Request]:
        """The oldest waiting requests, up to ``limit`` texts (at least one request), taken off the
        queue (under the lock)."""
        taken, texts = 0, len(self._queue[0].texts)
        while taken + 1 < len(self._queue) and texts + len(self._queue[taken + 1].texts) <= limit:
            taken += 1
            texts += len(self._queue[taken].texts)
        batch, self._queue = self._queue[: taken + 1], self._queue[taken + 1 :]
        return batch

    def _encode(self, batch: list[_Request]) -> None:
        try:
            self.check_model()
            with self._lock:
                todo = list(dict.fromkeys(t for r in batch for t in r.texts if t not in self._cache))
            vectors: dict[str, Any] = {}
            for start in range(0, len(todo), MAX_BATCH):
                chunk = todo[start : start + MAX_BATCH]
                arr = embed_texts(self.embeddings, chunk)
                self.encode_calls += 1
                vectors.update(zip(chunk, arr, strict=True))
            with self._lock:
                for text, vec in vectors.items():
                    self._cache[text] = vec
                    self._cache.move_to_end(text)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
                found = {t: self._cache.get(t) for r in batch for t in r.texts}
            for r in batch:
                r.future.set_result(_stack([vectors.get(t, found[t]) for t in r.texts], r.texts))
        except BaseException as exc:  # each waiting caller gets the error
            for r in batch:
                if not r.future.done():
                    r.future.set_exception(exc)

    # -- the folder's model ----------------------------------------------------------------------
    def check_model(self, on_new_epoch: Callable[[], None] | None = None) -> None:
        """Re-embed everything once if the folder's vectors came from another model."""
        if self._model_checked:
            return
        with self.rows.lock:
            if self._model_checked:
                return
            stored = self.rows.meta("embedding_model")
            if stored is None:
                self.rows.set_meta("embedding_model", self.name)
            elif stored != self.name:
                self._reembed_all(stored)
                if on_new_epoch is not None:
                    on_new_epoch()
            self._model_checked = True

    @property
    def model_checked(self) -> bool:
        """Whether :meth:`check_model` has run (before it, embedding may re-embed the folder)."""
        return self._model_checked

    def assume_checked(self) -> None:
        """The folder's vectors are this model's (benchmarks that fill it with precomputed vectors)."""
        self._model_checked = True

    def _reembed_all(self, old: str) -> None:
        own, fields = self.rows.texts()
        log.warning(
            "smart-agent memory: vectors in %s were made by %r; re-embedding %d items with %r",
            self.rows.path.parent, old, len(own) + len(fields), self.name,
        )

        def vectors(rows: Sequence[Any]) -> list[tuple[bytes, int]]:
            out: list[tuple[bytes, int]] = []
            for start in range(0, len(rows), 256):
                chunk = rows[start : start + 256]
                arr = embed_texts(self.embeddings, [r[1] for r in chunk])
                out.extend((vector_bytes(v), r[0]) for v, r in zip(arr, chunk, strict=True))
            return out

        self.rows.replace_vectors(vectors(own), vectors(fields), self.name)
        with self._lock:
            self._cache.clear()


def _stack(vectors: Sequence[Any], texts: Sequence[str]) -> Any:
    import numpy as np

    if not texts:
        return np.zeros((0, 0), dtype="float32")
    return np.stack(list(vectors)).astype("float32", copy=False)
