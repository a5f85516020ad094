"""Benchmark: a memory store at 100k / 1M memories -- bulk import, opening it, its memory use.

    python benchmarks/memory_open.py [--sizes 100000,1000000] [--opens 5]

For each size, in one process: unit vectors near 64 random centres (so IVF lists are uneven, as
real ones are), one namespace;

* **raw FAISS IVF build**: ``ann.build(train=True)`` of the same vectors (the store's index kind
  and list count, trained on all of them at once, one OpenMP thread): the baseline;
* **bulk import**: ``FaissMemoryStore.batch`` of ``PutOp``s, 5,000 a call, precomputed vectors
  (no model), inside ``store.importing(namespace, n)`` (the size announced, as ``memory import``
  does), until the store's background training is done; the ratio to a raw build timed just
  before it. *Unannounced*: the same writes without ``importing`` (the index trained as it grows),
  against its own raw build;
* **open + first recall**: a new process opens the folder and recalls once (``k=5``, the query
  vector given): wall time from before ``FaissMemoryStore(...)`` to the answer, median of
  ``--opens`` processes, each also reporting its resident memory (``VmRSS``) after the recall
  minus before opening, against the raw vector bytes (n x 384 x 4).

Results go to ``benchmarks/results/memory_open.json``; ``rows()`` for ``benchmarks/run_all.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "memory_open.json"
DIM = 384
NS = ("memories", "bench")
CHUNK = 5000

CHILD = r"""
import json, sys, time
import numpy as np
from langchain_core.embeddings import Embeddings

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0

class Fixed(Embeddings):
    def embed_documents(self, texts):
        return [[1.0] + [0.0] * 383 for _ in texts]
    def embed_query(self, text):
        return self.embed_documents([text])[0]

from smart_agent.memory import ann
from smart_agent.memory.store import FaissMemoryStore
ann.faiss_module()
query = np.random.default_rng(int(sys.argv[2])).normal(size=384).astype("float32")
query /= np.linalg.norm(query)
before = rss_mb()
t = time.perf_counter()
store = FaissMemoryStore(sys.argv[1], embeddings=Fixed(), embedding_name="bench")
opened = time.perf_counter() - t
hits = store.recall(("memories", "bench"), "q", k=5, query_vector=query)
first = time.perf_counter() - t
print(json.dumps({"open_ms": opened * 1000, "first_recall_ms": first * 1000, "rss_mb": rss_mb() - before,
                  "hits": len(hits)}))
"""


def vectors(n: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(64, DIM)).astype("float32")
    out = np.empty((n, DIM), dtype="float32")
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        v = centres[rng.integers(0, 64, size=m)] + rng.normal(0, 0.6, size=(m, DIM)).astype("float32")
        out[start : start + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


class Lookup:
    """Precomputed vectors by text (an ``Embeddings`` without the model)."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        from langchain_core.embeddings import Embeddings

        class _Emb(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [table[t] for t in texts]  # type: ignore[misc]

            def embed_query(self, text: str) -> list[float]:
                return table[text]  # type: ignore[return-value]

        self.embeddings = _Emb()


def measure(n: int, opens: int) -> dict[str, Any]:
    from langgraph.store.base import PutOp

    from smart_agent.memory import ann
    from smart_agent.memory.store import FaissMemoryStore

    ann.faiss_module()
    vecs = vectors(n)
    texts = [f"m{i}" for i in range(n)]
    table = dict(zip(texts, vecs, strict=True))

    def raw_build(vecs: np.ndarray) -> tuple[float, int]:
        t = time.perf_counter()
        raw = ann.build(DIM, np.arange(n), vecs, train=True)
        return time.perf_counter() - t, int(raw.nlist)

    def bulk_import(folder: str, table: dict[str, np.ndarray], announced: bool) -> float:
        store = FaissMemoryStore(folder, embeddings=Lookup(table).embeddings, embedding_name="bench",
                                 max_items_per_namespace=n + 1)
        t = time.perf_counter()
        with store.importing(NS, n) if announced else contextlib.nullcontext():
            for start in range(0, n, CHUNK):
                store.batch([PutOp(NS, texts[i], {"text": texts[i]}) for i in range(start, min(n, start + CHUNK))])
        store.wait_for_training()
        took = time.perf_counter() - t
        store.close()
        return took

    tmpdir = os.environ.get("TMPDIR", "/tmp")
    with tempfile.TemporaryDirectory(prefix="smart-agent-memopen-", dir=tmpdir) as tmp:
        raw_s, nlist = raw_build(vecs)
        import_s = bulk_import(tmp, table, announced=True)
        with tempfile.TemporaryDirectory(prefix="smart-agent-memopen-", dir=tmpdir) as other:
            raw2_s, _ = raw_build(vecs)
            plain_s = bulk_import(other, table, announced=False)
        del table, vecs
        runs = []
        for i in range(opens):
            out = subprocess.run([sys.executable, "-c", CHILD, tmp, str(i)], capture_output=True, text=True,
                                 check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    raw_mb = n * DIM * 4 / 2**20
    rss = statistics.median(r["rss_mb"] for r in runs)
    return {
        "memories": n,
        "raw_ivf_build_s": round(raw_s, 2),
        "ivf_lists": nlist,
        "bulk_import_s": round(import_s, 2),
        "import_ratio": round(import_s / raw_s, 2),
        "unannounced": {"raw_ivf_build_s": round(raw2_s, 2), "bulk_import_s": round(plain_s, 2),
                        "import_ratio": round(plain_s / raw2_s, 2)},
        "open_ms": round(statistics.median(r["open_ms"] for r in runs), 1),
        "open_first_recall_ms": round(statistics.median(r["first_recall_ms"] for r in runs), 1),
        "open_first_recall_ms_runs": [round(r["first_recall_ms"], 1) for r in runs],
        "rss_mb": round(rss, 1),
        "raw_vectors_mb": round(raw_mb, 1),
        "rss_ratio": round(rss / raw_mb, 3),
    }


def rows(sizes: tuple[int, ...] = (100_000,), opens: int = 5) -> list[dict[str, Any]]:
    return [measure(n, opens) for n in sizes]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--opens", type=int, default=5, help="processes that open the store (median)")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    load = os.getloadavg()
    table = rows(sizes, args.opens)
    import faiss

    command = f"python benchmarks/memory_open.py --sizes {args.sizes} --opens {args.opens}"
    result = {"command": command, "rows": table, "machine": {
        "cpus": os.cpu_count(), "python": platform.python_version(), "faiss": faiss.__version__,
        "load_average_before": [round(x, 2) for x in load],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("| memories | raw IVF build | bulk import | ÷ raw | unannounced ÷ raw | open | open + first recall | RSS "
          "| ÷ raw vectors |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in table:
        print(f"| {r['memories']:,} | {r['raw_ivf_build_s']} s | {r['bulk_import_s']} s | {r['import_ratio']}x | "
              f"{r['unannounced']['import_ratio']}x | {r['open_ms']} ms | {r['open_first_recall_ms']} ms | "
              f"{r['rss_mb']} MB | {r['rss_ratio']}x |")
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
