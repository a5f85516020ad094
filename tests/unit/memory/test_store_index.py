"""The FAISS index of the memory store: saved on close / every N writes (never per write),
caught up from SQLite when stale, IVF above a size threshold (trained, retrained as it grows),
one OpenMP thread, and recall reading only the rows it returns."""

from __future__ import annotations

import threading

import pytest
from langgraph.store.base import PutOp, SearchOp
from memory_fakes import TableEmbeddings, clustered, exact_top

from smart_agent.memory import ann, index_cache
from smart_agent.memory.rows import RowTable
from smart_agent.memory.store import INDEX_DIR, FaissMemoryStore

NS = ("memories", "u")


def files(folder):
    return sorted(p.name for p in (folder / INDEX_DIR).glob("*.faiss"))


def fill(store: FaissMemoryStore, n: int, start: int = 0, ns=NS) -> None:
    store.batch([PutOp(ns, f"k{i}", {"text": f"fact {i}"}) for i in range(start, start + n)])


@pytest.fixture
def counted(monkeypatch):
    """Counts the index saves and the full rebuilds (of a namespace with vectors) of every store."""
    calls = {"save": 0, "rebuild": 0}
    save, rebuild = index_cache.VectorIndex._save, index_cache.VectorIndex._rebuild

    def counting_save(self, ns_json, entry):
        calls["save"] += 1
        return save(self, ns_json, entry)

    def counting_rebuild(self, ns_json):
        index = rebuild(self, ns_json)
        calls["rebuild"] += index is not None
        return index

    monkeypatch.setattr(index_cache.VectorIndex, "_save", counting_save)
    monkeypatch.setattr(index_cache.VectorIndex, "_rebuild", counting_rebuild)
    return calls


def test_writes_do_not_rewrite_the_index_file_it_is_saved_on_close(tmp_path, counted):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    for i in range(20):
        s.remember(NS, f"fact {i}")
    assert counted["save"] == 0 and files(tmp_path) == []
    s.close()
    assert counted["save"] == 1 and len(files(tmp_path)) == 1
    s2 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s2.recall(NS, "fact 7", k=1)[0].text == "fact 7"
    assert counted["rebuild"] == 0  # the file held every write
    s2.close()


def test_the_index_is_saved_every_n_writes(tmp_path, counted, monkeypatch):
    monkeypatch.setattr(index_cache, "SAVE_EVERY", 5)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    for i in range(12):
        s.remember(NS, f"fact {i}")
    assert counted["save"] == 2 and len(files(tmp_path)) == 1  # after the 5th and the 10th write
    s.close()


def test_rows_written_without_saving_the_index_are_found_by_the_next_process(tmp_path, counted):
    a = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(a, 10)
    a.close()  # the file holds 10
    b = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(b, 3, start=10)
    b.forget(NS, "k0")
    # b "exits" without saving its index (killed): SQLite has the writes, the file does not
    b.rows.conn.close()
    c = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert c.recall(NS, "fact 12", k=1)[0].key == "k12"
    assert "k0" not in {r.key for r in c.recall(NS, "fact 0", k=20, min_similarity=-1)}
    assert c.vectors.index_for('["memories", "u"]').index.ntotal == 12
    assert counted["rebuild"] == 0  # caught up from the file by ids, not rebuilt
    c.close()


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_a_deleted_or_corrupt_index_file_is_rebuilt_from_sqlite(tmp_path, counted, damage):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(s, 8)
    s.close()
    (name,) = files(tmp_path)
    path = tmp_path / INDEX_DIR / name
    if damage == "delete":
        path.unlink()
    else:
        path.write_bytes(b"\x00" * 64)
    s2 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s2.recall(NS, "fact 5", k=1)[0].key == "k5"
    assert counted["rebuild"] == 1
    s2.close()


def test_a_rewritten_memory_gets_a_new_vector_in_another_processs_cached_index(tmp_path):
    a = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    b = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(a, 5)
    assert b.recall(NS, "fact 2", k=1)[0].key == "k2"  # b caches its index
    a.put(NS, "k2", {"text": "something else entirely"})
    hits = b.recall(NS, "something else entirely", k=1)
    assert hits[0].key == "k2" and hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert b.recall(NS, "fact 2", k=1, min_similarity=0.99) == []  # the old vector is gone
    a.close()
    b.close()


def test_recall_reads_the_full_rows_only_of_the_memories_it_returns(tmp_path, monkeypatch):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(s, 60)
    fetched: list[int] = []
    full_rows = RowTable.full_rows

    def counting(self, ids):
        fetched.extend(ids)
        return full_rows(self, ids)

    monkeypatch.setattr(RowTable, "full_rows", counting)
    hits = s.recall(NS, "fact 3", k=5, min_similarity=-1)
    assert len(hits) == 5 and hits[0].key == "k3"
    assert len(fetched) == 5  # of the 50 candidates FAISS gave
    s.close()


def test_faiss_runs_one_openmp_thread_in_every_thread_that_searches(tmp_path):
    """OpenMP's thread count is per thread: each searching thread pins its own."""
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(s, 5)
    seen: list[int] = []

    def search() -> None:
        faiss = ann.faiss_module()
        faiss.omp_set_num_threads(2)  # as a fresh thread starts: the machine's count
        ann._thread.pinned = False
        s.recall(NS, "fact 1", k=1)
        seen.append(faiss.omp_get_max_threads())

    worker = threading.Thread(target=search)
    worker.start()
    worker.join()
    assert seen == [1]
    s.close()


def test_above_the_threshold_the_index_is_ivf_trained_and_retrained_as_it_grows(tmp_path, monkeypatch):
    monkeypatch.setattr(ann, "IVF_MIN", 200)
    table = clustered(1050, 40)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(table), train_in_background=False)
    fill(s, 150)
    entry = s.vectors.index_for('["memories", "u"]')
    assert entry.index.nlist == 1  # small: exact
    fill(s, 100, start=150)
    entry = s.vectors.index_for('["memories", "u"]')
    assert entry.index.nlist == ann.nlist_for(250) > 1 and entry.index.ntotal == 250
    first = entry.index.nlist
    fill(s, 800, start=250)  # four times what it was trained for
    entry = s.vectors.index_for('["memories", "u"]')
    assert entry.index.nlist == ann.nlist_for(1050) > first and entry.index.ntotal == 1050
    # recall@5 of the store's similarity search against an exact scan of the same vectors
    found = 0
    queries = [f"question {q}" for q in range(40)]
    for q in queries:
        got = [i.key for i in s.search(NS, query=q, limit=5)]
        found += len(set(got) & set(exact_top(table, 1050, q, 5)))
    assert found / (5 * len(queries)) >= 0.98
    s.close()
    s2 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(table))
    assert s2.vectors.index_for('["memories", "u"]').index.nlist == entry.index.nlist  # the trained index was saved
    s2.close()


def test_training_in_the_background_swaps_in_an_ivf_index_caught_up_with_later_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(ann, "IVF_MIN", 200)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(s, 250)
    fill(s, 5, start=250)  # may land before or after the snapshot: caught up either way
    s.wait_for_training()
    entry = s.vectors.index_for('["memories", "u"]')
    assert entry.index.nlist > 1 and entry.index.ntotal == 255
    assert s.recall(NS, "fact 252", k=1)[0].key == "k252"
    s.close()


def test_a_file_far_behind_is_saved_by_the_reader_that_caught_it_up(tmp_path, counted, monkeypatch):
    """A process that only reads and caught up SAVE_EVERY rows or more saves the file, so the
    next process's catch-up stays short."""
    a = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(a, 3)
    a.close()  # the file holds 3
    b = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(b, 6, start=3)  # under the default SAVE_EVERY: not saved
    b.rows.conn.close()  # exits without saving the index
    (before,) = files(tmp_path)
    monkeypatch.setattr(index_cache, "SAVE_EVERY", 5)
    saves = counted["save"]
    c = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert c.recall(NS, "fact 8", k=1)[0].key == "k8"
    assert counted["save"] == saves + 1 and files(tmp_path) != [before]  # caught up 6 rows: saved
    c.rows.conn.close()


def test_a_current_index_file_is_memory_mapped_until_the_first_write(tmp_path):
    a = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    fill(a, 10)
    a.close()
    b = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert b.recall(NS, "fact 3", k=1)[0].key == "k3"
    entry = b.vectors.index_for('["memories", "u"]')
    assert entry.mapped is not None and entry.mapped.is_file()  # opened without reading the file
    assert b.remember(NS, "fact 10").action == "created"
    assert entry.mapped is None  # read into memory by the first change
    assert b.recall(NS, "fact 10", k=1)[0].text == "fact 10" and b.recall(NS, "fact 4", k=1)[0].key == "k4"
    b.close()
    c = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert c.recall(NS, "fact 10", k=1)[0].text == "fact 10" and c.count(NS) == 11
    c.close()


def test_a_batch_of_puts_is_written_together_and_searchable_within_the_batch(tmp_path):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    ns = ("docs",)
    res = s.batch([
        *(PutOp(ns, f"d{i}", {"text": f"doc {i}"}) for i in range(50)),
        PutOp(ns, "d7", {"text": "doc seven"}),  # the same key again: the later value
        SearchOp(ns, query="doc seven", limit=1),  # sees the puts before it
        PutOp(ns, "d8", None),
        SearchOp(ns, query="doc 8", limit=50),
    ])
    assert res[51][0].key == "d7" and res[51][0].value == {"text": "doc seven"}
    assert "d8" not in {i.key for i in res[53]} and len(res[53]) == 49
    assert s.vectors.index_for('["docs"]').index.ntotal == 49  # no stale vector of the first d7
    s.close()
