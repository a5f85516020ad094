"""Memory under concurrency: many runs at once over the real client, the FAISS store underneath.

Nothing is lost (every run's memory is written and later recalled), a recall does not wait for
writes queued after it, and the queries of runs that start together are embedded together.
(Throughput is measured, not tested: ``benchmarks/memory_concurrency.py``.)"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

from conftest import openai_model, run_graph
from langgraph.checkpoint.memory import InMemorySaver
from memory_fakes import TableEmbeddings

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory import background
from smart_agent.memory.embeddings import LocalSentenceEmbeddings
from smart_agent.memory.service import drain
from smart_agent.memory.store import FaissMemoryStore, user_namespace
from smart_agent.memory.vectors import CALL_TEXTS
from smart_agent.testing.scripted_server import text

RUNS = 32
FACTS = [f"the locker code of room {i} is {1000 + 37 * i}" for i in range(RUNS)]


def ctx(workspace, **kw):
    return Context(workspace=str(workspace), model="openai:scripted-model", user_id="u", **kw)


def system_prompt(request) -> str:
    return request["messages"][0]["content"]


def last_user(request) -> str:
    return " ".join(str(m["content"]) for m in request["messages"] if m["role"] == "user")


async def test_32_concurrent_runs_each_remembering_a_fact_leave_32_facts_later_runs_recall(
    scripted_server, workspace, tmp_path
):
    emb = TableEmbeddings()
    store = FaissMemoryStore(tmp_path / "mem", embeddings=emb)
    # A question is embedded as the request that stored its fact: each later run recalls its own.
    for i, fact in enumerate(FACTS):
        emb.table[f"What is the locker code of room {i}?"] = emb.embed_query(f"Remember that {fact}")
    srv = scripted_server(responder=lambda req: text(f"Noted ({last_user(req)[:40]})."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    drain()  # earlier tests' memory work

    await asyncio.gather(*(
        run_graph(graph, f"Remember that {fact}", ctx(workspace), thread=f"w{i}") for i, fact in enumerate(FACTS)
    ))
    written = [r for r in drain() if r["event"] == "memory_write"]
    assert len(written) == RUNS and all(r["action"] == "created" for r in written)
    texts = [i.value["text"] for i in store.search(user_namespace("u"), limit=100)]
    assert len(texts) == RUNS and all(any(fact in t for t in texts) for fact in FACTS)

    finals = await asyncio.gather(*(
        run_graph(graph, f"What is the locker code of room {i}?", ctx(workspace), thread=f"r{i}") for i in range(RUNS)
    ))
    for i, final in enumerate(finals):
        assert final["recalled_memories"][0]["text"].startswith(f"Task: Remember that {FACTS[i]}")
    asked = [(re.search(r"room (\d+)\?", last_user(r)), r) for r in list(srv.requests)]
    asked = [(int(m.group(1)), r) for m, r in asked if m]
    assert sorted(room for room, _ in asked) == list(range(RUNS))
    for room, request in asked:  # each run's prompt carries its own fact
        assert FACTS[room] in system_prompt(request)
    drain()
    store.close()


class SlowEmbeddings(TableEmbeddings):
    """A model call takes 50 ms, as a real one takes milliseconds: requests pile up meanwhile."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(0.05)
        return super().embed_documents(texts)


async def test_the_queries_of_runs_that_start_together_are_embedded_together_and_writes_reuse_them(
    scripted_server, workspace, tmp_path
):
    emb = SlowEmbeddings()
    store = FaissMemoryStore(tmp_path / "mem", embeddings=emb)
    store.remember(user_namespace("u"), "an earlier note")  # (something to search)
    srv = scripted_server(responder=lambda req: text("ok"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    drain()
    calls, encodes = emb.calls, store.embedder.encode_calls
    await asyncio.gather(*(run_graph(graph, f"task number {i}", ctx(workspace), thread=f"t{i}") for i in range(16)))
    drain()
    assert store.count(user_namespace("u")) == 17  # every run's memory
    # 16 queries in a few model calls (the first alone, the rest waiting meanwhile, together: a
    # model other than the local one takes every waiting text in one call), and
    # the 16 writes, indexed on their tasks, reused the queries' vectors: no call of their own.
    assert store.embedder.encode_calls - encodes == emb.calls - calls <= 4
    store.close()


class RecordingLocalModel(LocalSentenceEmbeddings):
    """The real local model (ONNX Runtime), recording the texts of each encode; the first call
    waits 0.3 s first, so the queries of runs that start together pile up meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> Any:
        if not self.calls:
            time.sleep(0.3)
        self.calls.append(list(texts))
        return super().encode(texts, batch_size)


async def test_with_the_local_model_runs_that_start_together_get_their_vectors_a_few_at_a_time(
    scripted_server, workspace, tmp_path
):
    """16 runs over the real client with the real local model: the queries that waited while the
    model was busy are encoded ``CALL_TEXTS`` at a time, oldest first, not in one call, and every
    run recalls what the store holds."""
    model = RecordingLocalModel()
    store = FaissMemoryStore(tmp_path / "mem", embeddings=model)
    for i in range(4):
        store.remember(user_namespace("u"), f"note {i}: the meeting with client {i} moved to Friday")
    drain()
    model.calls.clear()
    srv = scripted_server(responder=lambda req: text("ok"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    tasks = [f"When is the meeting with client {i % 4}? (asked by user {i})" for i in range(16)]
    finals = await asyncio.gather(*(
        run_graph(graph, task, ctx(workspace), thread=f"l{i}") for i, task in enumerate(tasks)
    ))
    drain()
    assert store.embedder.in_process is True
    assert sorted(t for call in model.calls for t in call) == sorted(tasks)  # each query once
    sizes = [len(c) for c in model.calls]
    assert max(sizes) <= CALL_TEXTS and CALL_TEXTS in sizes[1:], sizes  # (one call would have taken 15)
    for final in finals:
        assert final["recalled_memories"], final.get("memory_context")
    store.close()


async def test_a_recall_does_not_wait_for_writes_queued_after_its_run_started(tmp_path):
    """A slow write queued after a recall started does not hold the recall up; one queued before
    it does (a process reads its own writes)."""
    emb = TableEmbeddings()
    store = FaissMemoryStore(tmp_path / "mem", embeddings=emb)
    ns = user_namespace("u")
    store.remember(ns, "the cat is called Tom")
    drain()
    release = threading.Event()
    mark = background.writes_queued()
    background.submit(release.wait, 30)  # a write that takes as long as the test wants
    with background.as_of(mark):
        hits = await asyncio.wait_for(asyncio.to_thread(store.recall, ns, "the cat is called Tom", 1), 10)
    assert hits[0].text == "the cat is called Tom"
    waiting = asyncio.create_task(asyncio.to_thread(store.recall, ns, "the cat is called Tom", 1))
    await asyncio.sleep(0.2)
    assert not waiting.done()  # queued before this recall: waited for
    release.set()
    assert (await asyncio.wait_for(waiting, 10))[0].text == "the cat is called Tom"
    drain()
    store.close()
