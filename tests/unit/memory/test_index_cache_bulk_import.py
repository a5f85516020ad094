"""A bulk import announced to the store (``FaissMemoryStore.importing``, which ``memory import``
uses) trains the namespace's IVF index once, for the import's size, while the import goes on;
the writes made during the training are replayed on the trained index (or caught up by ids when
a change came another way), so no memory is lost or left stale."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from langgraph.store.base import PutOp
from memory_fakes import TableEmbeddings, clustered, exact_top

from smart_agent.memory import ann, index_cache
from smart_agent.memory.store import FaissMemoryStore
from smart_agent.memory.transfer import import_records, parse_records

NS = ("memories", "u")
NS_JSON = '["memories", "u"]'


def fill(store: FaissMemoryStore, n: int, start: int = 0) -> None:
    store.batch([PutOp(NS, f"k{i}", {"text": f"fact {i}"}) for i in range(start, start + n)])


@pytest.fixture
def small_lists(monkeypatch):
    """IVF from 200 vectors, 4 training points a list: ``nlist_for(1000)`` = 63, sampled from 252."""
    monkeypatch.setattr(ann, "IVF_MIN", 200)
    monkeypatch.setattr(ann, "TRAIN_POINTS_PER_LIST", 4)


@pytest.fixture
def gated(monkeypatch):
    """Every training build waits for ``go`` (so writes land while it trains); records its size and lists."""
    go, builds = threading.Event(), []
    build = ann.build

    def gated_build(dim, ids, vectors, *, train, nlist=None):
        if train:
            builds.append((len(ids), nlist))
            assert go.wait(30), "the test never released the training"
        return build(dim, ids, vectors, train=train, nlist=nlist)

    monkeypatch.setattr(ann, "build", gated_build)
    return go, builds


@pytest.fixture
def syncs(monkeypatch):
    """Counts the catch-ups by ids (SQLite's ids against the index's)."""
    calls = []
    sync = index_cache.VectorIndex._sync

    def counting(self, ns, entry):
        calls.append(ns)
        return sync(self, ns, entry)

    monkeypatch.setattr(index_cache.VectorIndex, "_sync", counting)
    return calls


def consistent(store: FaissMemoryStore) -> np.ndarray:
    """The index holds exactly SQLite's indexed ids (nothing lost, nothing stale); its ids."""
    entry = store.vectors.index_for(NS_JSON)
    assert entry is not None
    held = ann.ids_of(entry.index)
    assert len(held) == len(set(held.tolist())) == entry.index.ntotal
    assert set(held.tolist()) == store.rows.indexed_ids(NS_JSON)
    return held


def test_an_announced_import_trains_once_for_its_size_and_replays_the_writes_made_meanwhile(
    tmp_path, small_lists, gated, syncs, monkeypatch
):
    go, builds = gated
    monkeypatch.setattr(index_cache, "SWAP_AFTER", 100)  # most of the journal: replayed outside the locks
    replays = []
    replay = index_cache._replay

    def counting_replay(entry, changes):
        if threading.current_thread().name == "smart-agent-memory-train":  # (not a write's own change)
            replays.append(len(changes))
        return replay(entry, changes)

    monkeypatch.setattr(index_cache, "_replay", counting_replay)
    table = clustered(1000, 40)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(table))
    with s.importing(NS, 1000):
        fill(s, 260)  # enough to sample 63 lists: the training starts, and waits
        assert builds == [(260, ann.nlist_for(1000))]
        for start in range(260, 1000, 148):
            fill(s, min(148, 1000 - start), start=start)
        s.batch([PutOp(NS, "k5", {"text": "fact 5"}), PutOp(NS, "k6", None)])  # rewritten, deleted
        go.set()
    s.wait_for_training()
    entry = s.vectors.index_for(NS_JSON)
    assert builds == [(260, ann.nlist_for(1000))]  # once: not at 200 and again at 800
    assert syncs == []  # caught up from its journal, not by reading SQLite's ids
    assert replays[0] >= 6 and replays[1:] == [0]  # all of it before the swap, none left for under the locks
    assert entry.index.nlist == ann.nlist_for(1000) and entry.index.ntotal == 999
    consistent(s)
    found = 0
    for q in (f"question {q}" for q in range(40)):
        got = [i.key for i in s.search(NS, query=q, limit=5)]
        want = [k for k in exact_top(table, 1000, q, 6) if k != "k6"][:5]
        found += len(set(got) & set(want))
    assert found / 200 >= 0.98
    s.close()
    again = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(table))
    assert again.vectors.index_for(NS_JSON).index.nlist == ann.nlist_for(1000)  # saved trained
    assert again.recall(NS, "fact 999", k=1)[0].key == "k999"
    again.close()


def test_without_the_announcement_the_index_is_trained_as_it_grows(tmp_path, small_lists, gated):
    go, builds = gated
    go.set()
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(clustered(1000, 0)), train_in_background=False)
    for start in range(0, 1000, 100):
        fill(s, 100, start=start)
    assert [n for n, _ in builds] == [200, 800]  # at IVF_MIN, then at RETRAIN_GROWTH times that
    s.close()


def test_a_change_made_by_another_process_during_the_training_is_caught_up_by_ids(
    tmp_path, small_lists, gated, syncs
):
    go, builds = gated
    table = clustered(600, 0)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(table))
    with s.importing(NS, 600):
        fill(s, 300)
        assert len(builds) == 1
        other = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(table))
        other.batch([PutOp(NS, "k1", None), PutOp(NS, "x", {"text": "fact 599"})])  # not in s's journal
        other.close()
        fill(s, 100, start=300)  # s catches up with the other's rows first, then writes
        assert syncs == [NS_JSON]
        go.set()
    s.wait_for_training()
    assert syncs == [NS_JSON, NS_JSON]  # the trained index too: the journal missed the other's rows
    held = consistent(s)
    assert s.vectors.index_for(NS_JSON).index.nlist == ann.nlist_for(600) and len(held) == 400
    assert s.get(NS, "k1") is None and s.recall(NS, "fact 599", k=1)[0].key == "x"
    s.close()


def test_an_import_that_ends_far_short_of_its_size_is_retrained_for_the_size_it_reached(
    tmp_path, small_lists, gated
):
    go, builds = gated
    go.set()
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(clustered(520, 0)))
    with s.importing(NS, 4000):  # 126 lists, trained from 504 vectors
        fill(s, 520)
        s.wait_for_training()
        assert s.vectors.index_for(NS_JSON).index.nlist == ann.nlist_for(4000)
    s.wait_for_training()  # 520 vectors in 126 lists: too many for NPROBE to find their neighbours
    assert [nl for _, nl in builds] == [ann.nlist_for(4000), ann.nlist_for(520)]
    assert s.vectors.index_for(NS_JSON).index.nlist == ann.nlist_for(520)
    consistent(s)
    s.close()


def test_the_size_counts_what_the_namespace_holds_already(tmp_path, small_lists, gated):
    go, builds = gated
    go.set()
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(clustered(1100, 0)), train_in_background=False)
    fill(s, 150)
    with s.importing(NS, 950):  # to 1100
        fill(s, 950, start=150)
    assert [nl for _, nl in builds] == [ann.nlist_for(1100)]
    s.close()


@pytest.mark.parametrize("total", [-1, 2.5, True, "10"])
def test_a_bad_size_is_refused(tmp_path, total):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    with pytest.raises(ValueError, match="total"), s.importing(NS, total):
        pass
    s.close()


def test_a_shrunk_index_is_retrained():
    index = ann.build(8, np.arange(40_000), np.eye(8, dtype="float32")[np.arange(40_000) % 8], train=False)
    assert not ann.needs_training(ann.new_index(8))
    trained = ann.build(8, np.arange(100_000), np.random.default_rng(1).normal(size=(100_000, 8)), train=True)
    assert ann.trained_for(trained) >= 99_000 and not ann.needs_training(trained)
    ann.remove(trained, np.arange(76_000))  # 24,000 left: a quarter of what its lists were chosen for
    assert ann.needs_training(trained)
    assert ann.needs_training(index)  # (never trained, above IVF_MIN)


async def test_memory_import_announces_its_size(tmp_path, monkeypatch):
    seen = []
    importing = FaissMemoryStore.importing

    def spy(self, namespace, total):
        seen.append((tuple(namespace), total))
        return importing(self, namespace, total)

    monkeypatch.setattr(FaissMemoryStore, "importing", spy)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    lines = [f'{{"key": "k{i}", "text": "fact {i}"}}' for i in range(70)]
    assert await import_records(s, NS, parse_records(lines)) == 70
    assert seen == [(NS, 70)] and s.count(NS) == 70
    s.close()
