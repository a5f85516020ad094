"""Postgres as the scale-out backend, against a real PostgreSQL 16 with pgvector (pgserver).

One URL (``SMART_AGENT_DB`` or ``--db``) puts the threads, the memory store (pgvector HNSW,
cosine) and the tool-output archive on the database: separate CLI processes share a thread
and memory through it, nothing is written under ``SMART_AGENT_HOME``, the setup of the tables
is idempotent and safe when processes start at once, and 20 concurrent runs of two worker
processes on small connection pools each keep their whole history, every run recalling and
writing memory on the store without an error."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest
from conftest import cli_env, files_under, fresh_database, run_cli

from smart_agent.testing.scripted_server import message_text, text, tool_call

pytestmark = pytest.mark.e2e

TESTS = Path(__file__).resolve().parents[1]


def user_messages(req: dict) -> list[str]:
    return [message_text(m.get("content")) for m in req["messages"] if m["role"] == "user"]


def test_two_cli_processes_share_thread_memory_and_archive_on_postgres(scripted_server, workspace, pg_url, tmp_path):
    url = fresh_database(pg_url)
    (workspace / "big.txt").write_text("line of the big file\n" * 300)

    def responder(req: dict) -> dict:
        msgs = req["messages"]
        if msgs[-1]["role"] == "tool":
            return text("Read it.")
        if "big.txt" in message_text(msgs[-1].get("content")):
            return tool_call("read_file", {"path": "big.txt"})
        return text("Noted.")

    srv = scripted_server(responder=responder)
    home = tmp_path / "agent-home"
    env = cli_env(srv, SMART_AGENT_HOME=home, SMART_AGENT_MEMORY="true")
    common = ["--json", "--workspace", str(workspace), "--archive-chars", "500"]

    # Process 1 (SMART_AGENT_DB): a fact to remember, on thread t1.
    first = run_cli(
        ["run", "Remember that my favourite colour is teal", "--thread", "t1", *common],
        env={**env, "SMART_AGENT_DB": url},
        timeout=240,
    )
    assert first.returncode == 0, first.stderr
    # Process 2 (--db): continues t1 with its history, and reads a file large enough to archive.
    second = run_cli(["run", "Please read big.txt", "--thread", "t1", "--db", url, *common], env=env, timeout=240)
    assert second.returncode == 0, second.stderr
    # Process 3: another thread; the fact comes from memory, not from the thread.
    third = run_cli(
        ["run", "What colour do I like?", "--thread", "t2", *common], env={**env, "SMART_AGENT_DB": url}, timeout=240
    )
    assert third.returncode == 0, third.stderr

    t1_second = next(r for r in srv.requests if "Please read big.txt" in user_messages(r))
    assert user_messages(t1_second) == ["Remember that my favourite colour is teal", "Please read big.txt"]
    t2 = srv.requests[-1]
    assert user_messages(t2) == ["What colour do I like?"]
    assert "my favourite colour is teal" in message_text(t2["messages"][0]["content"])  # recalled into the prompt

    assert files_under(home) == []  # no sessions file, no FAISS index, no archive file, no lock file
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT prefix, value FROM store ORDER BY created_at").fetchall()
        vectors = conn.execute("SELECT prefix, field_name FROM store_vectors").fetchall()
    memories = [v for p, v in rows if p == "memories.default"]
    archived = [v for p, v in rows if p == "smart_agent.archive"]
    assert any("my favourite colour is teal" in m["text"] for m in memories)
    assert len(archived) == 1 and archived[0]["text"] == (workspace / "big.txt").read_text()
    # (a run's memory is indexed on its task: service.OBSERVATION_INDEX)
    assert vectors and {p for p, _ in vectors} == {"memories.default"} and {f for _, f in vectors} == {"task"}

    # The memory commands work on the same store (--db), still without writing under SMART_AGENT_HOME.
    listed = run_cli(["memory", "list", "--json", "--db", url], env=env, timeout=240)
    assert listed.returncode == 0, listed.stderr
    assert any("my favourite colour is teal" in m["text"] for m in json.loads(listed.stdout)["memories"])
    found = run_cli(["memory", "search", "favourite colour", "--json"], env={**env, "SMART_AGENT_DB": url}, timeout=240)
    assert found.returncode == 0, found.stderr
    assert "my favourite colour is teal" in json.loads(found.stdout)["results"][0]["text"]
    assert files_under(home) == []


def test_memory_export_import_through_the_cli_faiss_to_postgres_and_back(pg_url, tmp_path):
    """`memory export` / `memory import` as a user moves memories: a FAISS home's file into the
    Postgres store (--db, embeddings recomputed there: pgvector), out again and into a new FAISS
    home; text, kind, importance, merges, metadata and both times are the same at every stop."""
    url = fresh_database(pg_url)
    source = [
        {"key": "k1", "text": "The release is on Friday", "kind": "note", "importance": 0.9, "merges": 2,
         "metadata": {"source": "remember_tool", "tags": ["a"]}, "created_at": "2025-01-02T03:04:05+00:00",
         "updated_at": "2025-02-03T04:05:06+00:00"},
        {"key": "k2", "text": "Ada drinks green tea", "kind": "fact", "importance": 0.2, "merges": 0,
         "metadata": {}, "created_at": "2026-03-01T00:00:00+00:00", "updated_at": "2026-03-02T00:00:00+00:00"},
    ]
    (tmp_path / "source.jsonl").write_text("".join(json.dumps(r) + "\n" for r in source))
    pg_home = tmp_path / "pg-home"

    def memory(*args: str, home: Path, db: str | None = None) -> None:
        env = cli_env(SMART_AGENT_HOME=home, **({"SMART_AGENT_DB": db} if db else {}))
        res = run_cli(["memory", *args], env=env, timeout=240)
        assert res.returncode == 0, res.stderr

    memory("import", str(tmp_path / "source.jsonl"), home=tmp_path / "faiss-1")
    memory("export", str(tmp_path / "from-faiss.jsonl"), home=tmp_path / "faiss-1")
    memory("import", str(tmp_path / "from-faiss.jsonl"), home=pg_home, db=url)
    memory("export", str(tmp_path / "from-postgres.jsonl"), home=pg_home, db=url)
    memory("import", str(tmp_path / "from-postgres.jsonl"), home=tmp_path / "faiss-2")
    memory("export", str(tmp_path / "back.jsonl"), home=tmp_path / "faiss-2")

    def read(name: str) -> list[dict]:
        return [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]

    assert read("from-faiss.jsonl") == read("from-postgres.jsonl") == read("back.jsonl") == source
    assert files_under(pg_home) == []
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT key, vector_dims(embedding), 1 - (embedding <=> (SELECT embedding FROM store_vectors "
            "WHERE key = 'k1')) FROM store_vectors WHERE prefix = 'memories.default' ORDER BY key"
        ).fetchall()
    assert [(k, d) for k, d, _ in rows] == [("k1", 384), ("k2", 384)]
    assert rows[0][2] == pytest.approx(1.0, abs=1e-5) and rows[1][2] < 0.5  # each text embedded on import


OPEN_BACKENDS = """
import asyncio, sys
from smart_agent.memory.backend import local_index
from smart_agent.sessions.store import open_backends

async def main():
    async with open_backends(sys.argv[1], index=local_index()) as b:
        await b.checkpointer.aget_tuple({"configurable": {"thread_id": "t"}})
        await b.store.aget(("x",), "y")

asyncio.run(main())
"""


def test_setup_is_idempotent_and_safe_when_processes_start_at_once(pg_url):
    url = fresh_database(pg_url)
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_BACKENDS, url], stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    again = subprocess.run([sys.executable, "-c", OPEN_BACKENDS, url], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    with psycopg.connect(url) as conn:
        for table in ("checkpoint_migrations", "store_migrations", "vector_migrations"):
            total, distinct = conn.execute(f"SELECT count(*), count(DISTINCT v) FROM {table}").fetchone()
            assert total == distinct > 0, table  # every migration ran exactly once
        (index,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'store_vectors_embedding_idx'"
        ).fetchone()
        (dims,) = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'store_vectors'::regclass AND attname = 'embedding'"
        ).fetchone()
    assert "USING hnsw" in index and "vector_cosine_ops" in index
    assert "m='32'" in index and "ef_construction='200'" in index  # (pgvector's defaults miss the top 5)
    assert dims == "vector(384)"


WORKER = """
import asyncio, json, sys
from smart_agent.cli.backends import open_run_backends
from smart_agent.cli.run import build_graph, run_once
from smart_agent.config.context import Context
from smart_agent.sessions.thread_lock import thread_lock

events = []

async def conversation(graph, ctx, thread):
    for turn in (1, 2):
        async with thread_lock(thread):
            await run_once(graph, {"task": f"{thread} turn {turn}"}, context=ctx, thread_id=thread,
                           on_event=events.append)

async def main(worker, runs):
    ctx = Context(model="openai:scripted-model", user_id=worker)
    async with open_run_backends() as backends:
        graph = build_graph("agent", backends.checkpointer, store=backends.store)
        await asyncio.gather(*(conversation(graph, ctx, f"{worker}-{i}") for i in range(runs)))
    memory = [e for e in events if e["event"] in ("memory_recall", "memory_write")]
    print(json.dumps({"memory_events": len(memory), "errors": [e for e in memory if "error" in e]}))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


class InFlight:
    """Answers ``<thread> answered: <user messages>``; counts the requests in flight at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __call__(self, req: dict) -> dict:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(0.2)  # keeps requests of different runs in flight together (counted, not timed)
        with self.lock:
            self.now -= 1
        asked = user_messages(req)
        return text(f"{asked[-1].split()[0]} answered: {' | '.join(asked)}")


def test_twenty_concurrent_runs_of_two_workers_lose_nothing(scripted_server, pg_url, tmp_path):
    url = fresh_database(pg_url)
    model = InFlight()
    srv = scripted_server(responder=model)
    home = tmp_path / "agent-home"
    env = cli_env(srv, SMART_AGENT_DB=url, SMART_AGENT_HOME=home, SMART_AGENT_DB_POOL_SIZE=3)
    env["SMART_AGENT_MEMORY"] = "true"  # every run also recalls and writes a memory on the store
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, name, "10"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for name in ("w1", "w2")
    ]
    outputs = [w.communicate(timeout=300) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [err for _, err in outputs]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert [r["errors"] for r in reports] == [[], []] and [r["memory_events"] for r in reports] == [40, 40]
    assert len(srv.requests) == 40 and model.peak > 3  # concurrent runs, more than one pool's worth

    threads = [f"{w}-{i}" for w in ("w1", "w2") for i in range(10)]
    histories = _histories(url, threads)
    for thread in threads:
        first, second = f"{thread} turn 1", f"{thread} turn 2"
        assert histories[thread] == [
            ("human", first),
            ("ai", f"{thread} answered: {first}"),
            ("human", second),
            ("ai", f"{thread} answered: {first} | {second}"),
        ]
    assert files_under(home) == []
    with psycopg.connect(url) as conn:
        users = conn.execute("SELECT DISTINCT prefix FROM store_vectors ORDER BY prefix").fetchall()
    assert users == [("memories.w1",), ("memories.w2",)]


def _histories(url: str, threads: list[str]) -> dict[str, list[tuple[str, str]]]:
    import asyncio

    from smart_agent.graphs import get_builder
    from smart_agent.sessions.store import open_checkpointer

    async def read() -> dict[str, list[tuple[str, str]]]:
        async with open_checkpointer(url=url) as saver:
            graph = get_builder("agent")(checkpointer=saver)
            out = {}
            for thread in threads:
                state = await graph.aget_state({"configurable": {"thread_id": thread}})
                out[thread] = [(m.type, m.content) for m in state.values.get("messages", [])]
            return out

    return asyncio.run(read())


def test_the_pool_size_option_caps_a_process_connections(pg_url, monkeypatch):
    """SMART_AGENT_DB_POOL_SIZE=2: six queries at once through the backends' pool hold at most two
    server connections (counted in pg_stat_activity while they run), the checkpointer's and the
    store's pool being one."""
    import asyncio

    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.store.postgres.aio import AsyncPostgresStore
    from psycopg_pool import AsyncConnectionPool

    from smart_agent.cli.backends import open_run_backends

    url = fresh_database(pg_url)
    monkeypatch.setenv("SMART_AGENT_DB", url)
    monkeypatch.setenv("SMART_AGENT_DB_POOL_SIZE", "2")
    database = url.split("?")[0].rsplit("/", 1)[1]

    async def run() -> list[int]:
        async with open_run_backends() as backends:
            assert isinstance(backends.store, AsyncPostgresStore)
            assert isinstance(backends.checkpointer, AsyncPostgresSaver)
            pool = backends.store.conn
            assert isinstance(pool, AsyncConnectionPool)
            assert backends.checkpointer.conn is pool and pool.max_size == 2
            counts: list[int] = []
            done = asyncio.Event()

            async def query() -> None:
                async with pool.connection() as conn:
                    await conn.execute("SELECT pg_sleep(0.3)")

            async def watch() -> None:
                async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as mon:
                    while not done.is_set():
                        cur = await mon.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                            (database,),
                        )
                        row = await cur.fetchone()
                        assert row is not None
                        counts.append(row[0])
                        await asyncio.sleep(0.02)

            watcher = asyncio.create_task(watch())
            await asyncio.gather(*(query() for _ in range(6)))
            done.set()
            await watcher
            return counts

    counts = asyncio.run(run())
    assert max(counts) == 2, counts  # six queries, two connections: the option is the cap


def test_a_users_recall_gets_all_its_candidates_among_many_users_memories(pg_url):
    """pgvector filters an HNSW scan's rows by namespace afterwards: with its default of 40 rows
    per scan, a user holding 10% of the table got a handful of the 50 candidates recall asks for
    (pgvector 0.6 here: no iterative scans)."""
    import asyncio

    from psycopg_pool import AsyncConnectionPool

    from smart_agent.sessions import pg_store
    from smart_agent.sessions.pg_store import MemoryPostgresStore
    from smart_agent.sessions.store import open_backends

    url = fresh_database(pg_url)
    # 64 dimensions, not the local model's 384: the index is built as for any size (m, ef_construction),
    # several times faster; what matters is how many rows a scan returns and whose they are.
    dims = 64
    query = np.random.default_rng(0).normal(size=dims).tolist()
    index = {"dims": dims, "embed": lambda texts: [query for _ in texts], "fields": ["text"]}

    async def fill_and_search() -> int:
        async with open_backends(url, index=index) as backends:
            assert isinstance(backends.store, MemoryPostgresStore)
            pool = backends.store.conn
            assert isinstance(pool, AsyncConnectionPool)
            async with pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE indexname = 'store_vectors_embedding_idx'"
                )
                row = await cur.fetchone()
                assert row is not None
                indexdef = row["indexdef"]
                await conn.execute("DROP INDEX store_vectors_embedding_idx")  # built once after the rows: faster
                for user, n in (("other", 20_000), ("bob", 2_200)):
                    await conn.execute(
                        "INSERT INTO store (prefix, key, value) SELECT %s, 'k' || g, '{\"text\": \"m\"}'::jsonb "
                        "FROM generate_series(1, %s) g", (f"memories.{user}", n)
                    )
                    await conn.execute(
                        "INSERT INTO store_vectors (prefix, key, field_name, embedding) SELECT %s, 'k' || g, 'text', "
                        f"(SELECT array_agg(random() - 0.5) FROM generate_series(1, {dims}) WHERE g > 0)"
                        f"::vector({dims}) "
                        "FROM generate_series(1, %s) g", (f"memories.{user}", n)
                    )
                await conn.execute(indexdef)
                await conn.execute("ANALYZE store")
                await conn.execute("ANALYZE store_vectors")
                cur = await conn.execute(
                    "EXPLAIN SELECT 1 FROM store JOIN store_vectors sv ON store.prefix = sv.prefix "
                    "AND store.key = sv.key WHERE store.prefix = 'memories.bob' "
                    "ORDER BY sv.embedding <=> %s::vector LIMIT 101",
                    (str(query),),
                )
                plan = " ".join(str(next(iter(r.values()))) for r in await cur.fetchall())
                cur = await conn.execute(
                    "EXPLAIN " + pg_store._NEAREST,
                    {"q": str(query), "ns": "memories.bob", "rows": 50, "limit": 50},
                )
                nearest_plan = " ".join(str(next(iter(r.values()))) for r in await cur.fetchall())
                cur = await conn.execute(
                    "SELECT key FROM store_vectors WHERE prefix = 'memories.bob' "
                    "ORDER BY embedding <=> %s::vector, key LIMIT 50",
                    (str(query),),
                )
                exact = [r["key"] for r in await cur.fetchall()]
            assert "store_vectors_embedding_idx" in plan  # the search goes through the HNSW index
            assert "store_vectors_embedding_idx" in nearest_plan  # and so does a recall's own query
            found = len(await backends.store.asearch(("memories", "bob"), query="what do I like?", limit=50))
            # A recall's query scans 300 rows: about 30 of them Bob's, so it scans Bob's rows exactly.
            near = await backends.store.anearest(("memories", "bob"), "what do I like?", 50)
            assert [i.key for i in near] == exact and all(i.namespace == ("memories", "bob") for i in near)
            return found

    assert asyncio.run(fill_and_search()) == 50


def test_the_stores_vectors_reach_pgvector_as_its_literal_and_come_back_the_same(pg_url):
    """The store's embeddings go out as pgvector's text literal (``sessions/pg_vectors.py``), not
    as a float8 array: on every pool connection, in a put and in a search, with no value lost."""
    import asyncio

    from psycopg.adapt import PyFormat

    from smart_agent.sessions.pg_vectors import PgVector, PgVectorDumper
    from smart_agent.sessions.store import open_backends

    url = fresh_database(pg_url)
    rng = np.random.default_rng(1)
    vectors = {t: (v / np.linalg.norm(v)).astype(np.float32) for t, v in (("tea", rng.normal(size=8)),
                                                                          ("teal", rng.normal(size=8)))}
    index = {"dims": 8, "embed": lambda texts: [vectors[t].tolist() for t in texts], "fields": ["text"]}

    async def run() -> tuple[list, str, list]:
        async with open_backends(url, index=index, pool_size=2) as backends:
            store = backends.store
            assert store is not None
            async with store.conn.connection() as a, store.conn.connection() as b:  # type: ignore[attr-defined]
                dumpers = {conn.adapters.get_dumper(PgVector, PyFormat.AUTO) for conn in (a, b)}
                assert dumpers == {PgVectorDumper}
            await store.aput(("memories", "u"), "k1", {"text": "tea"})
            await store.aput(("memories", "u"), "k2", {"text": "teal"})
            hits = await store.asearch(("memories", "u"), query="teal", limit=2)
            async with store.conn.connection() as conn:  # type: ignore[attr-defined]
                cur = await conn.execute("SELECT embedding::text AS v FROM store_vectors WHERE key = 'k2'")
                row = await cur.fetchone()
            return hits, row["v"], [await store.asearch(("memories", "other"), query="tea", limit=2)]

    hits, stored, (elsewhere,) = asyncio.run(run())
    back = np.array([float(x) for x in stored.strip("[]").split(",")], dtype=np.float32)
    assert back.tobytes() == vectors["teal"].tobytes()  # every bit of every value
    assert [h.key for h in hits] == ["k2", "k1"] and hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert hits[1].score == pytest.approx(float(vectors["tea"] @ vectors["teal"]), abs=1e-5)
    assert elsewhere == []


def test_a_users_recall_finds_only_that_users_memories(pg_url):
    """The store's search takes a namespace *prefix* as a LIKE pattern: ``memories.ada%`` also
    matches Adam's memories, and ``_`` and ``%`` (a percent-encoded user id) match any character.
    Recall keeps to the user's own namespace."""
    import asyncio

    from smart_agent.memory.backend import recall, remember
    from smart_agent.memory.store import user_namespace
    from smart_agent.sessions.store import open_backends

    url = fresh_database(pg_url)
    same = np.ones(8).tolist()
    index = {"dims": 8, "embed": lambda texts: [same for _ in texts], "fields": ["text"]}
    users = ("ada", "adam", "a_a", "aba", "a.b", "a%2Ebc")

    async def recalls() -> dict[str, set[str]]:
        async with open_backends(url, index=index) as backends:
            for user in users:
                await remember(backends.store, user_namespace(user), f"{user} likes tea", key=user)
            return {
                user: {r.item.key for r in await recall(backends.store, user_namespace(user), "tea", k=10)}
                for user in users
            }

    assert asyncio.run(recalls()) == {user: {user} for user in users}


def test_a_recalls_query_finds_the_exact_nearest_and_stores_it_cannot_serve_use_asearch(pg_url):
    """``anearest`` against an exact scan of the same vectors (an index scan over a namespace
    holding them all), each item once at its best field; a store with a TTL (whose reads refresh
    it) answers through ``asearch``, filtered to the namespace."""
    import asyncio

    from psycopg_pool import AsyncConnectionPool

    from smart_agent.sessions.pg_store import MemoryPostgresStore
    from smart_agent.sessions.store import open_backends, postgres_index

    url = fresh_database(pg_url)
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(300, 16))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    table = {f"t{i}": v.tolist() for i, v in enumerate(vecs)}
    query = rng.normal(size=16)
    table["q"] = (query / np.linalg.norm(query)).tolist()
    index = {"dims": 16, "embed": lambda texts: [table[t] for t in texts], "fields": ["text", "alt"]}
    ns = ("memories", "eve")
    sims = vecs @ np.array(table["q"])

    async def go() -> None:
        async with open_backends(url, index=index) as backends:
            store = backends.store
            assert isinstance(store, MemoryPostgresStore)
            for i in range(300):  # item i: text t<i>, and items 0-9 also "alt" t<299-i>
                value = {"text": f"t{i}", **({"alt": f"t{299 - i}"} if i < 10 else {})}
                await store.aput(ns, f"k{i}", value)
            await store.aput(("memories", "eve2"), "other", {"text": "q"})  # the query itself, elsewhere
            best = {f"k{i}": max(sims[i], sims[299 - i] if i < 10 else -2.0) for i in range(300)}
            want = sorted(best, key=lambda k: -best[k])[:7]
            near = await store.anearest(ns, "q", 7)
            assert [i.key for i in near] == want
            assert [round(i.score or 0.0, 5) for i in near] == [round(float(best[k]), 5) for k in want]
            assert near[0].value["text"].startswith("t") and near[0].namespace == ns

            pool = store.conn
            assert isinstance(pool, AsyncConnectionPool)
            timed = MemoryPostgresStore(pool, index=postgres_index(index), ttl={"default_ttl": 60})  # type: ignore[arg-type]
            asked = []
            asearch = timed.asearch

            async def spy(*args, **kwargs):
                asked.append(args)
                return await asearch(*args, **kwargs)

            timed.asearch = spy  # type: ignore[method-assign]
            got = await timed.anearest(("memories", "eve"), "q", 3)
            # (asearch's prefix pattern reached eve2's item, the nearest: filtered out, one fewer)
            assert asked and [i.key for i in got] == want[:2]

    asyncio.run(go())


def test_a_recall_is_one_round_trip_at_its_own_ef_search_and_leaves_the_connection_as_it_was(pg_url, tmp_path):
    """``anearest`` sends BEGIN, ``SET LOCAL hnsw.ef_search``, its query and COMMIT together and
    waits for the server once (libpq's trace of the connection: one ReadyForQuery); its
    ef_search holds for its query (the connection's 10 would leave the index scan 10 of the 20
    rows asked, and the exact scan would follow) and not after it; the connection comes back idle,
    out of pipeline mode, also after a query that fails. A pool of connections that are not
    autocommit gets the same answer through psycopg's transaction."""
    import asyncio
    from typing import Any

    from psycopg import pq
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from smart_agent.sessions.pg_store import MemoryPostgresStore
    from smart_agent.sessions.store import open_backends, postgres_index

    url = fresh_database(pg_url)
    rng = np.random.default_rng(11)
    vecs = rng.normal(size=(120, 16))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    table = {f"t{i}": v.tolist() for i, v in enumerate(vecs)}
    table["q"] = vecs[0].tolist()
    table["bad"] = [0.5] * 8  # the wrong number of dimensions: the query fails in the server
    index = {"dims": 16, "embed": lambda texts: [table[t] for t in texts], "fields": ["text"]}
    ns = ("memories", "zoe")
    want = [f"k{i}" for i in np.argsort(-(vecs @ vecs[0]), kind="stable")[:20]]
    trace = tmp_path / "libpq.trace"

    async def state(pool: Any) -> tuple[str, pq.TransactionStatus, int]:
        """The connection's ef_search, transaction status and pipeline status (dict rows)."""
        async with pool.connection() as conn:
            status, pipeline = conn.info.transaction_status, conn.pgconn.pipeline_status
            cur = await conn.execute("SHOW hnsw.ef_search")
            row = await cur.fetchone()
            assert row is not None
            return str(row["hnsw.ef_search"]), status, pipeline

    async def go() -> None:
        async with open_backends(url, index=index, pool_size=1) as backends:  # one connection: the one traced
            store = backends.store
            assert isinstance(store, MemoryPostgresStore)
            pool = store.conn
            assert isinstance(pool, AsyncConnectionPool)
            for i in range(120):
                await store.aput(ns, f"k{i}", {"text": f"t{i}"})
            async with pool.connection() as conn:
                await conn.execute("SET hnsw.ef_search = 10")
            with trace.open("w") as out:
                async with pool.connection() as conn:
                    conn.pgconn.trace(out.fileno())
                    conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
                near = await store.anearest(ns, "q", 20)
                async with pool.connection() as conn:
                    conn.pgconn.untrace()
            assert [i.key for i in near] == want and near[0].score == pytest.approx(1.0, abs=1e-5)
            sent = trace.read_text().splitlines()
            waits = [line for line in sent if line.startswith("B") and "ReadyForQuery" in line]
            assert len(waits) == 1, sent  # one round trip
            assert not any("+ 0" in line for line in sent)  # no exact scan: the index gave all 20
            assert await state(pool) == ("10", pq.TransactionStatus.IDLE, pq.PipelineStatus.OFF)

            with pytest.raises(psycopg.errors.DataException):
                await store.anearest(ns, "bad", 5)
            assert await state(pool) == ("10", pq.TransactionStatus.IDLE, pq.PipelineStatus.OFF)
            assert [i.key for i in await store.anearest(ns, "q", 20)] == want

        async with AsyncConnectionPool(
            url, min_size=1, max_size=1, open=False, kwargs={"autocommit": False, "row_factory": dict_row}
        ) as plain:
            other = MemoryPostgresStore(plain, index=postgres_index(index))  # type: ignore[arg-type]
            assert [i.key for i in await other.anearest(ns, "q", 20)] == want
            ef, status, _ = await state(plain)
            assert (ef, status) == ("40", pq.TransactionStatus.IDLE)

    asyncio.run(go())
