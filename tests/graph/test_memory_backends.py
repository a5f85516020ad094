"""Long-term memory on any BaseStore with a vector index: one suite over the FAISS store,
LangGraph's ``InMemoryStore(index=...)`` and ``AsyncPostgresStore`` with pgvector (a real
PostgreSQL from the ``pg_url`` fixture, a fresh database per test), and the memory layer's tests
also on the FAISS store seen through its ``BaseStore`` API only (the generic asearch/aput path a
server would take with it). Ranking, consolidation,
pruning, users, the memory nodes in a real agent run, export/import between backends, and a
runtime store without an index (memory off, one error event, no FAISS folder)."""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
from conftest import fresh_database, openai_model, run_graph
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from memory_fakes import DIM, TableEmbeddings, unit

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory import backend, background
from smart_agent.memory.backend import NO_INDEX, MemoryPolicy, local_index
from smart_agent.memory.ranking import RankingConfig, memory_times
from smart_agent.memory.store import FaissMemoryStore, user_namespace

if TYPE_CHECKING:
    from langgraph.store.postgres.base import PostgresIndexConfig
from smart_agent.memory.transfer import export_records, import_records, parse_records
from smart_agent.testing.scripted_server import text
from smart_agent.tools.invoke import run_tool
from smart_agent.tools.memory_tools import remember, search_memory

DAY = 86_400.0
T0 = 1_800_000_000.0
BACKENDS = ["faiss", "inmemory", "postgres"]


class PlainBaseStore(BaseStore):
    """Only the ``BaseStore`` API of a store (no ``remember``/``recall``): the memory layer takes
    its generic path, as it would with the FAISS store handed to it as any server's store."""

    def __init__(self, store: FaissMemoryStore) -> None:
        self.inner = store
        self.index_config = store.index_config

    def batch(self, ops):
        return self.inner.batch(ops)

    async def abatch(self, ops):
        return await self.inner.abatch(ops)


@dataclass
class Backend:
    """A store under test with the clock and cap the memory layer uses for it."""

    name: str
    store: Any
    policy: MemoryPolicy
    now: list[float]
    emb: Any

    def set_cap(self, n: int) -> None:
        self.policy.max_items = n
        if isinstance(self.store, FaissMemoryStore):
            self.store.max_items_per_namespace = n

    async def remember(self, ns, text_, **kw):
        return await backend.remember(self.store, ns, text_, policy=self.policy, **kw)

    async def recall(self, ns, query, k=5, **kw):
        return await backend.recall(self.store, ns, query, k, policy=self.policy, **kw)


@pytest.fixture
async def make_backend(tmp_path, request):
    """``await make_backend(name, embeddings, dims)``: a store of that kind, closed after the test."""
    stack = contextlib.AsyncExitStack()

    async def make(name: str, embeddings: Any, dims: int) -> Backend:
        now = [T0]
        policy = MemoryPolicy(clock=lambda: now[0])
        index: PostgresIndexConfig = {"dims": dims, "embed": embeddings, "fields": ["text"]}
        if name in ("faiss", "faiss-as-basestore"):
            store: Any = FaissMemoryStore(tmp_path / f"faiss-{uuid.uuid4().hex[:6]}", embeddings=embeddings,
                                          clock=lambda: now[0])
            stack.callback(store.close)
            if name == "faiss-as-basestore":
                store = PlainBaseStore(store)
        elif name == "inmemory":
            store = InMemoryStore(index=index)
        else:
            store = await stack.enter_async_context(_postgres_store(request.getfixturevalue("pg_url"), index))
        return Backend(name, store, policy, now, embeddings)

    async with stack:
        yield make


@contextlib.asynccontextmanager
async def _postgres_store(pg_url: str, index: PostgresIndexConfig):
    """AsyncPostgresStore (pgvector) in a database of its own: the vector column's size is fixed
    per database, and no test sees another's rows."""
    from langgraph.store.postgres.aio import AsyncPostgresStore

    url = fresh_database(pg_url, "mem")
    async with AsyncPostgresStore.from_conn_string(url, index=index) as store:
        await store.setup()
        yield store


@pytest.fixture(params=[*BACKENDS, "faiss-as-basestore"])
async def table_backend(request, make_backend):
    """Each backend with table embeddings (exact cosines, no model)."""
    return await make_backend(request.param, TableEmbeddings(), DIM)


# -- the memory layer ------------------------------------------------------------------------
async def test_recall_blends_similarity_recency_and_importance(table_backend):
    b = table_backend
    emb = b.emb
    emb.table.update({"old exact fact": unit(1), "fresh near fact": unit(0.8, 0.6), "question": unit(1)})
    ns = user_namespace("alice")
    b.now[0] = T0 - 180 * DAY
    old = await b.remember(ns, "old exact fact", importance=0.5)
    b.now[0] = T0
    fresh = await b.remember(ns, "fresh near fact", importance=0.5)
    assert (old.action, fresh.action) == ("created", "created")

    hits = await b.recall(ns, "question")
    assert [h.key for h in hits] == [fresh.key, old.key]  # recency outweighs 0.2 of similarity
    r = RankingConfig()
    assert hits[0].similarity == pytest.approx(0.8, abs=1e-4) and hits[1].similarity == pytest.approx(1.0, abs=1e-4)
    assert hits[0].score == pytest.approx(0.7 * 0.8 + 0.15 * 1.0 + 0.15 * 0.5, abs=1e-4)
    assert hits[1].score == pytest.approx(0.7 * 1.0 + 0.15 * r.recency(180 * DAY) + 0.15 * 0.5, abs=1e-4)
    assert hits[1].to_dict(T0)["age"] == "6 months ago"  # 180 days of 30
    # Importance decides between equals: a third memory as similar as the fresh one, more important.
    emb.table["important near fact"] = unit(0.8, 0, 0.6)
    important = await b.remember(ns, "important near fact", importance=1.0)
    assert [h.key for h in await b.recall(ns, "question", 2)] == [important.key, fresh.key]
    assert [h.key for h in await b.recall(ns, "question", 3, min_similarity=0.9)] == [old.key]


async def test_near_duplicates_merge_and_users_are_separate(table_backend):
    b = table_backend
    emb = b.emb
    emb.table.update({"colour teal": unit(1, 0.1), "colour is teal!": unit(1, 0.2), "other": unit(0, 1)})
    alice, bob = user_namespace("alice"), user_namespace("bob")
    first = await b.remember(alice, "colour teal", importance=0.4, metadata={"source": "test"})
    b.now[0] = T0 + 60
    merged = await b.remember(alice, "colour is teal!", importance=0.7)
    assert merged.action == "merged" and merged.key == first.key and merged.merges == 1
    assert merged.importance == pytest.approx(0.75) and merged.similarity >= 0.9
    items, total = await backend.list_memories(b.store, alice)
    assert total == 1 and items[0].value["text"] == "colour is teal!" and items[0].value["source"] == "test"
    assert memory_times(items[0]) == (pytest.approx(T0, abs=1), pytest.approx(T0 + 60, abs=1))
    # Bob has his own namespace: the same text is new there, and alice's memory is not his.
    assert (await b.remember(bob, "colour teal")).action == "created"
    assert [h.key for h in await b.recall(alice, "colour teal")] == [first.key]
    assert first.key not in [h.key for h in await b.recall(bob, "colour teal")]
    assert await backend.forget(b.store, alice, first.key) and not await backend.forget(b.store, alice, first.key)
    assert await b.recall(alice, "colour teal") == []


async def test_pruning_drops_the_least_valuable_beyond_the_cap(table_backend):
    b = table_backend
    emb = b.emb
    b.set_cap(3)
    ns = user_namespace("u")
    keys = {}
    for i, (name, importance) in enumerate([("a", 0.9), ("b", 0.1), ("c", 0.6), ("d", 0.2)]):
        emb.table[f"fact {name}"] = unit(*([0] * i + [1]))
        result = await b.remember(ns, f"fact {name}", importance=importance)
        keys[name] = result.key
        assert result.pruned == ([keys["b"]] if name == "d" else [])
    _, total = await backend.list_memories(b.store, ns)
    assert total == 3
    b.set_cap(10)
    assert (await b.remember(ns, "fact e", importance=0.0)).pruned == []


async def test_pruning_never_drops_the_memory_just_written(table_backend):
    b = table_backend
    emb = b.emb
    b.set_cap(2)
    ns = user_namespace("u")
    emb.table.update({"kept a": unit(1), "kept b": unit(0, 1), "least": unit(0, 0, 1)})
    a = await b.remember(ns, "kept a", importance=0.9)
    b.now[0] = T0 + 60
    lower = await b.remember(ns, "kept b", importance=0.8)
    b.now[0] = T0 + 120
    new = await b.remember(ns, "least", importance=0.0)  # the least valuable of the three, and the newest
    assert (new.action, new.pruned) == ("created", [lower.key])
    items, total = await backend.list_memories(b.store, ns)
    assert total == 2 and [i.key for i in items] == [new.key, a.key]  # newest first


async def test_a_write_under_its_key_replaces_the_memory_and_keeps_its_creation_time(table_backend):
    b = table_backend
    b.emb.table.update({"tea: green": unit(1), "tea: black": unit(0, 1)})
    ns = user_namespace("k")
    first = await b.remember(ns, "tea: green", key="tea", importance=0.4)
    b.now[0] = T0 + 3600
    second = await b.remember(ns, "tea: black", key="tea", importance=0.6)
    assert (first.key, second.key) == ("tea", "tea") and (first.action, second.action) == ("created", "created")
    items, total = await backend.list_memories(b.store, ns)
    assert total == 1 and items[0].value["text"] == "tea: black" and items[0].value["importance"] == 0.6
    assert memory_times(items[0]) == (pytest.approx(T0, abs=1), pytest.approx(T0 + 3600, abs=1))
    assert [h.key for h in await b.recall(ns, "tea: black")] == ["tea"]
    assert await b.recall(ns, "tea: green", min_similarity=0.5) == []  # the old text's vector is gone


async def test_memory_tools_on_each_store(table_backend):
    b = table_backend
    b.emb.table.update({"Ada likes green tea.": unit(0, 0, 1), "what does Ada drink": unit(0, 0.3, 1)})
    ctx = Context(user_id="ada")
    out = await run_tool(remember, {"text": "Ada likes green tea.", "importance": 0.9}, call_id="c1", context=ctx,
                         store=b.store)
    assert out.ok and out.content.startswith("Remembered (id "), out.content
    again = await run_tool(remember, {"text": "Ada likes green tea."}, call_id="c2", context=ctx, store=b.store)
    assert again.content.startswith("Updated an existing memory")
    found = await run_tool(search_memory, {"query": "what does Ada drink"}, call_id="c3", context=ctx, store=b.store)
    (row,) = json.loads(found.content)
    assert row["text"] == "Ada likes green tea." and row["id"] in out.content
    other = await run_tool(search_memory, {"query": "what does Ada drink"}, call_id="c4",
                           context=Context(user_id="bob"), store=b.store)
    assert other.content == "No memories found."
    runtime = SimpleNamespace(context=ctx, store=InMemoryStore())  # no index: the tools say memory is off
    assert await remember.coroutine("x", runtime=runtime) == NO_INDEX
    assert await search_memory.coroutine("x", runtime=runtime) == NO_INDEX


# -- the memory nodes in a real agent run ---------------------------------------------------
@pytest.mark.parametrize("name", BACKENDS)
async def test_agent_recalls_a_fact_written_in_another_thread(
    name, make_backend, scripted_server, workspace, local_model, isolated_home
):
    b = await make_backend(name, local_model, 384)
    srv = scripted_server([text("Noted: teal."), text("Your favourite colour is teal.")])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=b.store)
    ctx = Context(workspace=str(workspace), model="openai:scripted-model", user_id="ada")
    background.drain()  # results of earlier tests' writes
    events: list[dict] = []
    await run_graph(graph, "Remember that my favourite colour is teal", ctx, thread="a", events=events)
    # The FAISS store's write is queued after the answer (its result drained here); the others' is in the node.
    written = [e for e in events if e["event"] == "memory_write" and not e.get("deferred")] + background.drain()
    assert written and written[0]["action"] == "created" and written[0]["importance"] == 0.8, events
    second = await run_graph(graph, "What is my favourite colour?", ctx, thread="b")
    prompt = srv.requests[1]["messages"][0]["content"]
    assert "Long-term memory" in prompt and "User asked to remember: my favourite colour is teal" in prompt
    assert second["recalled_memories"][0]["similarity"] > 0.4
    assert not (isolated_home / "memory").exists(), "the run's store was used, not the FAISS default"


async def test_a_runtime_store_without_index_turns_memory_off(scripted_server, workspace, isolated_home):
    srv = scripted_server(responder=lambda req: text("ok"))
    plain = InMemoryStore()  # no index: cannot search by meaning
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=plain)
    events: list[dict] = []
    final = await run_graph(graph, "Remember that I like tea", Context(workspace=str(workspace),
                            model="openai:scripted-model"), thread="t", events=events)
    assert final["answer"] == "ok" and not final.get("memory_context")
    errors = [e for e in events if e["event"] == "error"]
    assert [(e["node"], e["error"], e["memory"]) for e in errors] == [("memory_recall", NO_INDEX, "off")]
    assert [e.get("skipped") for e in events if e["event"] == "memory_write"] == [NO_INDEX]
    assert await plain.asearch(("memories",)) == []
    assert not (isolated_home / "memory").exists(), "no fall back to a local FAISS store"


async def test_the_server_store_wrapper_is_looked_through(tmp_path, monkeypatch):
    # Importing the server's store module creates ./.langgraph_api and starts a thread that
    # writes the server's store there every 10 s, relative to whatever the current folder is
    # then (a later test's temporary folder, gone: an unhandled-thread warning). Neither here.
    monkeypatch.setenv("LANGGRAPH_DISABLE_FILE_PERSISTENCE", "true")
    monkeypatch.chdir(tmp_path)
    from langgraph_runtime_inmem import _persistence
    from langgraph_runtime_inmem.store import BatchedStore

    assert _persistence._flush_thread is None

    indexed = InMemoryStore(index={"dims": DIM, "embed": TableEmbeddings(), "fields": ["text"]})
    assert backend.has_vector_index(BatchedStore(indexed))
    assert not backend.has_vector_index(BatchedStore(InMemoryStore()))
    assert local_index()["dims"] == 384 and local_index()["fields"] == ["text"]


# -- export / import between backends -------------------------------------------------------
@pytest.mark.parametrize("target", ["inmemory", "postgres"])
async def test_export_import_round_trip_faiss_to_target_and_back(target, make_backend):
    emb = TableEmbeddings()
    src = await make_backend("faiss", emb, DIM)
    ns = user_namespace("ada")
    src.now[0] = T0 - 10 * DAY
    a = await src.remember(ns, "likes green tea", importance=0.9, metadata={"source": "remember_tool"})
    src.now[0] = T0
    b_ = await src.remember(ns, "works on Tuesdays", importance=0.3)
    records = await export_records(src.store, ns)
    assert [r["key"] for r in records] == [a.key, b_.key] and all("vector" not in r for r in records)

    lines = [json.dumps(r) for r in records]
    dst = await make_backend(target, TableEmbeddings(), DIM)
    assert await import_records(dst.store, ns, parse_records(lines)) == 2
    assert await export_records(dst.store, ns) == records  # text, metadata, importance, times kept
    hits = await dst.recall(ns, "likes green tea", 1)
    assert hits[0].key == a.key and hits[0].similarity == pytest.approx(1.0, abs=1e-4)  # re-embedded

    back = await make_backend("faiss", TableEmbeddings(), DIM)
    await import_records(back.store, ns, parse_records([json.dumps(r) for r in await export_records(dst.store, ns)]))
    assert await export_records(back.store, ns) == records
