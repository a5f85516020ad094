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

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory import background
from smart_agent.memory.index_cache import VectorIndex
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
    original = VectorIndex._rebuild
    monkeypatch.setattr(VectorIndex, "_rebuild", lambda self, ns: rebuilds.append(ns) or original(self, ns))
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
    # The question is near the dog's memory (cosine ~0.8): recalled first, but the run's own memory
    # (indexed on the question) stays below the merge threshold.
    emb = store.embeddings
    near = np.add(emb.embed_query("the dog is called Rex"), np.multiply(0.75, emb.embed_query("an unrelated question")))
    emb.table["What is my dog called?"] = (near / np.linalg.norm(near)).tolist()
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

    store.rows.conn.set_progress_handler(count, 10)
    try:
        call()
    finally:
        store.rows.conn.set_progress_handler(None, 10)
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


# -- one damaged row of any kind: read once, checked in one place (integrity.check_row) ---------
DEEP = '{"text": "deep", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
HUGE = '{"text": "' + "x" * 1_000_001 + '"}'
# name -> (SQL planting it into the row whose key is the last parameter, its parameters, the reason)
ROW_DAMAGE = {
    # found by the review
    "value nested 100k deep": ("UPDATE items SET value=? WHERE key=?", (DEEP,), "value is nested more than 200 levels"),
    "created_at as text": ("UPDATE items SET created_at='yesterday' WHERE key=?", (), "created_at is text, not epoch"),
    "lone surrogate in the value": (
        "UPDATE items SET value=? WHERE key=?", ('{"text": "a \\ud800 b"}',), "value has an unpaired surrogate escape"
    ),
    # the same kind
    "updated_at as text": ("UPDATE items SET updated_at='now' WHERE key=?", (), "updated_at is text, not epoch"),
    "created_at out of range": (
        "UPDATE items SET created_at=1e300 WHERE key=?", (), "created_at 1e+300 is out of range"
    ),
    "importance as text": (
        "UPDATE items SET value=json_set(value, '$.importance', 'high') WHERE key=?", (), "importance is text, not a"
    ),
    "merges as text": ("UPDATE items SET value=json_set(value, '$.merges', 'many') WHERE key=?", (), "merges is text"),
    "time in the value as text": (
        "UPDATE items SET value=json_set(value, '$.updated_at', 'monday') WHERE key=?", (),
        "the value's updated_at is text",
    ),
    "value a JSON list": (
        "UPDATE items SET value='[\"a list\"]' WHERE key=?", (), "value is a list, not a JSON object"
    ),
    "value a JSON number": ("UPDATE items SET value='42' WHERE key=?", (), "value is an integer, not a JSON object"),
    "huge value": ("UPDATE items SET value=? WHERE key=?", (HUGE,), "value is 1,000,013 characters, more than"),
    "NaN in the value": (
        "UPDATE items SET value='{\"text\": \"t\", \"importance\": NaN}' WHERE key=?", (), "value is not valid JSON"
    ),
    "bytes that are not UTF-8": (
        "UPDATE items SET value=CAST(X'7B2274657874223A202280FF227D' AS TEXT) WHERE key=?", (),
        "value is not valid UTF-8 text",
    ),
    "value stored as bytes": ("UPDATE items SET value=X'7B7D' WHERE key=?", (), "value is bytes, not JSON text"),
}
REVIEWED = ["value nested 100k deep", "created_at as text", "lone surrogate in the value"]
GOOD = ["the dog is called Rex", "the fish is called Nemo"]


def plant(folder, kind, key) -> None:
    sql, params, _ = ROW_DAMAGE[kind]
    tamper(folder, sql, (*params, key))


@pytest.mark.unit
@pytest.mark.parametrize("kind", ROW_DAMAGE)
def test_a_damaged_row_of_any_kind_costs_that_row_only(tmp_path, kind):
    import asyncio

    from smart_agent.memory.transfer import export_records

    keys = make_store(tmp_path)
    bad = keys["the cat is called Tom"]
    good = {keys[f] for f in GOOD}
    plant(tmp_path, kind, bad)
    reason = ROW_DAMAGE[kind][2]
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    # stats finds the row before anything read it, and does not fail on it
    stats = s.stats()
    assert stats["items"] == 3 and [d["key"] for d in stats["damaged"]] == [bad]
    assert stats["damaged"][0]["reason"].startswith(reason)
    # list, search, get, recall and export skip it and keep the others
    assert {i.key for i in s.search(NS)} == good
    assert s.get(NS, bad) is None
    hits = s.recall(NS, "the cat is called Tom", k=5, min_similarity=-1.0)
    assert {h.key for h in hits} == good
    assert {r["key"] for r in asyncio.run(export_records(s, NS))} == good
    (damaged,) = s.damaged(NS)
    assert damaged["key"] == bad and damaged["reason"].startswith(reason)
    # writes keep working; the damaged row is not "repaired" (only a bad vector is)
    assert s.remember(NS, "the bird is called Tweety").action == "created"
    assert s.repair(NS) == [] and [d["key"] for d in s.damaged(NS)] == [bad]
    # writing the key again replaces the damaged row
    s.put(NS, bad, {"text": "the cat is called Tom"})
    assert s.damaged(NS) == [] and s.get(NS, bad).value == {"text": "the cat is called Tom"}
    s.close()


@pytest.mark.unit
def test_the_store_writes_no_value_it_would_read_as_damaged(tmp_path):
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    deep: list = []
    for _ in range(300):
        deep = [deep]
    for value, why in [
        ({"text": "t", "x": deep}, "nested more than 200 levels"),
        ({"text": "x" * 1_000_001}, "more than the store's 1,000,000"),
        ({"text": "t", "importance": float("nan")}, "not JSON"),
    ]:
        with pytest.raises(ValueError, match=why):
            s.put(NS, "k", value)
    assert s.search(NS) == [] and s.stats()["damaged"] == []
    s.close()


NS_DAMAGE = {
    "namespace path garbage": "UPDATE namespaces SET ns_path='garbage.'",
    "namespace not JSON": "UPDATE namespaces SET ns='not json'",
    "namespace of numbers": "UPDATE namespaces SET ns='[1, 2]'",
    "namespace written otherwise": "UPDATE namespaces SET ns='[\"memories\",\"u\"]'",  # (lookups are by text)
    "namespace version text": "UPDATE namespaces SET version='x', file=7, file_version='y'",
}


@pytest.mark.unit
@pytest.mark.parametrize("kind", NS_DAMAGE)
def test_a_damaged_namespace_row_is_repaired_from_the_items(tmp_path, kind):
    keys = make_store(tmp_path)
    tamper(tmp_path, NS_DAMAGE[kind])
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert {i.key for i in s.search(NS)} == set(keys.values())
    assert s.recall(NS, "the fish is called Nemo", k=1)[0].key == keys["the fish is called Nemo"]
    assert s.count(NS) == 3 and s.stats()["damaged"] == []
    (note,) = s.take_notices()
    assert note.startswith(f"{tmp_path / DB_NAME}: repaired the namespaces table from the memories: ")
    assert s.take_notices() == []  # said once
    assert s.remember(NS, "the bird is called Tweety").action == "created"
    s.close()
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s.take_notices() == [] and len(s.search(NS)) == 4
    s.close()


@pytest.mark.unit
def test_rows_whose_namespace_is_not_json_are_skipped(tmp_path):
    keys = make_store(tmp_path)
    tamper(tmp_path, "UPDATE items SET ns='garbage' WHERE key=?", (keys["the cat is called Tom"],))
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert {i.key for i in s.search(NS)} == {keys[f] for f in GOOD}
    assert s.list_namespaces() == [NS]
    (note,) = s.take_notices()
    assert "1 row(s) with the namespace 'garbage' (not a JSON list of labels) skipped" in note
    s.close()


def index_folder_is_a_file(folder):
    import shutil

    shutil.rmtree(folder / INDEX_DIR)
    (folder / INDEX_DIR).write_text("not a folder\n")
    return folder / INDEX_DIR


@pytest.mark.unit
def test_an_index_folder_replaced_by_a_file_keeps_memory_working(tmp_path):
    keys = make_store(tmp_path)
    index = index_folder_is_a_file(tmp_path)
    for _ in range(2):  # the indexes are rebuilt in every process
        s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
        (note,) = s.take_notices()
        assert note.startswith(f"{index} is not a folder: ")
        assert note.endswith("move it away to let smart-agent recreate the folder")
        assert s.recall(NS, "the fish is called Nemo", k=1)[0].key == keys["the fish is called Nemo"]
        assert s.remember(NS, f"the bird is called Tweety {_}").action == "created"
        assert s.stats()["index_bytes"] == 0
        s.close()
    assert index.read_text() == "not a folder\n"
    index.unlink()
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s.take_notices() == [] and s.count(NS) == 5
    s.close()


# -- the same through the agent's recall and the memory commands ---------------------------------
def recall_store(folder, kind: str):
    """A store of FACTS whose cat row has ``kind`` of damage; the run's question is as near the cat as the dog."""
    keys = make_store(folder)
    bad = keys["the cat is called Tom"]
    if kind in ROW_DAMAGE:
        plant(folder, kind, bad)
    elif kind in NS_DAMAGE:
        tamper(folder, NS_DAMAGE[kind])
    else:
        index_folder_is_a_file(folder)
    emb = TableEmbeddings()
    store = FaissMemoryStore(folder, embeddings=emb)
    both = np.add(emb.embed_query("the dog is called Rex"), emb.embed_query("the cat is called Tom"))
    emb.table["What are my pets called?"] = (both / np.linalg.norm(both)).tolist()
    return store, bad


@pytest.mark.graph
@pytest.mark.parametrize(
    "kind", [*ROW_DAMAGE, "namespace path garbage", "namespace not JSON", "index folder is a file"]
)
async def test_agent_run_recalls_the_sound_memories_past_a_damaged_one(scripted_server, workspace, tmp_path, kind):
    store, bad = recall_store(tmp_path / "mem", kind)
    srv = scripted_server(responder=lambda req: text("Rex and friends."))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    background.drain()  # results of earlier tests' writes
    events: list[dict] = []
    context = Context(workspace=str(workspace), model="openai:scripted-model", user_id="u")
    final = await run_graph(graph, "What are my pets called?", context, thread="t", events=events)
    assert final["answer"] == "Rex and friends."
    assert "the dog is called Rex" in srv.requests[0]["messages"][0]["content"]
    (recall,) = [e for e in events if e["event"] == "memory_recall"]
    assert "error" not in recall
    if kind in ROW_DAMAGE:
        assert recall["damaged"] == 1 and bad not in {m["key"] for m in recall["memories"]}
        assert recall["warning"].startswith(f"1 damaged memory row(s) skipped ({bad}: {ROW_DAMAGE[kind][2]}")
        assert "the cat is called Tom" not in srv.requests[0]["messages"][0]["content"]
    else:
        assert "damaged" not in recall and "the cat is called Tom" in srv.requests[0]["messages"][0]["content"]
        assert ("is not a folder" if kind.startswith("index") else "namespace") in recall["warning"]
    (write,) = background.drain()
    assert "error" not in write and write["action"] == "created"
    store.close()


def cli_store(home, *, local_model, facts) -> dict[str, str]:
    """The CLI's store (the local model: ``memory search`` embeds with it) with ``facts``."""
    s = FaissMemoryStore(home / "memory")
    keys = {f: s.remember(NS, f).key for f in facts}
    s.close()
    return keys


PETS = ["the cat is called Tom", "the dog is called Rex", "the fish is called Nemo", "the bird is called Tweety",
        "the horse is called Ed"]
COMMANDS = {
    "list": ["memory", "list", "--user", "u", "--json"],
    "search": ["memory", "search", "what are my pets called", "--user", "u", "--k", "5", "--json"],
    "export": ["memory", "export", "-", "--user", "u"],
    "stats": ["memory", "stats", "--user", "u", "--json"],
}


def cli_keys(command: str, stdout: str) -> set[str]:
    if command == "list":
        return {m["id"] for m in json.loads(stdout)["memories"]}
    if command == "search":
        return {r["key"] for r in json.loads(stdout)["results"]}
    return {json.loads(line)["key"] for line in stdout.splitlines()}


def check_cli(env, keys: dict[str, str], damaged: dict[str, str], listed_anyway=frozenset()) -> None:
    """Every command exits 0, prints the sound memories and names each damaged one on one stderr line."""
    sound = {k for k in keys.values() if k not in damaged}
    for command, args in COMMANDS.items():
        out = run_cli(args, env=env)
        assert out.returncode == 0, (command, out.stderr)
        assert "Traceback" not in out.stderr
        if command == "stats":
            stats = json.loads(out.stdout)
            assert stats["items"] == len(keys)
            assert {d["key"]: d["reason"][: len(damaged[d["key"]])] for d in stats["damaged"]} == damaged
            continue
        found = cli_keys(command, out.stdout)
        assert found & set(damaged) <= set(listed_anyway), command
        assert found >= (sound if command != "search" else set()) and found, command
        skipped = {k: r for k, r in damaged.items() if k not in found}
        lines = [ln for ln in out.stderr.splitlines() if "damaged memory" in ln]
        assert len(lines) == len(skipped), (command, out.stderr)
        for key, reason in skipped.items():
            (line,) = [ln for ln in lines if f" {key}: " in ln]
            assert line.startswith(f"smart-agent: warning: skipped damaged memory {key}: {reason}"), line
            assert line.endswith(f"('smart-agent memory forget {key}' deletes it)")


@pytest.mark.e2e
@pytest.mark.parametrize("kind", REVIEWED)
def test_memory_commands_skip_a_damaged_row_and_name_it(isolated_home, local_model, kind):
    keys = cli_store(isolated_home, local_model=local_model, facts=PETS)
    bad = keys["the horse is called Ed"]
    plant(isolated_home / "memory", kind, bad)
    check_cli(cli_env(), keys, {bad: ROW_DAMAGE[kind][2]})


@pytest.mark.e2e
def test_memory_commands_skip_every_other_kind_of_damaged_row(isolated_home, local_model):
    kinds = [k for k in ROW_DAMAGE if k not in REVIEWED]
    facts = [f"pet number {i} is called Max {i}" for i in range(len(kinds) + 4)]
    keys = cli_store(isolated_home, local_model=local_model, facts=facts)
    folder = isolated_home / "memory"
    damaged = {}
    for kind, fact in zip(kinds, facts, strict=False):
        plant(folder, kind, keys[fact])
        damaged[keys[fact]] = ROW_DAMAGE[kind][2]
    # a vector of the wrong size: listed and exported (its value is sound), never searched
    wrong_dim = keys[facts[-1]]
    tamper(folder, "UPDATE items SET vector=? WHERE key=?", (np.ones(100, dtype="<f4").tobytes(), wrong_dim))
    drop_index_cache(folder)
    damaged[wrong_dim] = "vector has 400 bytes, expected 1536"
    # a NULL text (not indexed again, not damaged): listed, exported and recalled as before
    tamper(folder, "UPDATE items SET text=NULL WHERE key=?", (keys[facts[-2]],))
    check_cli(cli_env(), keys, damaged, listed_anyway={wrong_dim})


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["namespace path garbage", "namespace not JSON", "index folder is a file"])
def test_memory_commands_survive_a_damaged_namespace_row_or_index_folder(isolated_home, local_model, kind):
    keys = cli_store(isolated_home, local_model=local_model, facts=PETS)
    folder = isolated_home / "memory"
    if kind in NS_DAMAGE:
        tamper(folder, NS_DAMAGE[kind])
    else:
        index = index_folder_is_a_file(folder)
    env = cli_env()
    for command, args in COMMANDS.items():
        out = run_cli(args, env=env)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (command, out.stderr)
        if command == "stats":
            assert json.loads(out.stdout)["items"] == 5
        else:
            assert cli_keys(command, out.stdout) == set(keys.values()) or command == "search"
            assert cli_keys(command, out.stdout)
        warnings = [ln for ln in out.stderr.splitlines() if ln.startswith("smart-agent: warning: ")]
        if kind in NS_DAMAGE:  # repaired by the first command, which says so
            if command == "list":
                (line,) = warnings
                assert line.startswith(
                    f"smart-agent: warning: {folder / DB_NAME}: repaired the namespaces table from the memories: "
                )
            else:
                assert warnings == [], (command, out.stderr)
        else:  # every command says so
            assert warnings == [
                f"smart-agent: warning: {index} is not a folder: the FAISS indexes are rebuilt from SQLite in memory "
                "and not saved; move it away to let smart-agent recreate the folder"
            ], (command, out.stderr)
    if kind not in NS_DAMAGE:
        assert index.read_text() == "not a folder\n"


@pytest.mark.unit
def test_listing_pages_past_damaged_rows(tmp_path):
    """Listing reads pages of 500 (``backend.list_memories``): damaged rows in a page neither end
    the listing early nor shift the next page."""
    import asyncio

    from langgraph.store.base import PutOp

    from smart_agent.memory.backend import list_memories

    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    s.batch([PutOp(NS, f"m{i:04d}", {"text": f"memory number {i}"}) for i in range(1200)])
    s.close()
    bad = ["m1199", "m1000", "m0700", "m0300"]
    tamper(tmp_path, "UPDATE items SET created_at='yesterday' WHERE key=?", (bad[0],))
    tamper(tmp_path, "UPDATE items SET value='[1]' WHERE key=?", (bad[1],))
    tamper(tmp_path, "UPDATE items SET value=json_set(value, '$.importance', 'high') WHERE key=?", (bad[2],))
    tamper(tmp_path, "UPDATE items SET vector=X'00' WHERE key=?", (bad[3],))  # listed: its value is sound
    drop_index_cache(tmp_path)
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    s.recall(NS, "memory number 3", k=1)  # the rebuild records the bad vector
    items, total = asyncio.run(list_memories(s, NS))
    keys = [i.key for i in items]
    assert total == 1197 and len(set(keys)) == 1197 and not set(bad[:3]) & set(keys) and bad[3] in keys
    assert sorted(d["key"] for d in s.damaged(NS)) == sorted(bad)
    s.close()


@pytest.mark.e2e
def test_a_memory_folder_replaced_by_a_file_is_refused_in_one_line(isolated_home):
    folder = isolated_home / "memory"
    isolated_home.mkdir(parents=True)
    folder.write_text("not a folder\n")
    out = run_cli(["memory", "list", "--user", "u"], env=cli_env())
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        f"smart-agent: {folder} cannot hold the memory database (not a folder); move it away or point "
        "SMART_AGENT_HOME elsewhere"
    ]
    assert folder.read_text() == "not a folder\n"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("key_sql", "shown", "reason"),
    [("X'00FF'", "b'\\x00\\xff'", "key is bytes, not text"),
     ("CAST(X'6B80' AS TEXT)", "k\\udc80", "key is not valid UTF-8 text")],
    ids=["bytes", "not UTF-8"],
)
def test_a_row_whose_key_is_not_text_is_skipped_and_named_printably(tmp_path, key_sql, shown, reason):
    keys = make_store(tmp_path)
    tamper(tmp_path, f"UPDATE items SET key={key_sql} WHERE key=?", (keys["the cat is called Tom"],))
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    good = {keys[f] for f in GOOD}
    assert [(d["key"], d["reason"]) for d in s.stats()["damaged"]] == [(shown, reason)]
    assert {i.key for i in s.search(NS)} == good
    assert {h.key for h in s.recall(NS, "the cat is called Tom", k=5, min_similarity=-1.0)} == good
    assert [(d["key"], d["reason"]) for d in s.damaged(NS)] == [(shown, reason)]
    json.dumps(s.damaged(NS), ensure_ascii=False).encode("utf-8")  # printable
    s.close()
