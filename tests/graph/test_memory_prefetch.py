"""Memory off the critical path: the recall starts with the resolver (``prefetch_recall``): its query
waits in the embedder's queue (the embedding thread) while the run goes on; ``memory_recall`` awaits
the vector and searches on the loop when the store is open and free, else on a memory thread. The
run's write is queued on the memory thread and runs after the run returned (reads of the store wait
for it)."""

from __future__ import annotations

import threading

from conftest import openai_model, run_graph
from langgraph.checkpoint.memory import InMemorySaver
from memory_fakes import TableEmbeddings

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory import background, embeddings
from smart_agent.memory.store import DB_NAME, FaissMemoryStore, default_memory_dir, user_namespace
from smart_agent.testing.scripted_server import text


class ThreadRecordingEmbeddings(TableEmbeddings):
    """Records, per embedded text, the thread that embedded it."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[str, list[str]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        for t in texts:
            self.threads.setdefault(t, []).append(threading.current_thread().name)
        return super().embed_documents(texts)


def store_with_a_cat(tmp_path, monkeypatch):
    """A store remembering the cat's name (its query embeds to that memory's vector), and the names
    of the threads its recalls run on."""
    emb = ThreadRecordingEmbeddings()
    store = FaissMemoryStore(tmp_path / "mem", embeddings=emb)
    store.remember(user_namespace("u"), "the cat is called Tom")
    emb.table["What is the cat called?"] = emb.embed_query("the cat is called Tom")
    recalls: list[str] = []
    recall = FaissMemoryStore.recall

    def spy(self, *args, **kw):
        recalls.append(threading.current_thread().name)
        return recall(self, *args, **kw)

    monkeypatch.setattr(FaissMemoryStore, "recall", spy)
    return emb, store, recalls


async def test_the_recall_query_is_embedded_by_the_resolvers_prefetch(
    scripted_server, workspace, tmp_path, monkeypatch
):
    emb, store, recalls = store_with_a_cat(tmp_path, monkeypatch)
    srv = scripted_server(responder=lambda req: text("Tom."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    context = Context(workspace=str(workspace), model="openai:scripted-model", user_id="u")
    final = await run_graph(graph, "What is the cat called?", context, thread="t")
    assert final["answer"] == "Tom."
    assert "the cat is called Tom" in srv.requests[0]["messages"][0]["content"]  # recalled
    # The task was embedded once, on the embedding thread the resolver queued it for, and searched
    # once, on the run's own loop (the store was open and free: no thread hop, no wait for the GIL).
    (thread,) = emb.threads["What is the cat called?"]
    assert thread == "smart-agent-memory-embed"
    assert recalls == [threading.current_thread().name]
    store.close()


async def test_a_store_taken_after_the_recall_started_is_searched_on_a_memory_thread(tmp_path, monkeypatch):
    """The store was free when the run's recall started on the loop, and another thread holds it
    when the query's vector is there: the search waits for it on a memory thread (not on the loop,
    not on the event loop's default executor) while the loop goes on, and still recalls."""
    import asyncio

    from smart_agent.nodes import memory as memory_nodes

    _, store, recalls = store_with_a_cat(tmp_path, monkeypatch)
    background.drain()
    ns, task = user_namespace("u"), "What is the cat called?"
    entry = memory_nodes._start_on_loop(store, None, ns, task, background.writes_queued(), 0.0)
    assert entry is not None  # free: the first step ran here
    memory_nodes._prefetched[(id(store), ns, task, 5)] = entry
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store.rows.lock:
            held.set()
            release.wait(20)

    threading.Thread(target=holder, daemon=True).start()
    assert held.wait(20)
    recall = asyncio.ensure_future(memory_nodes._prefetched_recall(store, ns, task, 5))
    ticks = 0
    while ticks < 20 and not recall.done():
        ticks += 1
        await asyncio.sleep(0.005)
    release.set()
    recalled, _ = await recall
    assert ticks == 20  # the loop ran on while the store was held
    assert [r.item.value["text"] for r in recalled] == ["the cat is called Tom"]
    assert len(recalls) == 1 and recalls[0].startswith("smart-agent-memory")
    store.close()


async def test_a_recall_beside_a_busy_store_waits_in_a_thread_not_on_the_loop(
    scripted_server, workspace, tmp_path, monkeypatch
):
    """Another thread holds the store when the run starts: the recall waits for it on a memory
    thread while the loop goes on (a ticker on the loop lets the holder go), and still recalls."""
    import asyncio

    _, store, recalls = store_with_a_cat(tmp_path, monkeypatch)
    background.drain()
    held, release, let_go = threading.Event(), threading.Event(), []

    def holder() -> None:
        with store.rows.lock:
            held.set()
            let_go.append(release.wait(20))  # True: the loop's ticker let it go

    threading.Thread(target=holder, daemon=True).start()
    assert held.wait(20)
    srv = scripted_server(responder=lambda req: text("Tom."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    context = Context(workspace=str(workspace), model="openai:scripted-model", user_id="u")
    run = asyncio.ensure_future(run_graph(graph, "What is the cat called?", context, thread="t"))
    ticks = 0
    while ticks < 20 and not run.done():
        ticks += 1
        await asyncio.sleep(0.005)
    release.set()
    final = await run
    assert ticks == 20 and let_go == [True]  # the loop ran on while the store was held
    assert final["answer"] == "Tom."
    assert "the cat is called Tom" in srv.requests[0]["messages"][0]["content"]
    assert len(recalls) == 1 and recalls[0].startswith("smart-agent-memory")
    store.close()


async def test_without_memory_nothing_is_prefetched(scripted_server, workspace, tmp_path):
    emb = ThreadRecordingEmbeddings()
    store = FaissMemoryStore(tmp_path / "mem", embeddings=emb)
    store.remember(user_namespace("u"), "the cat is called Tom")
    srv = scripted_server(responder=lambda req: text("ok"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    context = Context(workspace=str(workspace), model="openai:scripted-model", user_id="u", memory=False)
    await run_graph(graph, "what is the cat called?", context, thread="t")
    assert "what is the cat called?" not in emb.threads
    store.close()


class GatedStore(FaissMemoryStore):
    """remember() waits until the test opens the gate."""

    gate = threading.Event()

    def remember(self, *args, **kw):
        assert self.gate.wait(60)
        return super().remember(*args, **kw)


async def test_the_write_runs_after_the_run_returned_and_reads_wait_for_it(scripted_server, workspace, tmp_path):
    background.drain()  # results of earlier tests' writes
    GatedStore.gate.clear()
    store = GatedStore(tmp_path / "mem", embeddings=TableEmbeddings())
    srv = scripted_server(responder=lambda req: text("Noted."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    context = Context(workspace=str(workspace), model="openai:scripted-model", user_id="u")
    events: list[dict] = []
    final = await run_graph(graph, "Remember that the cat is called Tom", context, thread="t", events=events)
    # The run returned while its write was still blocked in remember().
    assert final["answer"] == "Noted."
    (queued,) = [e for e in events if e["event"] == "memory_write"]
    assert queued["deferred"] is True and background.pending() == 1
    GatedStore.gate.set()
    assert store.count(user_namespace("u")) == 1  # a read waits for the queued write
    (written,) = background.drain()
    assert written["action"] == "created" and written["importance"] == 0.8
    store.close()


async def test_a_process_opens_the_store_and_loads_the_model_once_for_all_its_runs(
    scripted_server, workspace, isolated_home, monkeypatch
):
    """The default store and its embedding model are made by the first run and reused by the next."""
    from smart_agent.memory import embeddings
    from smart_agent.memory import open_stores as store_module

    monkeypatch.setattr(embeddings, "_cache", {})  # this process has loaded no model yet
    monkeypatch.setattr(store_module, "_stores", {})
    made = {"stores": 0, "models": 0}
    init, load = FaissMemoryStore.__init__, embeddings.LocalSentenceEmbeddings._load

    def counting_init(self, *a, **kw):
        made["stores"] += 1
        init(self, *a, **kw)

    def counting_load(self):
        made["models"] += self._model is None
        return load(self)

    monkeypatch.setattr(FaissMemoryStore, "__init__", counting_init)
    monkeypatch.setattr(embeddings.LocalSentenceEmbeddings, "_load", counting_load)
    srv = scripted_server(responder=lambda req: text("Noted."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())  # the default store
    context = Context(workspace=str(workspace), model="openai:scripted-model", user_id="u")
    await run_graph(graph, "Remember that the cat is called Tom", context, thread="a")
    await run_graph(graph, "What is the cat called?", context, thread="b")
    background.drain()
    assert "the cat is called Tom" in srv.requests[1]["messages"][0]["content"]  # the second run recalled
    assert made == {"stores": 1, "models": 1}
    store_module.close_stores()


async def test_a_first_run_opens_no_memory_store_before_its_model_request(scripted_server, workspace, monkeypatch):
    """Nothing stored yet (no memory database in $SMART_AGENT_HOME): the recall opens, creates and
    loads nothing on the way to the first model request; the run's write creates the store."""
    monkeypatch.setitem(embeddings._cache, "test:table", TableEmbeddings())
    db = default_memory_dir() / DB_NAME
    opened: list[object] = []
    init = FaissMemoryStore.__init__

    def counting_init(self, *args, **kw):
        opened.append(self)
        init(self, *args, **kw)

    monkeypatch.setattr(FaissMemoryStore, "__init__", counting_init)
    at_request: list[tuple[bool, int]] = []

    def responder(request):
        at_request.append((db.exists(), len(opened)))
        return text("Hi.")

    srv = scripted_server(responder=responder)
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    context = Context(workspace=str(workspace), model="openai:scripted-model", embedding_model="test:table")
    events: list[dict] = []
    final = await run_graph(graph, "Say hi.", context, thread="t", events=events)
    background.drain()
    assert final["answer"] == "Hi."
    assert at_request == [(False, 0)]  # no store opened, no database created before the request
    assert [e["count"] for e in events if e["event"] == "memory_recall"] == [0]
    assert db.exists() and len(opened) == 1  # the run's write opened (and created) the store


async def test_a_write_to_the_open_default_store_needs_no_thread_to_find_it(
    scripted_server, workspace, monkeypatch
):
    """Finding the default store resolves its folder (file system reads: in a thread) only until the
    store is open; then memory_write finds it on the loop and queues its write at once."""
    import asyncio

    from smart_agent.memory import open_stores as store_module
    from smart_agent.memory import service

    monkeypatch.setitem(embeddings._cache, "test:table", TableEmbeddings())
    lookups: list[str] = []
    to_thread = asyncio.to_thread

    async def counting(fn, *args, **kw):
        if fn is service.store_for:
            lookups.append(threading.current_thread().name)
        return await to_thread(fn, *args, **kw)

    monkeypatch.setattr(asyncio, "to_thread", counting)
    srv = scripted_server(responder=lambda req: text("Noted."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())  # the default store
    context = Context(workspace=str(workspace), model="openai:scripted-model", embedding_model="test:table")
    events: list[dict] = []
    await run_graph(graph, "Remember that the cat is called Tom", context, thread="a", events=events)
    background.drain()
    assert len(lookups) == 1  # the first write opened (created) the store, in a thread
    await run_graph(graph, "And the dog is called Rex", context, thread="b", events=events)
    (written,) = background.drain()
    assert len(lookups) == 1 and written["action"] == "created"  # the second found it open
    assert [e["deferred"] for e in events if e["event"] == "memory_write"] == [True, True]
    first = store_module.opened_store(embeddings="test:table")
    store_module.close_stores()
    assert first is not None and store_module.opened_store(embeddings="test:table") is None  # never a closed one
    await run_graph(graph, "And the bird is called Tweety", context, thread="c")
    background.drain()
    # (this run's recall, on the memory thread, opened it again before the write looked)
    again = store_module.opened_store(embeddings="test:table")
    assert again is not None and again is not first and len(lookups) == 1
    store_module.close_stores()
