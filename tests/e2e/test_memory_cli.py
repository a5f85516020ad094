"""Memory in separate processes: CLI start-up imports no heavy module, the local model runs
without torch, and the ``smart-agent memory`` CLI."""

from __future__ import annotations

import json

from conftest import cli_env, run_cli

from smart_agent.memory.store import FaissMemoryStore, user_namespace


def test_cli_start_up_imports_no_heavy_modules():
    import subprocess
    import sys

    code = (
        "import sys, smart_agent.cli, smart_agent.graphs.agent, smart_agent.tools.memory_tools, "
        "smart_agent.nodes.memory;"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'faiss', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_memory_with_the_local_model_imports_no_torch(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys, time; t = time.time()\n"
        "from smart_agent.memory.store import FaissMemoryStore\n"
        f"s = FaissMemoryStore({str(tmp_path)!r})\n"
        "s.remember(('m',), 'The user likes teal.')\n"
        "hits = s.recall(('m',), 'favourite colour?')\n"
        "print(len(hits), sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "SMART_AGENT_EMBEDDING_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1 []"


def test_memory_cli_list_search_forget_stats(isolated_home, local_model):
    store = FaissMemoryStore(isolated_home / "memory")  # local model, like the CLI
    a = store.remember(user_namespace("ada"), "Ada's favourite colour is teal.", importance=0.9)
    store.remember(user_namespace("ada"), "Ada works on the analytical engine.")
    store.remember(user_namespace("bob"), "Bob likes jazz.")
    store.close()
    env = cli_env()

    res = run_cli(["memory", "list", "--user", "ada", "--json"], env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["total"] == 2 and {m["id"] for m in out["memories"]} >= {a.key}

    res = run_cli(["memory", "list", "--user", "ada"], env=env)
    assert a.key in res.stdout and "just now" in res.stdout

    res = run_cli(["memory", "search", "which colour does Ada like", "--user", "ada", "--k", "1", "--json"], env=env)
    assert res.returncode == 0, res.stderr
    results = json.loads(res.stdout)["results"]
    assert len(results) == 1 and results[0]["key"] == a.key and results[0]["score"] > 0

    res = run_cli(["memory", "stats", "--json"], env=env)
    stats = json.loads(res.stdout)
    assert stats["items"] == 3 and stats["user_items"] == 0 and stats["dim"] == 384
    res = run_cli(["memory", "stats", "--user", "bob"], env=env)
    assert "1 for user 'bob', 3 in all" in res.stdout

    res = run_cli(["memory", "forget", a.key, "--user", "bob"], env=env)
    assert res.returncode == 2 and "No memory" in res.stderr  # not bob's: bad input, one line
    res = run_cli(["memory", "forget", a.key, "--user", "ada"], env=env)
    assert res.returncode == 0 and a.key in res.stdout
    res = run_cli(["memory", "list", "--user", "ada", "--json"], env=env)
    assert json.loads(res.stdout)["total"] == 1
