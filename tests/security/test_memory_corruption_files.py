"""Attack: a memory folder whose database is not ours (0 bytes, a text file,
someone else's SQLite database) must be refused with one clear line and left
byte-for-byte as it was -- never reset or extended -- and an agent run with
memory on still answers; a damaged FAISS index file is rebuilt from SQLite."""

from __future__ import annotations

import json
import sqlite3
import threading

import faiss
import pytest
from conftest import cli_env, openai_model, run_cli, run_graph
from langgraph.checkpoint.memory import InMemorySaver
from memory_fakes import TableEmbeddings

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory.integrity import APPLICATION_ID, MemoryUnavailable
from smart_agent.memory.rows import SCHEMA
from smart_agent.memory.store import (
    DB_NAME,
    INDEX_DIR,
    FaissMemoryStore,
    user_namespace,
)
from smart_agent.testing.scripted_server import text

TAIL = "; move it away or point SMART_AGENT_HOME elsewhere"


def foreign_sqlite(path) -> None:
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE contacts (name TEXT, phone TEXT); INSERT INTO contacts VALUES ('Ann', '555-0100');")
    con.close()


def lookalike_sqlite(path) -> None:
    """Our table names, another application's columns."""
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE meta (k, v); CREATE TABLE namespaces (n); CREATE TABLE items (id, payload);")
    con.close()


def other_app_id(path) -> None:
    con = sqlite3.connect(path)
    con.executescript(SCHEMA + "PRAGMA application_id = 1234;")
    con.close()


PLANTED = {
    "empty file": lambda p: p.write_bytes(b""),
    "text file": lambda p: p.write_text("my notes, not a database\n"),
    "foreign sqlite": foreign_sqlite,
    "lookalike sqlite": lookalike_sqlite,
    "other application id": other_app_id,
}


def plant(folder, kind):
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / DB_NAME
    PLANTED[kind](db)
    return db, db.read_bytes()


@pytest.mark.unit
@pytest.mark.parametrize("kind", PLANTED)
def test_a_file_that_is_not_a_memory_database_is_refused_untouched(tmp_path, kind):
    db, before = plant(tmp_path / "mem", kind)
    with pytest.raises(MemoryUnavailable) as err:
        FaissMemoryStore(tmp_path / "mem", embeddings=TableEmbeddings())
    msg = str(err.value)
    assert msg.startswith(f"{db} is not a smart-agent memory database (") and msg.endswith(TAIL)
    assert "\n" not in msg
    assert db.read_bytes() == before
    assert sorted(p.name for p in db.parent.iterdir() if p.name != INDEX_DIR) == [DB_NAME]


@pytest.mark.unit
def test_a_database_of_a_newer_format_is_refused(tmp_path):
    FaissMemoryStore(tmp_path, embeddings=TableEmbeddings()).close()
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("PRAGMA user_version = 99")
    con.close()
    with pytest.raises(MemoryUnavailable, match=r"memory database of a newer smart-agent \(format 99"):
        FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())


@pytest.mark.unit
def test_a_database_of_the_previous_code_without_marker_still_opens(tmp_path):
    """Databases made before the marker have exactly our tables: they are kept and marked."""
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("PRAGMA journal_mode = WAL")
    con.executescript(SCHEMA)
    con.close()
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    s.remember(("memories", "u"), "kept")
    s.close()
    con = sqlite3.connect(tmp_path / DB_NAME)
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    con.close()
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s.recall(("memories", "u"), "kept")[0].text == "kept"
    s.close()


@pytest.mark.unit
def test_stores_created_at_once_in_a_new_folder_all_open(tmp_path):
    """A new database appears complete (never as a 0-byte file another opener would refuse)."""
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def open_one():
        barrier.wait()
        try:
            FaissMemoryStore(tmp_path / "mem", embeddings=TableEmbeddings()).close()
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not [p for p in (tmp_path / "mem").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.graph
@pytest.mark.parametrize("kind", ["empty file", "text file", "foreign sqlite"])
async def test_agent_run_answers_with_memory_off_and_an_error_event(scripted_server, workspace, isolated_home, kind):
    db, before = plant(isolated_home / "memory", kind)
    srv = scripted_server(responder=lambda req: text("Hello without memory."))
    graph = build_agent_graph(
        model=openai_model(srv), checkpointer=InMemorySaver()
    )  # default store under SMART_AGENT_HOME
    events: list[dict] = []
    final = await run_graph(
        graph, "Remember that I like tea", Context(workspace=str(workspace), model="openai:scripted-model"),
        thread="t", events=events,
    )
    assert final["answer"] == "Hello without memory."
    assert "Long-term memory" not in srv.requests[0]["messages"][0]["content"]
    memory_events = [e for e in events if e["event"] in ("memory_recall", "memory_write")]
    assert [e["event"] for e in memory_events] == ["memory_recall", "memory_write"]
    for e in memory_events:
        assert e["memory"] == "off"
        assert e["error"].startswith(f"{db} is not a smart-agent memory database (") and e["error"].endswith(TAIL)
    assert db.read_bytes() == before


@pytest.mark.e2e
@pytest.mark.parametrize("command", [["list"], ["stats"], ["forget", "abc"], ["search", "tea"]])
def test_memory_cli_refuses_with_one_line_and_exit_2(isolated_home, command):
    db, before = plant(isolated_home / "memory", "text file")
    out = run_cli(["memory", *command], env=cli_env())
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f"smart-agent: {db} is not a smart-agent memory database (not an SQLite file){TAIL}"
    ]
    assert out.stdout == ""
    assert db.read_bytes() == before


@pytest.mark.unit
@pytest.mark.parametrize("keep", [0.5, 0.0], ids=["truncated", "emptied"])
def test_a_truncated_faiss_index_is_rebuilt_from_sqlite(tmp_path, keep):
    ns = user_namespace("u")
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    for i in range(5):
        s.remember(ns, f"fact number {i}")
    s.close()
    (index_file,) = (tmp_path / INDEX_DIR).glob("*.faiss")
    data = index_file.read_bytes()
    index_file.write_bytes(data[: int(len(data) * keep)])
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    assert s.recall(ns, "fact number 3", k=1)[0].text == "fact number 3"
    assert s.remember(ns, "fact number 5").action == "created"
    s.close()
    (rewritten,) = (tmp_path / INDEX_DIR).glob("*.faiss")
    assert faiss.read_index(str(rewritten)).ntotal == 6


@pytest.mark.unit
def test_no_pickle_in_any_memory_module():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "memory"
    sources = {p.name: p.read_text() for p in folder.glob("*.py")}
    assert "integrity.py" in sources and "store.py" in sources
    for name, src in sources.items():
        assert "import pickle" not in src and "pickle.load" not in src and "load_local" not in src, name


@pytest.mark.e2e
def test_cli_run_answers_and_says_memory_is_off(scripted_server, isolated_home):
    db, before = plant(isolated_home / "memory", "foreign sqlite")
    srv = scripted_server(responder=lambda req: text("Answered anyway."))
    out = run_cli(["run", "hello", "--json"], env=cli_env(srv, SMART_AGENT_MEMORY="true"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["answer"] == "Answered anyway."
    off = [ln.strip() for ln in out.stderr.splitlines() if "memory off" in ln]
    assert off and all(ln.startswith(f"◇ memory off: {db} is not a smart-agent memory database (") for ln in off)
    assert db.read_bytes() == before
