"""FaissMemoryStore: consolidation of near-duplicates, the ranking of recalled memories (similarity,
recency, importance) and pruning at the capacity cap."""

from __future__ import annotations

import pytest
from memory_fakes import Clock, TableEmbeddings, unit

from smart_agent.memory.store import (
    FaissMemoryStore,
    RankingConfig,
    user_namespace,
)

DAY = 86_400.0


# -- consolidation ----------------------------------------------------------------------------
def test_near_duplicates_merge_with_controlled_vectors(fake_store):
    clock = Clock()
    table = {
        "colour teal": unit(1, 0),
        "colour is teal!": unit(1, 0.2),  # cos 0.98 -> merge
        "lives in Lisbon": unit(0, 1),  # cos 0 -> new
        "half related": unit(1, 1.2),  # cos 0.64 -> new
    }
    s = fake_store(table, clock=clock)
    first = s.remember(("m",), "colour teal", importance=0.4)
    clock.t += DAY
    merged = s.remember(("m",), "colour is teal!", importance=0.7)
    assert merged.action == "merged" and merged.key == first.key and merged.merges == 1
    assert merged.similarity == pytest.approx(0.98, abs=0.01)
    item = s.get(("m",), first.key)
    assert item.value["text"] == "colour is teal!"  # the newer text wins
    assert item.value["importance"] == pytest.approx(0.75)  # max(0.4, 0.7) + 0.05
    assert item.updated_at.timestamp() == pytest.approx(clock.t) and item.created_at.timestamp() == pytest.approx(
        clock.t - DAY
    )
    assert s.remember(("m",), "lives in Lisbon").action == "created"
    assert s.remember(("m",), "half related").action == "created"
    assert s.count(("m",)) == 3
    again = s.remember(("m",), "colour teal")
    assert again.action == "merged" and again.merges == 2
    assert s.stats()["namespaces"][0]["merges"] == 2


def test_dedupe_with_the_real_model(tmp_path, local_model):
    s = FaissMemoryStore(tmp_path)
    ns = user_namespace("u")
    a = s.remember(ns, "The user's favourite colour is teal.")
    b = s.remember(ns, "The user's favorite color is teal")
    c = s.remember(ns, "The user lives in Lisbon.")
    d = s.remember(ns, "The user's favourite colour is teal.")
    assert b.action == "merged" and b.key == a.key
    assert c.action == "created" and d.action == "merged" and d.merges == 2
    assert s.count(ns) == 2
    hits = s.recall(ns, "What is my favourite colour?", k=2)
    assert "teal" in hits[0].text and hits[0].similarity > hits[1].similarity
    s.close()


# -- ranking ------------------------------------------------------------------------------------
def test_ranking_formula():
    r = RankingConfig()
    assert r.w_similarity + r.w_recency + r.w_importance == pytest.approx(1.0)
    assert (
        r.recency(0) == 1.0 and r.recency(30 * DAY) == pytest.approx(0.5) and r.recency(60 * DAY) == pytest.approx(0.25)
    )
    assert r.score(0.8, 30 * DAY, 0.5) == pytest.approx(0.7 * 0.8 + 0.15 * 0.5 + 0.15 * 0.5)
    assert r.score(-0.3, 0, 0) == pytest.approx(0.15)  # negative cosine clipped


def test_recency_and_importance_reorder_similar_memories(fake_store):
    clock = Clock()
    table = {
        "q": unit(1, 0, 0),
        "old but closest": unit(1, 0.75, 0),  # cos 0.80
        "new, a bit less close": unit(1, 0, 1.02),  # cos 0.70
        "unimportant": unit(1, 0.5, 0.5),  # cos ~0.82
        "important": unit(1, 0.5, -0.5),  # cos ~0.82
    }
    s = fake_store(table, clock=clock, dedupe_threshold=0.99)
    s.remember(("m",), "old but closest")
    clock.t += 120 * DAY
    s.remember(("m",), "new, a bit less close")
    hits = s.recall(("m",), "q", k=2)
    # 0.7*0.80 + 0.15*0.0625 + 0.075 = 0.644  <  0.7*0.70 + 0.15 + 0.075 = 0.715
    assert [h.text for h in hits] == ["new, a bit less close", "old but closest"]
    assert hits[1].similarity > hits[0].similarity
    assert hits[0].score == pytest.approx(0.7 * hits[0].similarity + 0.15 + 0.15 * 0.5, abs=1e-6)
    # pure similarity ranking is one config away
    s.ranking = RankingConfig(w_similarity=1, w_recency=0, w_importance=0)
    assert [h.text for h in s.recall(("m",), "q", k=2)] == ["old but closest", "new, a bit less close"]
    s.ranking = RankingConfig()
    s.remember(("n",), "unimportant", importance=0.1)
    s.remember(("n",), "important", importance=0.9)
    assert [h.text for h in s.recall(("n",), "q", k=2)] == ["important", "unimportant"]


def test_min_similarity_and_k(fake_store):
    table = {"q": unit(1, 0), "near": unit(1, 0.3), "far": unit(0, 1)}
    s = fake_store(table)
    s.remember(("m",), "near")
    s.remember(("m",), "far")
    assert [h.text for h in s.recall(("m",), "q", k=5, min_similarity=0.2)] == ["near"]
    assert len(s.recall(("m",), "q", k=1)) == 1
    assert s.recall(("m",), "q", k=0) == []


# -- pruning ----------------------------------------------------------------------------------------
def test_capacity_cap_prunes_least_valuable_never_the_new_one(fake_store):
    clock = Clock()
    s = fake_store(clock=clock, max_items_per_namespace=3, dedupe_threshold=0.999)
    keep_important_old = s.remember(("m",), "important but old", importance=1.0)  # 1.0 * 0.125 after 90 d
    clock.t += 60 * DAY
    weak = s.remember(("m",), "weak and middle-aged", importance=0.2)  # 0.2 * 0.5 = 0.10 after 30 d
    clock.t += 30 * DAY
    fresh = s.remember(("m",), "fresh and average", importance=0.5)  # 0.5 * 1.0
    assert s.count(("m",)) == 3
    newest = s.remember(("m",), "trivial newcomer", importance=0.0)  # value 0: still kept
    assert newest.pruned == [weak.key]
    keys = {i.key for i in s.search(("m",), limit=10)}
    assert keys == {keep_important_old.key, fresh.key, newest.key}
    # Once it is no longer the one just written, importance 0 is worth nothing.
    clock.t += 1
    last = s.remember(("m",), "another", importance=0.5)
    assert last.pruned == [newest.key]
    # A year later the old important memory (1.0 * 0.5**(456/30)) is worth less than
    # the fresher average one (0.5 * 0.5**(366/30)).
    clock.t += 365 * DAY
    final = s.remember(("m",), "yet another", importance=0.5)
    assert final.pruned == [keep_important_old.key]
    assert s.count(("m",)) == 3 and s.get(("m",), final.key) is not None
    # Other namespaces are not affected by this namespace's cap.
    s.remember(("other",), "x")
    assert s.count(("other",)) == 1


def test_cap_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SMART_AGENT_MEMORY_MAX_ITEMS", "2")
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    for t in ("a", "b", "c", "d"):
        s.remember(("m",), t)
    assert s.count(("m",)) == 2 and s.max_items_per_namespace == 2
    s.close()
