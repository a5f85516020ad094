"""``smart-agent memory export FILE.jsonl`` / ``memory import FILE.jsonl`` in separate processes:
one data home's memories moved to another (embeddings recomputed, keys, importance, metadata
and times kept), and a bad line refused with its number before anything is written. Between
backends (FAISS, InMemoryStore, Postgres): tests/graph/test_memory_backends.py."""

from __future__ import annotations

import json

from conftest import cli_env, run_cli

from smart_agent.memory.store import FaissMemoryStore, user_namespace

DAY = 86_400.0
T0 = 1_800_000_000.0


def test_export_then_import_into_another_home(tmp_path, isolated_home, local_model):
    now = [T0 - 3 * DAY]
    store = FaissMemoryStore(isolated_home / "memory", clock=lambda: now[0])  # local model, like the CLI
    tea = store.remember(user_namespace("ada"), "Ada drinks green tea.", importance=0.9, metadata={"source": "run"})
    now[0] = T0
    engine = store.remember(user_namespace("ada"), "Ada works on the analytical engine.", importance=0.3)
    store.remember(user_namespace("bob"), "Bob likes jazz.")
    store.close()

    exported = tmp_path / "ada.jsonl"
    res = run_cli(["memory", "export", str(exported), "--user", "ada"], env=cli_env())
    assert res.returncode == 0, res.stderr
    assert "Exported 2 memories of user 'ada'" in res.stderr
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [r["key"] for r in lines] == [tea.key, engine.key]  # oldest first, bob's not included
    assert lines[0]["importance"] == 0.9 and lines[0]["metadata"] == {"source": "run"}
    assert lines[0]["created_at"] == "2027-01-12T08:00:00+00:00" and "vector" not in lines[0]

    other = cli_env(SMART_AGENT_HOME=str(tmp_path / "other-home"))
    res = run_cli(["memory", "import", str(exported), "--user", "ada", "--json"], env=other)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["imported"] == 2
    res = run_cli(["memory", "search", "What does Ada drink?", "--user", "ada", "--json", "--k", "1"], env=other)
    assert json.loads(res.stdout)["results"][0]["key"] == tea.key  # embedded again in the new home
    again = tmp_path / "again.jsonl"
    assert run_cli(["memory", "export", str(again), "--user", "ada"], env=other).returncode == 0
    assert again.read_text() == exported.read_text()


def test_a_bad_line_is_refused_with_its_number_and_nothing_is_imported(tmp_path):
    good = {"key": "k1", "text": "A fact.", "importance": 0.5}
    cases = {
        "not json": "line 3: invalid JSON",
        json.dumps({"key": "k2", "text": "x", "importance": 7}): "line 3: 'importance' must be a number from 0 to 1",
        json.dumps({"key": "k2"}): "line 3: 'text' must be a non-empty string",
        json.dumps({"key": "k2", "text": "x", "created_at": "yesterday"}): "line 3: created_at must be an ISO 8601",
    }
    env = cli_env()
    for bad, message in cases.items():
        path = tmp_path / "in.jsonl"
        path.write_text(json.dumps(good) + "\n\n" + bad + "\n")
        res = run_cli(["memory", "import", str(path)], env=env)
        assert res.returncode == 2, res.stderr
        assert res.stderr.startswith(f"smart-agent: {path}: {message}") and res.stderr.count("\n") == 1, res.stderr
    res = run_cli(["memory", "list", "--json"], env=env)
    assert json.loads(res.stdout)["total"] == 0
    res = run_cli(["memory", "import", str(tmp_path / "missing.jsonl")], env=env)
    assert res.returncode == 2 and res.stderr.startswith("smart-agent: memory import: file ")
    assert res.stderr.rstrip().endswith("missing.jsonl: no such file") and res.stderr.count("\n") == 1
