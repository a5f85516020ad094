"""Memory off the critical path: the recall query is embedded on the memory thread, started by
the resolver (``prefetch_recall``), and ``memory_recall`` uses that vector."""

from __future__ import annotations

import threading

from conftest import openai_model, run_graph
from langgraph.checkpoint.memory import InMemorySaver
from memory_fakes import TableEmbeddings

from smart_agent.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory.store import FaissMemoryStore, user_namespace
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


async def test_the_recall_query_is_embedded_by_the_resolvers_prefetch(scripted_server, workspace, tmp_path, monkeypatch):
    emb = ThreadRecordingEmbeddings()
    store = FaissMemoryStore(tmp_path / "mem", embeddings=emb)
    store.remember(user_namespace("u"), "the cat is called Tom")
    emb.table["What is the cat called?"] = emb.embed_query("the cat is called Tom")
    vectors: list[object] = []
    recall = FaissMemoryStore.recall

    def spy(self, *args, **kw):
        vectors.append(kw.get("query_vector"))
        return recall(self, *args, **kw)

    monkeypatch.setattr(FaissMemoryStore, "recall", spy)
    srv = scripted_server(responder=lambda req: text("Tom."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    context = Context(workspace=str(workspace), model="openai:scripted-model", user_id="u")
    final = await run_graph(graph, "What is the cat called?", context, thread="t")
    assert final["answer"] == "Tom."
    assert "the cat is called Tom" in srv.requests[0]["messages"][0]["content"]  # recalled
    # The task was embedded once, on the memory thread the resolver handed it to, and
    # memory_recall searched with that vector.
    (thread,) = emb.threads["What is the cat called?"]
    assert thread.startswith("smart-agent-memory")
    assert len(vectors) == 1 and vectors[0] is not None
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
