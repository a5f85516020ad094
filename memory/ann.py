"""The FAISS index of one memory namespace: exact while small, IVF once it is large.

Every namespace's index is an ``IndexIVFFlat`` over inner product (the vectors are normalized,
so it is a cosine) holding the SQLite row ids:

* below :data:`IVF_MIN` vectors it has one list (``nlist = 1``, ``nprobe = 1``): an exact scan,
  with nothing to train, so a missing index is rebuilt from SQLite at once;
* from :data:`IVF_MIN` vectors on, ``nlist ≈ 2·√n`` lists trained by k-means on a sample of
  ``39·nlist`` vectors, searched with ``nprobe = NPROBE``. Training takes seconds at 100k, so it
  runs in a background thread of the store (``vectors.py``) while the exact index keeps answering,
  and again whenever the namespace has grown :data:`RETRAIN_GROWTH` times past the size it was
  trained for. Measured at 100k (``benchmarks/memory_bench.py``): recall@5 ≥ 0.99 against an
  exact search, a fraction of a millisecond per query on one thread.

An IVF index stores its ids in its lists and, with its hash-table direct map, finds one by id: so
removing an id is a lookup and a swap with the list's last entry (no rewrite of the whole array,
no scan); ``ids_of`` reads the ids back. Files are
written and read with FAISS's own binary format (no pickle).
"""

from __future__ import annotations

import functools
import math
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

IVF_MIN = 20_000  # vectors from which a namespace gets a trained IVF index
RETRAIN_GROWTH = 4  # retrain when the namespace holds this many times the vectors it was trained with
NPROBE = 8  # lists searched per query (of 2·√n): recall@5 0.995 at 100k, 0.991 at 400k (memory_bench.py vectors)
TRAIN_POINTS_PER_LIST = 39  # FAISS's own minimum for k-means without a warning


@functools.cache
def _import_faiss() -> Any:
    import faiss

    return faiss


_thread = threading.local()


def faiss_module() -> Any:
    """faiss, imported on first use, with OpenMP pinned to one thread *in the calling thread*.

    OpenMP's thread count is per calling thread (setting it in the thread that imported faiss
    leaves the asyncio and memory threads at the machine's count), so every thread that searches,
    adds or trains calls this first. One thread: a single query gains nothing from OpenMP's
    fork/join (a flat scan at 100k is about twice as fast on one thread; two threads gave a 24 ms
    p95), and the agent's other threads stay free."""
    faiss = _import_faiss()
    if not getattr(_thread, "pinned", False):
        faiss.omp_set_num_threads(1)
        _thread.pinned = True
    return faiss


def nlist_for(n: int) -> int:
    """How many lists an index of ``n`` vectors gets (1: exact)."""
    return 1 if n < IVF_MIN else max(2, round(2 * math.sqrt(n)))


def trained_for(index: Any) -> int:
    """The size an index's lists were chosen for (0: exact, never trained)."""
    nlist = int(index.nlist)
    return 0 if nlist <= 1 else int((nlist / 2) ** 2)


def needs_training(index: Any) -> bool:
    """A large index never trained, grown :data:`RETRAIN_GROWTH` times past the size its lists were
    chosen for, or shrunk as many times below it (its lists then too small for ``NPROBE``)."""
    n = int(index.ntotal)
    if n < IVF_MIN:
        return False
    trained = trained_for(index)
    return trained == 0 or n >= RETRAIN_GROWTH * trained or trained >= RETRAIN_GROWTH * n


def new_index(dim: int, vectors: np.ndarray | None = None, *, nlist: int = 1, seed: int = 1234) -> Any:
    """An empty inner-product IVF index: one list (exact) or ``nlist`` trained on ``vectors``."""
    import numpy as np

    faiss = faiss_module()
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    if nlist == 1:
        quantizer.add(np.zeros((1, dim), dtype="float32"))  # the one list: every vector goes there
        index.is_trained = True
    else:
        assert vectors is not None
        sample = vectors
        want = TRAIN_POINTS_PER_LIST * nlist
        if len(vectors) > want:
            rows = np.random.default_rng(seed).choice(len(vectors), size=want, replace=False)
            sample = vectors[np.sort(rows)]
        index.cp.seed = seed
        index.train(np.ascontiguousarray(sample, dtype="float32"))
    configure(index)
    return index


def configure(index: Any) -> Any:
    """Search settings, and a hash table from id to list position (saved with the index), so
    removing an id costs one lookup instead of a scan of every list (:func:`remove`)."""
    faiss = faiss_module()
    index.nprobe = 1 if index.nlist <= 1 else min(NPROBE, int(index.nlist))
    if index.direct_map.type != faiss.DirectMap.Hashtable:
        index.set_direct_map_type(faiss.DirectMap.Hashtable)
    return index


def remove(index: Any, ids: Any) -> None:
    import numpy as np

    faiss = faiss_module()
    arr = np.ascontiguousarray(ids, dtype="int64")  # alive for the whole call: the selector points into it
    index.remove_ids(faiss.IDSelectorArray(arr))


def build(dim: int, ids: Any, vectors: Any, *, train: bool, nlist: int | None = None) -> Any:
    """An index holding ``vectors`` under ``ids``; trained (IVF) when ``train`` and they are many,
    with ``nlist`` lists (default: :func:`nlist_for` their number)."""
    import numpy as np

    arr = np.ascontiguousarray(vectors, dtype="float32").reshape(-1, dim)
    index = new_index(dim, arr, nlist=(nlist or nlist_for(len(arr))) if train else 1)
    if len(arr):
        index.add_with_ids(arr, np.asarray(ids, dtype="int64"))
    return index


def is_ours(index: Any) -> bool:
    """A file read back is an inner-product IVF index (an older IndexIDMap2 file is rebuilt)."""
    faiss = faiss_module()
    return isinstance(index, faiss.IndexIVFFlat) and index.metric_type == faiss.METRIC_INNER_PRODUCT


def ids_of(index: Any) -> np.ndarray:
    """Every id an IVF index holds (int64)."""
    import numpy as np

    faiss = faiss_module()
    inv = index.invlists
    parts = []
    for lst in range(int(index.nlist)):
        size = inv.list_size(lst)
        if size:
            parts.append(faiss.rev_swig_ptr(inv.get_ids(lst), size).copy())
    return np.concatenate(parts).astype("int64") if parts else np.zeros(0, dtype="int64")


def contents(index: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(id, vector)`` an IVF index holds, copied out of its lists: ``(ids, [n, d] float32)``."""
    import numpy as np

    faiss = faiss_module()
    inv, d = index.invlists, int(index.d)
    ids, vecs = [], []
    for lst in range(int(index.nlist)):
        size = inv.list_size(lst)
        if size:
            ids.append(faiss.rev_swig_ptr(inv.get_ids(lst), size).copy())
            codes = faiss.rev_swig_ptr(inv.get_codes(lst), size * inv.code_size).copy()
            vecs.append(codes.view("float32").reshape(size, d))
    if not ids:
        return np.zeros(0, dtype="int64"), np.zeros((0, d), dtype="float32")
    return np.concatenate(ids).astype("int64"), np.concatenate(vecs)
