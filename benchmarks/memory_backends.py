"""Memory recall on Postgres (pgvector HNSW) vs the embedded FAISS store: same vectors, same process.

    python benchmarks/memory_backends.py [--sizes 10000,100000] [--queries 200] [--real 2048] [--db URL]
        [--shared-buffers 1GB]

For each store size, both stores get the same memories (one namespace, one user) and answer
the same queries, one at a time:

* **search**: ``BaseStore.asearch(namespace, query=..., limit=5)``, the store's own vector
  search (FAISS: the embedded store's index, inner product: exact below 20,000 memories, IVF
  from there on, ``memory/ann.py``; Postgres: ``AsyncPostgresStore`` with a pgvector
  HNSW index, cosine, built as ``sessions.store.PG_ANN_INDEX`` says (or ``--hnsw``), its
  vectors sent as pgvector literals (``sessions/pg_vectors.py``), at each ``--ef-search``;
  the last one, by default ``PG_EF_SEARCH`` (1000), is what every connection of
  ``sessions.open_backends`` sets);
* **recall**: ``memory.backend.recall(store, namespace, query, k=5)``, what a run does: the
  store's nearest candidates (50) re-ranked by similarity, recency and importance. On Postgres
  the candidates come from the store's own query (``MemoryPostgresStore.anearest``,
  ``sessions/pg_store.py``: ``hnsw.ef_search`` = ``RECALL_EF_SEARCH`` for that query, whatever the
  connection's), also timed alone (*nearest*) with its recall@5 against the exact top 5, and
  its execution in the server (``EXPLAIN ANALYZE``, *nearest_server*).

At the last ``--ef-search`` both are timed again through LangGraph's store with plain lists
for vectors (sent as ``float8`` arrays, as before ``sessions/pg_vectors.py``), same pool.

Vectors: ``--real`` synthetic sentences embedded with the bundled all-MiniLM-L6-v2 (the NumPy
runtime); the rest of each store is those vectors plus Gaussian noise, re-normalized (as in
memory_bench.py); queries are held-out embedded sentences. Every vector is computed before
anything is timed, and both stores get them from a lookup table, so no embedding time is
measured. Postgres runs on this machine (``--db URL``, else a pgserver started in a temporary
folder with ``shared_buffers`` = ``--shared-buffers``, by default 1 GB: the vectors, the HNSW
index and the items of 100,000 memories take about 400 MB, and pgserver's own 128 MB leaves a
recall's index scan reading pages from the OS cache), reached over a Unix socket. Reported:
median and p95 in ms, the ratio to FAISS, and each store's recall@5 against the exact top 5 (a
NumPy scan of all vectors). Results measured before the IVF index
(``benchmarks/results/memory_backends.json`` of 2026-11-23) compared HNSW with FAISS's hits,
which were exact then.

Results go to benchmarks/results/memory_backends.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from memory_bench import LookupEmbeddings, pct, sentences, synthetic  # noqa: E402

RESULTS = HERE / "results" / "memory_backends.json"
NS = ("memories", "bench")
BATCH = 1000


def fill(size: int, real_vecs: np.ndarray, real_texts: list[str], rng: np.random.Generator):
    n_real = min(size, len(real_vecs))
    n_syn = size - n_real
    vecs = np.concatenate([real_vecs[:n_real], synthetic(real_vecs, n_syn, rng)]) if n_syn else real_vecs[:n_real]
    texts = real_texts[:n_real] + [f"synthetic memory #{i}" for i in range(n_syn)]
    now = time.time()
    values = [
        {"text": t, "kind": "bench", "importance": round(float(rng.uniform(0.2, 0.9)), 2), "merges": 0,
         "created_at": now - (i % 365) * 86400.0, "updated_at": now - (i % 365) * 86400.0}
        for i, t in enumerate(texts)
    ]
    return vecs, texts, values


async def timed(calls) -> tuple[list[float], list]:
    times, results = [], []
    for call in calls:
        t = time.perf_counter()
        results.append(await call())
        times.append((time.perf_counter() - t) * 1000)
    return times, results


def summary(times: list[float]) -> dict:
    return {"median_ms": round(statistics.median(times), 3), "p95_ms": round(pct(times, 95), 3)}


async def _set_ef_search(pg, ef: int) -> None:
    """``hnsw.ef_search`` on every connection of the store's pool (both are held at once)."""
    async with pg.conn.connection() as a, pg.conn.connection() as b:
        for conn in (a, b):
            await conn.execute(f"SET hnsw.ef_search = {int(ef)}")


async def bench_size(
    size: int, url: str, real_vecs, real_texts, queries, rng, hnsw: str = "", ef_search: tuple[int, ...] = (1000,)
) -> dict:
    import faiss
    from langgraph.store.base import PutOp
    from langgraph.store.postgres.aio import AsyncPostgresStore

    from smart_agent.memory.backend import recall
    from smart_agent.memory.store import FaissMemoryStore
    from smart_agent.sessions.pg_store import RECALL_EF_SEARCH
    from smart_agent.sessions.store import open_backends, postgres_index

    # One FAISS thread, also in the worker threads the async API runs FAISS in (OpenMP's setting is per thread).
    faiss.omp_set_num_threads(1)
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(4, initializer=faiss.omp_set_num_threads, initargs=(1,))
    )
    vecs, texts, values = fill(size, real_vecs, real_texts, rng)
    qtexts = [f"query #{i}" for i in range(len(queries))]
    table = {**dict(zip(texts, vecs, strict=True)), **dict(zip(qtexts, queries, strict=True))}
    emb = LookupEmbeddings(table)
    puts = [PutOp(NS, f"m{i}", v, index=["text"]) for i, v in enumerate(values)]
    out: dict = {"memories": size, "queries": len(qtexts)}

    with tempfile.TemporaryDirectory(prefix="smart-agent-backends-") as tmp:
        faiss_store = FaissMemoryStore(tmp, embeddings=emb, embedding_name="bench", max_items_per_namespace=size + 1)
        t = time.perf_counter()
        for i in range(0, size, 5000):
            faiss_store.batch(puts[i:i + 5000])
        out["faiss_insert_s"] = round(time.perf_counter() - t, 2)
        await faiss_store.asearch(NS, query=qtexts[0], limit=5)  # loads the index

        index = {"dims": 384, "embed": emb, "fields": ["text"]}
        async with open_backends(url, index=index, pool_size=2) as backends:
            pg = backends.store
            assert pg is not None
            async with pg.conn.connection() as conn:  # a fresh namespace per size, the index built after
                await conn.execute("DELETE FROM store WHERE prefix = %s", (".".join(NS),))
                cur = await conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE indexname = 'store_vectors_embedding_idx'"
                )
                indexdef = (await cur.fetchone())["indexdef"]  # the one setup() made: HNSW, cosine
                await conn.execute("DROP INDEX store_vectors_embedding_idx")
            indexdef = indexdef.split(" WITH ")[0] + (f" WITH ({hnsw})" if hnsw else "")
            t = time.perf_counter()
            await pg.abatch(puts[:BATCH])  # the first rows through the store's own put, the rest copied
            await _copy_rows(pg, texts[BATCH:], values[BATCH:], vecs[BATCH:], start=BATCH)
            out["postgres_insert_s"] = round(time.perf_counter() - t, 2)
            async with pg.conn.connection() as conn:
                t = time.perf_counter()
                await conn.execute("SET maintenance_work_mem = '1GB'")
                await conn.execute(indexdef)
                out["postgres_hnsw_build_s"] = round(time.perf_counter() - t, 2)
                await conn.execute("ANALYZE store")
                await conn.execute("ANALYZE store_vectors")
            await pg.asearch(NS, query=qtexts[0], limit=5)  # warm-up

            def searches(store):
                return [lambda q=q: store.asearch(NS, query=q, limit=5) for q in qtexts]

            def recalls(store):
                return [lambda q=q: recall(store, NS, q, k=5) for q in qtexts]

            f_search, f_hits = await timed(searches(faiss_store))
            f_recall, _ = await timed(recalls(faiss_store))
            sweep = {}
            for ef in ef_search:
                await _set_ef_search(pg, ef)
                await pg.asearch(NS, query=qtexts[0], limit=5)  # warm-up
                s_times, s_hits = await timed(searches(pg))
                r_times, _ = await timed(recalls(pg))
                sweep[ef] = (s_times, s_hits, r_times)
            p_search, p_hits, p_recall = sweep[ef_search[-1]]
            # A recall's own query (sessions/pg_store.py: its ef_search whatever the connection's).
            n_times, n_hits = await timed([lambda q=q: pg.anearest(NS, q, 50) for q in qtexts])
            out["postgres_nearest"] = summary(n_times)
            out["postgres_nearest_server"] = await _server_times(pg, queries[:50])
            # The same searches with the vectors sent as float8 arrays (LangGraph's store with plain
            # lists, as before sessions/pg_vectors.py), on the same pool, at the kept ef_search.
            plain = AsyncPostgresStore(pg.conn, index=cast(Any, {**postgres_index(index), "embed": emb}))
            await plain.asearch(NS, query=qtexts[0], limit=5)  # warm-up
            a_search, _ = await timed(searches(plain))
            a_recall, _ = await timed(recalls(plain))
            out["postgres_float_arrays"] = {"search": summary(a_search), "recall": summary(a_recall)}
            out["hnsw_used"] = await _uses_hnsw(pg, queries[0])
        faiss_store.close()

    exact = [{f"m{i}" for i in np.argsort(-(vecs @ q))[:5]} for q in queries]  # the true top 5 of each query

    def recall_at_5(hits: list) -> float:
        found = [len({h.key for h in a} & truth) / 5 for a, truth in zip(hits, exact, strict=True)]
        return round(float(np.mean(found)), 3)

    out["index"] = f"hnsw ({hnsw or 'pgvector defaults: m=16, ef_construction=64'})"
    out["ef_search_sweep"] = [
        {"ef_search": ef, "search": summary(st), "recall": summary(rt), "recall_at_5_vs_exact": recall_at_5(sh)}
        for ef, (st, sh, rt) in sweep.items()
    ]
    out["ef_search"] = ef_search[-1]
    out["recall_ef_search"] = RECALL_EF_SEARCH
    out["faiss_search"], out["postgres_search"] = summary(f_search), summary(p_search)
    out["faiss_recall"], out["postgres_recall"] = summary(f_recall), summary(p_recall)
    out["hnsw_recall_at_5_vs_exact"] = recall_at_5(p_hits)
    out["nearest_recall_at_5_vs_exact"] = recall_at_5([h[:5] for h in n_hits])
    out["faiss_recall_at_5_vs_exact"] = recall_at_5(f_hits)
    for kind in ("search", "recall"):
        f, p = out[f"faiss_{kind}"], out[f"postgres_{kind}"]
        out[f"{kind}_ratio_postgres_to_faiss"] = {
            "median": round(p["median_ms"] / f["median_ms"], 2), "p95": round(p["p95_ms"] / f["p95_ms"], 2)
        }
    return out


async def _copy_rows(pg, texts: list[str], values: list[dict], vecs: np.ndarray, start: int) -> None:
    """The rows the store's put writes (``store`` and ``store_vectors``), loaded with COPY: the
    store's batch put takes about 2 ms a row here, which would make a 100k fill take minutes."""
    prefix = ".".join(NS)
    async with pg.conn.connection() as conn, conn.cursor() as cur:
        async with cur.copy("COPY store (prefix, key, value) FROM STDIN") as copy:
            for i, value in enumerate(values, start):
                await copy.write_row((prefix, f"m{i}", json.dumps(value)))
        async with cur.copy("COPY store_vectors (prefix, key, field_name, embedding) FROM STDIN") as copy:
            for i, vec in enumerate(vecs, start):
                await copy.write_row((prefix, f"m{i}", "text", "[" + ",".join(f"{x:.7g}" for x in vec) + "]"))
    assert len(texts) == len(values)


async def _server_times(pg, queries: np.ndarray) -> dict:
    """``EXPLAIN ANALYZE`` of a recall's query (``anearest``'s: 50 rows, its ef_search), one per
    query: the medians of the execution and of its HNSW index scan in the server, in ms."""
    import re

    from smart_agent.sessions import pg_store

    sql = "EXPLAIN ANALYZE " + pg_store._NEAREST
    execution, scan = [], []
    async with pg.conn.connection() as conn:
        for q in queries:
            vec = "[" + ",".join(f"{x:.7g}" for x in q) + "]"
            async with conn.transaction():
                await conn.execute(pg_store._SET_EF_SEARCH)
                cur = await conn.execute(sql, {"q": vec, "ns": ".".join(NS), "rows": 50, "limit": 50})
                plan = [str(next(iter(r.values()))) for r in await cur.fetchall()]
            execution.append(float(re.search(r"Execution Time: ([\d.]+)", plan[-1]).group(1)))
            line = next(p for p in plan if "Index Scan using store_vectors_embedding_idx" in p)
            scan.append(float(re.search(r"actual time=[\d.]+\.\.([\d.]+)", line).group(1)))
    return {"execution_median_ms": round(statistics.median(execution), 3),
            "hnsw_scan_median_ms": round(statistics.median(scan), 3)}


async def _shared_buffers(url: str) -> str:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SHOW shared_buffers")
        row = await cur.fetchone()
        assert row is not None
        return str(row[0])


async def _uses_hnsw(pg, query: np.ndarray) -> bool:
    """EXPLAIN of the store's search shape: does the plan scan the HNSW index?"""
    vec = "[" + ",".join(f"{x:.6f}" for x in query) + "]"
    sql = (
        "EXPLAIN SELECT store.key FROM store JOIN store_vectors sv ON store.prefix = sv.prefix AND store.key = sv.key "
        "WHERE store.prefix = %s ORDER BY sv.embedding <=> %s::vector LIMIT 11"
    )
    async with pg.conn.connection() as conn:
        cur = await conn.execute(sql, (".".join(NS), vec))
        plan = " ".join(str(next(iter(r.values()))) for r in await cur.fetchall())
    return "store_vectors_embedding_idx" in plan


def start_pgserver(folder: str, shared_buffers: str = "") -> tuple[object, str]:
    """A pgserver in ``folder``; with ``shared_buffers`` (e.g. ``1GB``) set by ``ALTER SYSTEM``
    and a restart (a setting read only when the server starts; pgserver starts it at once)."""
    import pgserver
    import psycopg
    from psycopg import sql

    srv = pgserver.get_server(folder, cleanup_mode="stop")
    if shared_buffers:
        with psycopg.connect(srv.get_uri(), autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(shared_buffers)))
        srv.cleanup()  # stops the server
        srv = pgserver.get_server(folder, cleanup_mode="stop")  # starts it again
    return srv, srv.get_uri()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="store sizes (comma-separated)")
    ap.add_argument("--queries", type=int, default=200, help="held-out sentences used as queries")
    ap.add_argument("--real", type=int, default=2048, help="sentences embedded with the real model")
    ap.add_argument("--db", help="a postgresql:// URL with pgvector (default: a pgserver in a temporary folder)")
    ap.add_argument("--hnsw", default="", help="HNSW build parameters, e.g. 'm=32, ef_construction=200' "
                    "(default: sessions.store.PG_ANN_INDEX's)")
    ap.add_argument("--ef-search", default="", help="hnsw.ef_search values to measure (comma-separated; the last "
                    "one is the table's; default: sessions.store.PG_EF_SEARCH)")
    ap.add_argument("--shared-buffers", default="1GB", help="shared_buffers of the pgserver started without --db "
                    "(default 1GB: holds the vectors and the HNSW index of 100,000 memories; '' keeps pgserver's "
                    "128MB)")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from smart_agent.memory.embeddings import LocalSentenceEmbeddings

    corpus = sentences(args.real + args.queries, seed=7)
    model = LocalSentenceEmbeddings(backend="numpy")
    real_vecs = model.encode(corpus[: args.real], batch_size=64)
    queries = model.encode(corpus[args.real:], batch_size=64)
    load_before = os.getloadavg()

    server = None
    folder = tempfile.mkdtemp(prefix="smart-agent-bench-pg-", dir="/tmp")
    url = args.db
    if not url:
        server, url = start_pgserver(folder, args.shared_buffers)
    try:
        shared_buffers = asyncio.run(_shared_buffers(url))
        rng = np.random.default_rng(42)
        from smart_agent.sessions.store import PG_ANN_INDEX, PG_EF_SEARCH

        hnsw = args.hnsw or ", ".join(f"{k}={v}" for k, v in PG_ANN_INDEX.items() if k != "kind")
        efs = tuple(int(e) for e in args.ef_search.split(",") if e.strip()) or (PG_EF_SEARCH,)
        rows = [
            asyncio.run(bench_size(n, url, real_vecs, corpus[: args.real], queries, rng, hnsw, efs)) for n in sizes
        ]
    finally:
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]
        shutil.rmtree(folder, ignore_errors=True)  # the stopped server's data (~1 GB at 100,000)

    import faiss
    import psycopg

    result = {
        "command": f"python benchmarks/memory_backends.py --sizes {args.sizes} --queries {args.queries} "
        f"--real {args.real}" + (f" --hnsw '{args.hnsw}'" if args.hnsw else "")
        + (f" --ef-search {args.ef_search}" if args.ef_search else "")
        + (f" --shared-buffers '{args.shared_buffers}'" if not args.db else ""),
        "machine": {
            "cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "faiss": faiss.__version__, "psycopg": psycopg.__version__,
            "postgres": "pgserver (PostgreSQL 16, pgvector 0.6)" if server is not None else "--db",
            "shared_buffers": shared_buffers,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "note": (
            f"{args.real} sentences embedded with all-MiniLM-L6-v2 (NumPy runtime), the rest of each store "
            "perturbed copies of them; queries held-out sentences; all vectors precomputed (no embedding time). "
            "FAISS: the embedded store's inner-product index (exact below 20k, IVF from 20k), one OpenMP thread "
            "(also in the executor threads). Recall@5 against a NumPy exact scan. "
            "Postgres: AsyncPostgresStore, pgvector HNSW cosine, vectors sent as pgvector literals "
            "(postgres_float_arrays: as float8 arrays, as before), "
            "same machine over a Unix socket. search = asearch(limit=5); recall = memory.backend.recall(k=5)."
        ),
        "sizes": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print("| memories | | FAISS median / p95 | pgvector HNSW median / p95 | Postgres ÷ FAISS (median / p95) |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        for kind in ("search", "recall"):
            f, p, ratio = r[f"faiss_{kind}"], r[f"postgres_{kind}"], r[f"{kind}_ratio_postgres_to_faiss"]
            print(
                f"| {r['memories']:,} | {kind} | {f['median_ms']} / {f['p95_ms']} ms | {p['median_ms']} / "
                f"{p['p95_ms']} ms | {ratio['median']} / {ratio['p95']} |"
            )
    for r in rows:
        for sw in r["ef_search_sweep"]:
            print(f"{r['memories']:,} {r['index']} ef_search {sw['ef_search']}: search {sw['search']['median_ms']} ms, "
                  f"recall {sw['recall']['median_ms']} ms, recall@5 vs exact {sw['recall_at_5_vs_exact']}")
    for r in rows:
        nr = r["postgres_nearest"]
        ns = r["postgres_nearest_server"]
        print(f"{r['memories']:,} a recall's own query (anearest, 50 rows, ef_search "
              f"{r['recall_ef_search']}): {nr['median_ms']} / {nr['p95_ms']} ms, "
              f"recall@5 vs exact {r['nearest_recall_at_5_vs_exact']}; in the server (EXPLAIN ANALYZE, median) "
              f"{ns['execution_median_ms']} ms, {ns['hnsw_scan_median_ms']} ms of it the HNSW scan "
              f"(shared_buffers {shared_buffers})")
    for r in rows:
        fa = r["postgres_float_arrays"]
        print(f"{r['memories']:,} ef_search {r['ef_search']}, vectors as float8 arrays (before): search "
              f"{fa['search']['median_ms']} ms, recall {fa['recall']['median_ms']} ms")
    for r in rows:
        print(
            f"{r['memories']:,}: recall@5 vs exact: HNSW {r['hnsw_recall_at_5_vs_exact']}, FAISS "
            f"{r['faiss_recall_at_5_vs_exact']}; HNSW index used: "
            f"{r['hnsw_used']}; inserts FAISS {r['faiss_insert_s']} s, Postgres {r['postgres_insert_s']} s "
            f"+ HNSW build {r['postgres_hnsw_build_s']} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
