"""Benchmark of long-term memory: the FAISS store against raw FAISS and LangGraph's InMemoryStore.

    python benchmarks/memory_bench.py [--sizes 100000] [--real 2048] [--queries 300]

At each store size, in one process, on one FAISS (OpenMP) thread, each query timed on every
method in turn (interleaved), medians:

* raw FAISS on the same vectors: ``IndexFlatIP`` (exact, the ground truth), ``IndexIVFFlat``
  (2·√n lists, nprobe 8: the store's settings) and ``IndexHNSWFlat`` (M 32, efConstruction 80,
  efSearch 64), search k=5;
* ``FaissMemoryStore``: its index's search (``store search``), a full ``recall`` (FAISS candidates,
  ranking on light columns, the returned rows read from SQLite; query vector precomputed) and
  ``remember`` of new memories (consolidation search, SQLite write and commit, index add);
* what a run asks of the store (``nodes/memory.py``, on the memory thread): its recall job (the
  recall and the check for damaged rows) and its write job (``remember``, the repair of damaged
  rows and the check);
* LangGraph's ``InMemoryStore(index=...)`` ``search`` (pure Python; at most 10,000 items, since it
  keeps every vector as a Python list, and 20 queries);
* recall@5 of each approximate search against the exact one.

``--real`` sentences are embedded with the bundled all-MiniLM-L6-v2 (NumPy backend); the rest of
each store is *synthetic*: a real sentence vector plus Gaussian noise, re-normalized (so the
neighbourhood structure resembles real data). Queries are held-out real sentences. One row also
times ``recall`` with the real model embedding the query.

``rows()`` returns the table rows for ``benchmarks/run_all.py``. Results go to
benchmarks/results/memory.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "memory.json"

SUBJECTS = [
    "The user",
    "My manager",
    "Our team",
    "The client",
    "My sister",
    "The landlord",
    "The doctor",
    "The new intern",
    "Alice",
    "Bob",
    "The project",
    "The build server",
    "The cat",
    "Grandma",
    "The accountant",
    "The neighbour",
]
VERBS = [
    "prefers",
    "asked about",
    "is allergic to",
    "wants to learn",
    "complained about",
    "recommended",
    "booked",
    "forgot",
    "bought",
    "is worried about",
    "needs a report on",
    "loves",
    "hates",
    "scheduled",
    "cancelled",
    "fixed",
]
OBJECTS = [
    "green tea",
    "the quarterly budget",
    "a trip to Lisbon",
    "Rust programming",
    "the flaky integration tests",
    "peanuts",
    "jazz concerts",
    "the kitchen renovation",
    "a new laptop",
    "the tax return",
    "morning meetings",
    "the database migration",
    "a vegan cookbook",
    "the marathon training plan",
    "dark mode",
    "the API rate limits",
    "a dentist appointment",
    "the wedding playlist",
    "Kubernetes upgrades",
    "the garden shed",
    "short answers",
    "the invoice from March",
    "French lessons",
    "the printer on floor 3",
]
TAILS = ["", " last week", " every Monday", " before the deadline", " since January", " for the third time",
         " according to the notes", " in the long run", " again today", " after the meeting"]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(TAILS)}." for _ in range(n)]


class LookupEmbeddings(Embeddings):
    """Precomputed vectors by text (the store then measures only its own work)."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values), p))


def synthetic(base: np.ndarray, n: int, rng: np.random.Generator, noise: float = 0.35) -> np.ndarray:
    """``n`` vectors near real ones: base[i] + N(0, noise/sqrt(d)), re-normalized."""
    d = base.shape[1]
    idx = rng.integers(0, len(base), size=n)
    v = base[idx] + rng.normal(0, noise / np.sqrt(d), size=(n, d)).astype("float32")
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype("float32")


def timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def hit_rate(found: list[set[int]], truth: list[set[int]]) -> float:
    return round(sum(len(f & t) for f, t in zip(found, truth, strict=True)) / sum(len(t) for t in truth), 4)


def summary(name: str, size: int, ms: list[float], **extra: Any) -> dict[str, Any]:
    return {
        "memories": size, "method": name, "queries": len(ms),
        "median_ms": round(statistics.median(ms), 3), "p95_ms": round(pct(ms, 95), 3), **extra,
    }


def raw_indexes(vecs: np.ndarray) -> dict[str, tuple[Any, float]]:
    """Raw FAISS indexes on the vectors (ids = row numbers) and their build seconds."""
    import faiss

    from smart_agent.memory import ann

    d = vecs.shape[1]
    out: dict[str, tuple[Any, float]] = {}
    t = time.perf_counter()
    flat = faiss.IndexFlatIP(d)
    flat.add(vecs)
    out["FAISS Flat (exact)"] = (flat, time.perf_counter() - t)
    t = time.perf_counter()
    ivf = ann.build(d, np.arange(len(vecs)), vecs, train=True)
    out[f"FAISS IVFFlat (nlist {ivf.nlist}, nprobe {ivf.nprobe})"] = (ivf, time.perf_counter() - t)
    t = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 80
    faiss.omp_set_num_threads(os.cpu_count() or 1)  # building only
    hnsw.add(vecs)
    faiss.omp_set_num_threads(1)
    hnsw.hnsw.efSearch = 64
    out["FAISS HNSW32 (efSearch 64)"] = (hnsw, time.perf_counter() - t)
    return out


def bench_size(
    size: int, real_vecs: np.ndarray, queries: np.ndarray, query_texts: list[str], emb: Any, rng: np.random.Generator
) -> list[dict[str, Any]]:
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    from smart_agent.memory import ann
    from smart_agent.memory.service import min_similarity
    from smart_agent.memory.store import FaissMemoryStore, user_namespace
    from smart_agent.nodes import memory as memory_nodes

    faiss = ann.faiss_module()  # one OpenMP thread
    n_real = min(size, len(real_vecs))
    vecs = real_vecs
    if size > n_real:
        vecs = np.concatenate([real_vecs[:n_real], synthetic(real_vecs, size - n_real, rng)])
    vecs = np.ascontiguousarray(vecs[:size], dtype="float32")
    texts = [f"memory #{i}" for i in range(size)]
    qtexts = [f"query #{i}" for i in range(len(queries))]
    new_vecs = synthetic(real_vecs, 200, rng)
    new_texts = [f"new memory #{i}" for i in range(len(new_vecs))]
    table = dict(zip(texts + qtexts + new_texts, np.concatenate([vecs, queries, new_vecs]), strict=True))
    lookup = LookupEmbeddings(table)
    raw = raw_indexes(vecs)
    flat = raw["FAISS Flat (exact)"][0]
    truth = [set(map(int, row)) for row in flat.search(queries, 5)[1]]
    ns = user_namespace("bench")
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="smart-agent-membench-") as tmp:
        store = FaissMemoryStore(tmp, embeddings=lookup, embedding_name="bench", max_items_per_namespace=size + 1000)
        t = time.perf_counter()
        for start in range(0, size, 5000):
            store.batch([
                PutOp(ns, f"m{i}", {"text": texts[i], "importance": round(float(rng.uniform(0.2, 0.9)), 2)})
                for i in range(start, min(size, start + 5000))
            ])
        store.wait_for_training()
        build_s = time.perf_counter() - t
        conn = store.rows.conn
        conn.execute("UPDATE items SET updated_at = updated_at - (id % 365) * 86400.0")  # a year of ages
        key_of = {int(r[0]): int(r[1][1:]) for r in conn.execute("SELECT id, key FROM items")}
        entry = store.vectors.index_for(json.dumps(list(ns)))
        assert entry is not None and entry.index.ntotal == size
        index = entry.index
        times: dict[str, list[float]] = {name: [] for name in raw}
        times["store search"] = []
        times["store recall (full)"] = []
        found: dict[str, list[set[int]]] = {name: [] for name in times}
        for q, qt in zip(queries, qtexts, strict=True):
            q1 = q.reshape(1, -1)
            for name, (idx, _) in raw.items():
                hits: list[Any] = []
                times[name].append(timed(lambda idx=idx, q1=q1, hits=hits: hits.append(idx.search(q1, 5)[1][0])))
                found[name].append(set(map(int, hits[0])))
            hits = []
            times["store search"].append(timed(lambda q1=q1, hits=hits: hits.append(index.search(q1, 5)[1][0])))
            found["store search"].append({key_of[int(i)] for i in hits[0]})
            times["store recall (full)"].append(timed(lambda qt=qt: store.recall(ns, qt, k=5)))
        store_found = [{int(i.key[1:]) for i in store.search(ns, query=qt, limit=5)} for qt in qtexts]
        for name, (_, secs) in raw.items():
            rate = hit_rate(found[name], truth)
            out.append(summary(name, size, times[name], recall_at_5=rate, build_s=round(secs, 2)))
        out.append(summary(
            f"FaissMemoryStore index search ({'IVF nlist ' + str(index.nlist) if index.nlist > 1 else 'exact'})",
            size, times["store search"], recall_at_5=hit_rate(found["store search"], truth), build_s=round(build_s, 2),
        ))
        out.append(summary("FaissMemoryStore.recall (full, k=5)", size, times["store recall (full)"],
                           recall_at_5=hit_rate(store_found, truth)))
        # What a run asks of the store (nodes/memory.py, on the memory thread): the recall with the
        # check for damaged rows, before the first model request; the write with their repair, after.
        recall_job, damage = memory_nodes.recall_job, memory_nodes.damage_report
        job = [timed(lambda qt=qt: recall_job(store, None, ns, qt, 5, min_similarity())) for qt in qtexts[:50]]
        out.append(summary("a run's recall job (recall + damaged-rows check)", size, job))
        rem = [timed(lambda t=t: store.remember(ns, t)) for t in new_texts[:100]]
        out.append(summary("FaissMemoryStore.remember", size, rem))
        write = [timed(lambda t=t: (store.remember(ns, t), damage(store, ns, repair=True))) for t in new_texts[100:]]
        out.append(summary("a run's write job (remember + repair + damaged-rows check)", size, write))
        real_store = FaissMemoryStore(tmp, embeddings=emb, embedding_name="bench")
        real_store.embedder.assume_checked()  # the folder's vectors are the lookup table's: same model
        q_real = [timed(lambda s=s: real_store.recall(ns, s, k=5)) for s in query_texts[:20]]
        out.append(summary("FaissMemoryStore.recall incl. embedding the query (real model)", size, q_real))
        real_store.vectors.clear()
        real_store.close()
        store.close()
        t = time.perf_counter()
        cold = FaissMemoryStore(tmp, embeddings=lookup, embedding_name="bench")
        cold.recall(ns, qtexts[0], k=5)
        out.append({"memories": size, "method": "FaissMemoryStore open + first recall (reads the index file)",
                    "median_ms": round((time.perf_counter() - t) * 1000, 1)})
        cold.close()
    n_mem = min(size, 10_000)
    mem = InMemoryStore(index={"dims": vecs.shape[1], "embed": lambda xs: [table[x].tolist() for x in xs],
                               "fields": ["text"]})
    for start in range(0, n_mem, 2000):
        mem.batch([PutOp(ns, f"m{i}", {"text": texts[i]}) for i in range(start, min(n_mem, start + 2000))])
    sub = faiss.IndexFlatIP(vecs.shape[1])
    sub.add(vecs[:n_mem])
    sub_truth = [set(map(int, row)) for row in sub.search(queries[:20], 5)[1]]
    mem_found: list[set[int]] = []
    mem_ms = [timed(lambda qt=qt: mem_found.append({int(i.key[1:]) for i in mem.search(ns, query=qt, limit=5)}))
              for qt in qtexts[:20]]
    out.append(summary(f"LangGraph InMemoryStore(index=...) search ({n_mem:,} items)", n_mem, mem_ms,
                       recall_at_5=hit_rate(mem_found, sub_truth)))
    return out


def embed_real(real: int, queries: int) -> tuple[Any, np.ndarray, np.ndarray, list[str], dict[str, Any]]:
    from smart_agent.memory.embeddings import LocalSentenceEmbeddings

    emb = LocalSentenceEmbeddings()
    corpus = sentences(real + queries, seed=7)
    t = time.perf_counter()
    emb.encode(["load"])
    load_s = time.perf_counter() - t
    real_vecs = emb.encode(corpus[:real], batch_size=64)
    qv = emb.encode(corpus[real:], batch_size=64)
    one = [timed(lambda s=s: emb.encode([s])) for s in corpus[:50]]
    info = {"model": "all-MiniLM-L6-v2 (local, NumPy backend, CPU, 384-d)", "load_s": round(load_s, 2),
            "one_sentence_ms_median": round(statistics.median(one), 2), "real_vectors": real}
    return emb, real_vecs, qv, corpus[real:], info


def rows(sizes: Sequence[int] = (100_000,), real: int = 2048, queries: int = 300) -> list[dict[str, Any]]:
    """The benchmark's rows (``memories``, ``method``, ``median_ms``, ``p95_ms``, ``recall_at_5``, ...)
    for ``benchmarks/run_all.py``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    emb, real_vecs, qv, qtexts, _ = embed_real(real, queries)
    rng = np.random.default_rng(42)
    return [r for n in sizes for r in bench_size(n, real_vecs, qv, qtexts, emb, rng)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="100000", help="store sizes (comma-separated)")
    ap.add_argument("--real", type=int, default=2048, help="sentences embedded with the real model")
    ap.add_argument("--queries", type=int, default=300, help="held-out real sentences used as queries")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load_before = os.getloadavg()
    emb, real_vecs, qv, qtexts, info = embed_real(args.real, args.queries)
    rng = np.random.default_rng(42)
    table = [r for n in sizes for r in bench_size(n, real_vecs, qv, qtexts, emb, rng)]
    import faiss

    command = f"python benchmarks/memory_bench.py --sizes {args.sizes} --real {args.real} --queries {args.queries}"
    result = {
        "command": command,
        "machine": {
            "cpus": os.cpu_count(), "python": platform.python_version(), "faiss": faiss.__version__,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "embedding": info,
        "rows": table,
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("## Memory search and writes (one FAISS thread, k=5, medians)\n")
    print("| memories | method | median | p95 | recall@5 vs exact | build |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in table:
        rec = r.get("recall_at_5", "")
        build = f"{r['build_s']} s" if "build_s" in r else ""
        p95 = f"{r['p95_ms']} ms" if "p95_ms" in r else ""
        print(f"| {r['memories']:,} | {r['method']} | {r['median_ms']} ms | {p95} | {rec} | {build} |")
    print(f"\nEmbedding: {info}")
    la, lb = result["machine"]["load_average_before"][0], result["machine"]["load_average_after"][0]
    print(f"Machine: {os.cpu_count()} CPUs, 1-min load average {la} before / {lb} after.")
    print(f"\nReproduce: {command}\nSaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
