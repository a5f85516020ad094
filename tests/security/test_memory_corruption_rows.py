"""Attack: one damaged row in the memory database (a vector blob or JSON value
overwritten behind the store's back) must cost that row only, not the user's
whole memory: recall and writes keep working, the row is skipped and reported."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from conftest import cli_env, openai_model, run_cli, run_graph
from langgraph.checkpoint.memory import InMemorySaver
from memory_fakes import DIM, TableEmbeddings

from smart_agent.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory import background
from smart_agent.memory.store import DB_NAME, INDEX_DIR, FaissMemoryStore
from smart_agent.testing.scripted_server import text

NS = ("memories", "u")
FACTS = ["the cat is called Tom", "the dog is called Rex", "the fish is called Nemo"]

BAD_VECTORS = {
    "short garbage": b"\x00garbage",
    "one float too many": np.ones(DIM + 1, dtype="<f4").tobytes(),
    "nan values": np.full(DIM, np.nan, dtype="<f4").tobytes(),
    "huge values": np.full(DIM, 1e30, dtype="<f4").tobytes(),
    "text instead of bytes": "not a vector",
}


def make_store(folder, facts=FACTS) -> dict[str, str]:
    """A store with ``facts``; returns text -> key."""
    s = FaissMemoryStore(folder, embeddings=TableEmbeddings())
    keys = {f: s.remember(NS, f).key for f in facts}
    s.close()
    return keys


def tamper(folder, sql: str, params=()) -> None:
    con = sqlite3.connect(folder / DB_NAME)
    assert con.execute(sql, params).rowcount == 1
    con.commit()
    con.close()


def drop_index_cache(folder) -> None:
    """The FAISS files are a cache (e.g. wiped, or made stale by another process): forces a rebuild from SQLite."""
    for f in (folder / INDEX_DIR).glob("*.faiss"):
        f.unlink()


@pytest.mark.unit
@pytest.mark.parametrize("blob", BAD_VECTORS.values(), ids=BAD_VECTORS.keys())
def test_a_corrupt_vector_blob_costs_one_row_not_the_users_memory(tmp_path, blob, monkeypatch):
    keys = make_store(tmp_path)
    bad = keys["the dog is called Rex"]
    tamper(tmp_path, "UPDATE items SET vector=? WHERE key=?", (blob, bad))
    drop_index_cache(tmp_path)

    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    hits = s.recall(NS, "the cat is called Tom", k=5, min_similarity=-1.0)
    assert hits[0].text == "the cat is called Tom"
    assert bad not in {h.key for h in hits}
    assert {h.key for h in hits} == {keys["the cat is called Tom"], keys["the fish is called Nemo"]}
    (damaged,) = s.damaged(NS)
    assert damaged["key"] == bad and "vector" in damaged["reason"]
    # Writing keeps working for this user, and the new memory is recalled.
    written = s.remember(NS, "the bird is called Tweety")
    assert written.action == "created"
    assert s.recall(NS, "the bird is called Tweety", k=1)[0].key == written.key
    assert [d["key"] for d in s.stats()["damaged"]] == [bad]
    s.close()

    # A later process does not rebuild again: the index file it wrote matches the database.
    rebuilds = []
    original = FaissMemoryStore._rebuild_index
    monkeypatch.setattr(FaissMemoryStore, "_rebuild_index", lambda self, ns: rebuilds.append(ns) or original(self, ns))
    s2 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s2.recall(NS, "the fish is called Nemo", k=1)[0].key == keys["the fish is called Nemo"]
    assert rebuilds == []
    assert [d["key"] for d in s2.damaged(NS)] == [bad]
    s2.close()


@pytest.mark.unit
def test_rewriting_a_damaged_row_repairs_it(tmp_path):
    keys = make_store(tmp_path)
    bad = keys["the dog is called Rex"]
    tamper(tmp_path, "UPDATE items SET vector=? WHERE key=?", (b"\x01\x02\x03", bad))
    drop_index_cache(tmp_path)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert bad not in {h.key for h in s.recall(NS, "the dog is called Rex", k=5, min_similarity=-1.0)}
    assert [d["key"] for d in s.damaged(NS)] == [bad]
    s.put(NS, bad, {"text": "the dog is called Rex"})
    assert s.damaged(NS) == []
    assert s.recall(NS, "the dog is called Rex", k=1)[0].key == bad
    s.close()


@pytest.mark.unit
def test_a_row_whose_json_value_does_not_parse_is_skipped_and_reported(tmp_path):
    keys = make_store(tmp_path)
    bad = keys["the fish is called Nemo"]
    tamper(tmp_path, "UPDATE items SET value='{\"text\": \"the fish' WHERE key=?", (bad,))

    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    # Before anything read the row, stats finds it by scanning (and no longer fails on it).
    stats = s.stats()
    assert stats["items"] == 3 and [(d["key"], d["reason"]) for d in stats["damaged"]] == [
        (bad, "value is not valid JSON")
    ]
    hits = s.recall(NS, "the fish is called Nemo", k=5, min_similarity=-1.0)
    assert bad not in {h.key for h in hits} and len(hits) == 2
    assert bad not in {i.key for i in s.search(NS)} and len(s.search(NS)) == 2
    assert s.get(NS, bad) is None
    assert [d["key"] for d in s.damaged(NS)] == [bad]
    assert s.remember(NS, "the horse is called Ed").action == "created"
    assert len(s.search(NS)) == 3
    s.close()


@pytest.mark.graph
async def test_agent_run_reports_the_skipped_row_and_still_writes(scripted_server, workspace, tmp_path):
    keys = make_store(tmp_path / "mem", FACTS)
    bad = keys["the cat is called Tom"]
    tamper(tmp_path / "mem", "UPDATE items SET vector=? WHERE key=?", (b"junk", bad))
    drop_index_cache(tmp_path / "mem")
    store = FaissMemoryStore(tmp_path / "mem", embeddings=TableEmbeddings())
    store.embeddings.table["What is my dog called?"] = store.embeddings.embed_query("the dog is called Rex")
    srv = scripted_server(responder=lambda req: text("Your dog is Rex."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    background.drain()  # results of earlier tests' writes
    events: list[dict] = []
    final = await run_graph(
        graph, "What is my dog called?", Context(workspace=str(workspace), model="openai:scripted-model", user_id="u"),
        thread="t", events=events,
    )
    assert final["answer"] == "Your dog is Rex."
    assert "the dog is called Rex" in srv.requests[0]["messages"][0]["content"]  # the other memories were recalled
    (recall,) = [e for e in events if e["event"] == "memory_recall"]
    assert "error" not in recall and recall["damaged"] == 1
    assert recall["warning"].startswith(f"1 damaged memory row(s) skipped ({bad}: vector has 4 bytes")
    # The write re-embedded the row whose text was intact: it is recalled again.
    (queued,) = [e for e in events if e["event"] == "memory_write"]
    assert queued["deferred"] is True  # written after the answer, on the memory thread
    (write,) = background.drain()
    assert "error" not in write and write["action"] == "created"
    assert write["repaired"] == 1 and "damaged" not in write and "warning" not in write
    assert store.count(NS) == 4 and store.damaged(NS) == []
    assert store.recall(NS, "the cat is called Tom", k=1)[0].key == bad
    store.close()


@pytest.mark.unit
def test_repair_reembeds_rows_whose_text_is_intact_and_keeps_their_age(tmp_path):
    keys = make_store(tmp_path)
    vec_bad, json_bad = keys["the cat is called Tom"], keys["the dog is called Rex"]
    tamper(tmp_path, "UPDATE items SET vector=? WHERE key=?", (np.full(DIM, np.inf, dtype="<f4").tobytes(), vec_bad))
    tamper(tmp_path, "UPDATE items SET value='{' WHERE key=?", (json_bad,))
    drop_index_cache(tmp_path)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    before = s.search(NS)  # reads the rows: the bad JSON is found here
    assert {i.key for i in before} == {vec_bad, keys["the fish is called Nemo"]}
    assert s.recall(NS, "the cat is called Tom", k=1)[0].key != vec_bad  # the rebuild found the bad vector
    assert sorted(d["key"] for d in s.damaged(NS)) == sorted([vec_bad, json_bad])
    assert s.repair(NS) == [vec_bad]
    hit = s.recall(NS, "the cat is called Tom", k=1)[0]
    assert hit.key == vec_bad and hit.similarity == pytest.approx(1.0, abs=1e-5)
    assert hit.item.updated_at == next(i for i in before if i.key == vec_bad).updated_at
    assert [d["key"] for d in s.damaged(NS)] == [json_bad]  # a value that does not parse cannot be re-made
    assert s.repair(NS) == []
    s.close()
    s2 = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())  # the repaired index was persisted
    assert s2.recall(NS, "the cat is called Tom", k=1)[0].key == vec_bad
    s2.close()


@pytest.mark.e2e
def test_memory_stats_cli_counts_damaged_rows(tmp_path, isolated_home):
    folder = isolated_home / "memory"
    keys = make_store(folder)
    bad = keys["the cat is called Tom"]
    tamper(folder, "UPDATE items SET value='not json' WHERE key=?", (bad,))
    env = cli_env()
    out = run_cli(["memory", "stats", "--user", "u"], env=env)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("damaged rows:")]
    assert line == [f"damaged rows:    1 (skipped by recall and search): {bad}: value is not valid JSON"]
    as_json = run_cli(["memory", "stats", "--user", "u", "--json"], env=env)
    assert [d["key"] for d in json.loads(as_json.stdout)["damaged"]] == [bad]
    listed = run_cli(["memory", "list", "--user", "u", "--json"], env=env)
    assert listed.returncode == 0 and bad not in {m["id"] for m in json.loads(listed.stdout)["memories"]}


def _vm_steps(store: FaissMemoryStore, call) -> int:
    """SQLite virtual-machine steps (in blocks of 10) the store's database runs during ``call()``."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    store._conn.set_progress_handler(count, 10)
    try:
        call()
    finally:
        store._conn.set_progress_handler(None, 10)
    return steps[0]


@pytest.mark.unit
def test_finding_damaged_rows_reads_the_recorded_ones_not_every_memory(tmp_path):
    """Every recall and every write asks for the namespace's damaged rows (and repairs them): that
    costs the same with 20 memories as with 2,000, and still finds exactly the damaged row, under
    its user's namespace only."""
    from langgraph.store.base import PutOp

    steps = {}
    for size in (20, 2000):
        folder = tmp_path / str(size)
        s = FaissMemoryStore(folder, embeddings=TableEmbeddings(), max_items_per_namespace=size + 10)
        s.batch([PutOp(NS, f"m{i}", {"text": f"memory number {i}"}) for i in range(size)])
        s.remember(("memories", "other"), "someone else's memory")
        s.close()
        tamper(folder, "UPDATE items SET vector=? WHERE key=?", (b"\x00garbage", "m7"))
        drop_index_cache(folder)
        s = FaissMemoryStore(folder, embeddings=TableEmbeddings())
        s.recall(NS, "memory number 3", k=5)  # the rebuild records the damaged row
        found: list = []
        steps[size] = _vm_steps(s, lambda s=s, found=found: found.append(s.damaged(NS)))
        assert [d["key"] for d in found[0]] == ["m7"]
        assert s.damaged(("memories", "other")) == [] and [d["key"] for d in s.damaged(("memories",))] == ["m7"]
        repaired: list = []
        steps[-size] = _vm_steps(s, lambda s=s, repaired=repaired: repaired.extend(s.repair(NS)))
        assert repaired == ["m7"] and s.damaged(NS) == []
        s.close()
    assert steps[2000] <= steps[20] + 5, steps  # (a scan of the namespace: hundreds of blocks more)
    assert steps[-2000] <= steps[-20] + 5, steps
