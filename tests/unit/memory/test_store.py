"""FaissMemoryStore: BaseStore operations, persistence, namespaces, concurrency and safety of
the on-disk format (consolidation, ranking and pruning: test_ranking.py)."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from memory_fakes import TableEmbeddings

from smart_agent.memory.embeddings import LOCAL_DIM
from smart_agent.memory.open_stores import open_store, opened_store
from smart_agent.memory.store import (
    DB_NAME,
    INDEX_DIR,
    FaissMemoryStore,
    humanize_age,
    user_namespace,
)

DAY = 86_400.0


# -- BaseStore operations -----------------------------------------------------------
def test_put_get_search_list_delete(fake_store):
    s = fake_store()
    s.put(("docs", "a"), "k1", {"text": "alpha", "n": 1})
    s.put(("docs", "a"), "k2", {"text": "beta", "n": 5})
    s.put(("docs", "b"), "k3", {"text": "gamma", "n": 9, "tag": {"x": 1}})
    s.put(("other",), "k4", {"title": "no text field"})
    got = s.get(("docs", "a"), "k1")
    assert got.value == {"text": "alpha", "n": 1} and got.key == "k1" and got.namespace == ("docs", "a")
    assert s.get(("docs", "a"), "missing") is None

    assert {i.key for i in s.search(("docs",))} == {"k1", "k2", "k3"}
    assert [i.key for i in s.search(("docs",), filter={"n": {"$gte": 5}})] == ["k3", "k2"]  # newest first
    assert [i.key for i in s.search(("docs",), filter={"tag": {"x": 1}})] == ["k3"]
    assert len(s.search(("docs",), limit=2)) == 2
    assert [i.key for i in s.search(("docs",), limit=1, offset=2)] == ["k1"]

    hits = s.search(("docs",), query="beta")  # the same text -> the same vector
    assert hits[0].key == "k2" and hits[0].score is not None
    assert s.search(("docs",), query="beta", filter={"n": 1})[0].key == "k1"
    # A whole-value fallback makes items without the index field searchable too.
    assert s.search(("other",), query=json.dumps({"title": "no text field"}, sort_keys=True))[0].key == "k4"

    assert s.list_namespaces() == [("docs", "a"), ("docs", "b"), ("other",)]
    assert s.list_namespaces(prefix=("docs",)) == [("docs", "a"), ("docs", "b")]
    assert s.list_namespaces(suffix=("b",)) == [("docs", "b")]
    assert s.list_namespaces(max_depth=1) == [("docs",), ("other",)]

    s.put(("docs", "a"), "k1", {"text": "alpha 2"})  # update keeps created_at
    again = s.get(("docs", "a"), "k1")
    assert again.value["text"] == "alpha 2" and again.created_at == got.created_at
    s.delete(("docs", "a"), "k1")
    assert s.get(("docs", "a"), "k1") is None
    assert all(i.key != "k1" for i in s.search(("docs",), query="alpha 2"))


def test_batch_results_in_order_and_index_false(fake_store):
    s = fake_store()
    res = s.batch(
        [
            PutOp(("n",), "a", {"text": "one"}),
            PutOp(("n",), "b", {"text": "two"}, index=False),
            GetOp(("n",), "a"),
            SearchOp(("n",), query="two", limit=5),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("n",)),)),
        ]
    )
    assert res[0] is None and res[1] is None
    assert res[2].key == "a"
    # "b" is stored but not indexed: as in LangGraph's stores it only fills the page, unscored
    assert [(i.key, i.score is None) for i in res[3]] == [("a", False), ("b", True)]
    assert res[4] == [("n",)]
    assert s.get(("n",), "b").value == {"text": "two"}


async def test_async_api(fake_store):
    s = fake_store()
    await s.aput(("u",), "k", {"text": "hello"})
    assert (await s.aget(("u",), "k")).value == {"text": "hello"}
    assert [i.key for i in await s.asearch(("u",), query="hello")] == ["k"]
    assert await s.alist_namespaces() == [("u",)]


def test_invalid_namespaces_rejected(fake_store):
    s = fake_store()
    with pytest.raises(InvalidNamespaceError):
        s.batch([PutOp(("a.b",), "k", {"text": "x"})])
    with pytest.raises(InvalidNamespaceError):
        s.remember(("",), "x")
    assert user_namespace("alice.smith@example.com") == ("memories", "alice%2Esmith@example%2Ecom")
    assert user_namespace("") == ("memories", "default")


def test_search_of_an_empty_store_loads_no_model(tmp_path):
    emb = TableEmbeddings()
    s = FaissMemoryStore(tmp_path, embeddings=emb)
    assert s.search(("memories",), query="anything") == []
    assert s.recall(("memories", "u"), "anything") == []
    assert emb.calls == 0
    s.close()


# -- persistence ------------------------------------------------------------------------
def test_persistence_across_instances_and_files_on_disk(tmp_path):
    a = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    a.remember(("memories", "u"), "first fact")
    a.remember(("memories", "u"), "second fact")
    a.close()
    files = sorted(p.name for p in (tmp_path / INDEX_DIR).iterdir())
    assert len(files) == 1 and files[0].endswith("-2.faiss")  # <ns hash>-<version>.faiss
    assert (tmp_path / DB_NAME).exists()
    assert not list(tmp_path.rglob("*.pkl")) and not list(tmp_path.rglob("*.pickle"))
    b = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert [r.text for r in b.recall(("memories", "u"), "second fact", k=1)] == ["second fact"]
    assert b.count(("memories",)) == 2
    b.close()


def test_missing_stale_or_corrupt_index_files_are_rebuilt(tmp_path):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    for i in range(5):
        s.remember(("memories", "u"), f"fact {i}")
    s.close()
    (f,) = list((tmp_path / INDEX_DIR).glob("*.faiss"))
    f.write_bytes(b"not a faiss index at all")
    s2 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s2.recall(("memories", "u"), "fact 3", k=1)[0].text == "fact 3"
    s2.close()
    for p in (tmp_path / INDEX_DIR).glob("*.faiss"):
        p.unlink()
    s3 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s3.recall(("memories", "u"), "fact 4", k=1)[0].text == "fact 4"
    assert list((tmp_path / INDEX_DIR).glob("*.faiss"))  # rewritten
    s3.close()


def test_changing_the_embedding_model_reembeds(tmp_path):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(dim=16), embedding_name="fake-16")
    s.remember(("memories", "u"), "keep me")
    s.close()
    s2 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings(dim=32), embedding_name="fake-32")
    hits = s2.recall(("memories", "u"), "keep me")
    assert hits[0].text == "keep me" and hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert s2.stats()["embedding_model"] == "fake-32"
    s2.close()


# -- namespaces --------------------------------------------------------------------------
def test_namespaces_are_isolated(fake_store):
    s = fake_store()
    s.remember(user_namespace("alice"), "secret of alice")
    s.remember(user_namespace("bob"), "secret of bob")
    assert [r.text for r in s.recall(user_namespace("bob"), "secret of alice", k=5, min_similarity=-1)] == [
        "secret of bob"
    ]
    assert [r.text for r in s.recall(user_namespace("alice"), "secret of alice", k=5)] == ["secret of alice"]
    assert s.count(user_namespace("alice")) == 1 and s.count(("memories",)) == 2
    # A prefix search spans both.
    assert {r.text for r in s.recall(("memories",), "secret", k=5, min_similarity=-1)} == {
        "secret of alice",
        "secret of bob",
    }
    assert not s.forget(user_namespace("bob"), s.recall(user_namespace("alice"), "x", k=1, min_similarity=-1)[0].key)


# -- concurrency ------------------------------------------------------------------------------------
def test_thread_safety(fake_store):
    s = fake_store(dedupe_threshold=0.999)
    errors = []

    def worker(n):
        try:
            for i in range(15):
                s.remember(("m", f"t{n % 2}"), f"thread {n} fact {i}")
                s.recall(("m",), f"thread {n} fact {i}", k=3)
                s.search(("m",), limit=5)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert s.count(("m",)) == 90
    # The in-memory indexes agree with SQLite.
    for ns in (("m", "t0"), ("m", "t1")):
        assert s.recall(ns, "thread 2 fact 7" if ns[1] == "t0" else "thread 3 fact 7", k=1)[
            0
        ].similarity == pytest.approx(1.0, abs=1e-5)


def _holding(lock: threading.RLock):
    """A thread that holds ``lock`` until the returned function is called (which waits for the
    thread to give it back)."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(30)

    def let_go() -> None:
        release.set()
        holder.join()

    return let_go


def _free_elsewhere(lock: threading.RLock) -> bool:
    """Whether another thread could take ``lock`` now."""
    got: list[bool] = []

    def probe() -> None:
        if ok := lock.acquire(blocking=False):
            lock.release()
        got.append(ok)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    return got[0]


def test_held_if_free_holds_the_store_only_when_nothing_else_does(fake_store):
    from smart_agent.memory import background

    s = fake_store()
    with s.held_if_free() as free:
        assert not free  # nothing embedded yet: the folder's model is not checked (it may re-embed all)
    s.remember(("m",), "the cat is called Tom")
    background.drain()
    with s.held_if_free() as free:
        assert free
        assert not _free_elsewhere(s.rows.lock) and not _free_elsewhere(s.vectors.lock)  # held
        assert s.recall(("m",), "the cat is called Tom", k=1)[0].item.value["text"] == "the cat is called Tom"
    assert _free_elsewhere(s.rows.lock) and _free_elsewhere(s.vectors.lock)  # given back
    for lock in (s.rows.lock, s.vectors.lock):  # another thread holds either: nothing is held here
        let_go = _holding(lock)
        with s.held_if_free() as free:
            assert not free
            other = s.vectors.lock if lock is s.rows.lock else s.rows.lock
            assert _free_elsewhere(other)
        let_go()
    gate = threading.Event()
    background.submit(gate.wait, 30)  # a write queued and not done yet: a recall would wait for it
    with s.held_if_free() as free:
        assert not free
    with background.as_of(0), s.held_if_free() as free:
        assert free  # (a run that started before that write does not wait for it)
    gate.set()
    background.drain()
    with s.held_if_free() as free:
        assert free
    s.close()
    with s.held_if_free() as free:
        assert not free


# -- safety -------------------------------------------------------------------------------------------
class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_planted_pickles_execute_nothing(tmp_path):
    marker = tmp_path / "PWNED"
    folder = tmp_path / "memory"
    s = FaissMemoryStore(folder, embeddings=TableEmbeddings())
    s.remember(("memories", "u"), "a harmless memory")
    s.close()
    payload = pickle.dumps(_Exploit(marker))
    # Everything a pickle-based vector store would load...
    for name in ("index.pkl", "docs.pkl", "index.pickle", "store.pkl"):
        (folder / name).write_bytes(payload)
    (folder / INDEX_DIR / "index.pkl").write_bytes(payload)
    # ...and a pickle in place of the current FAISS file and inside SQLite values.
    (current,) = list((folder / INDEX_DIR).glob("*.faiss"))
    current.write_bytes(payload)
    con = sqlite3.connect(folder / DB_NAME)
    con.execute("INSERT INTO meta(key, value) VALUES ('pickle', ?)", (payload.hex(),))
    con.execute("UPDATE items SET value = ?", (json.dumps({"text": "a harmless memory", "blob": payload.hex()}),))
    con.commit()
    con.close()
    s2 = FaissMemoryStore(folder, embeddings=TableEmbeddings())
    assert s2.recall(("memories", "u"), "a harmless memory")[0].text == "a harmless memory"
    s2.list_namespaces()
    s2.search(("memories",))
    s2.stats()
    s2.close()
    assert not marker.exists()
    # Sanity check: the planted file really is a working exploit when unpickled.
    pickle.loads(payload)
    assert marker.exists()


def test_no_pickle_in_the_memory_code():
    files = [REPO / "memory" / f for f in ("store.py", "embeddings.py", "service.py")] + [
        REPO / "cli" / "memory.py"
    ]
    src = "".join(f.read_text() for f in files)
    assert "import pickle" not in src and "pickle.load" not in src and "load_local" not in src


# -- misc ---------------------------------------------------------------------------------------------------
def test_humanize_age():
    assert humanize_age(5) == "just now"
    assert humanize_age(90) == "1 minute ago"
    assert humanize_age(3 * 3600) == "3 hours ago"
    assert humanize_age(3 * DAY + 5) == "3 days ago"
    assert humanize_age(15 * DAY) == "2 weeks ago"
    assert humanize_age(400 * DAY) == "1 year ago"


def test_open_store_is_cached_per_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SMART_AGENT_HOME", str(tmp_path / "h1"))
    a = open_store(embeddings=TableEmbeddings())
    emb = a.embeddings
    assert open_store(embeddings=emb) is a and a.path == tmp_path / "h1" / "memory"
    monkeypatch.setenv("SMART_AGENT_HOME", str(tmp_path / "h2"))
    assert open_store(embeddings=emb) is not a


def test_a_store_opened_in_a_relative_folder_stays_there_when_the_working_folder_changes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = FaissMemoryStore("rel", embeddings=TableEmbeddings())
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    store.remember(user_namespace("u"), "the cat is called Tom")
    store.close()  # saves the index files
    assert list((tmp_path / "other").iterdir()) == []
    assert store.path == tmp_path / "rel" and list((tmp_path / "rel" / INDEX_DIR).glob("*.faiss"))
    again = FaissMemoryStore(tmp_path / "rel", embeddings=TableEmbeddings())
    assert again.count(user_namespace("u")) == 1
    again.close()


def test_opened_store_finds_an_open_store_without_opening_one(tmp_path, monkeypatch):
    """What memory_write asks on the event loop: the store open_store gave for the same folder
    (as given, a relative one in the same working folder) and model, never a closed one, and
    None when nothing was opened there."""
    emb = TableEmbeddings()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SMART_AGENT_HOME", "rel-home")
    assert opened_store(embeddings=emb) is None and not (tmp_path / "rel-home").exists()
    a = open_store(embeddings=emb)
    assert opened_store(embeddings=emb) is a
    assert opened_store(embeddings="another-model") is None
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the same relative name is another folder now
    assert opened_store(embeddings=emb) is None
    b = open_store(embeddings=emb)
    assert b is not a and opened_store(embeddings=emb) is b and (tmp_path / "elsewhere" / "rel-home").is_dir()
    monkeypatch.chdir(tmp_path)
    assert opened_store(embeddings=emb) is a
    a.close()
    assert opened_store(embeddings=emb) is None
    b.close()


def test_local_model_is_normalized_384d(local_model):
    v = np.asarray(local_model.embed_documents(["hello", "world"]))
    assert v.shape == (2, LOCAL_DIM)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert local_model.active_backend == "onnx"


def test_stats_and_items(fake_store):
    s = fake_store()
    s.remember(user_namespace("u"), "x1")
    stats = s.stats()
    assert stats["items"] == 1 and stats["dim"] == 16 and stats["index_bytes"] > 0
    assert [i.value["text"] for i in s.items(user_namespace("u"))] == ["x1"]
    assert time.time() - s.items()[0].updated_at.timestamp() < 60
