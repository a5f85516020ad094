"""Cold start: a whole ``smart-agent run`` (memory off) imports no heavy library that only a
tool or a feature needs (the HTML parsers, the regex engine, torch, FAISS, NumPy, the search
client, MCP, Postgres); each loads when first used. Nor does it build the graphs ``langgraph dev``
serves (each graph module builds its ``graph`` on first access) or import the modules of the
other commands. Checked in a fresh interpreter, where nothing is imported yet.
``benchmarks/cold_start.py`` measures the time."""

from __future__ import annotations

import subprocess
import sys

from conftest import cli_env

from smart_agent.testing.scripted_server import text

HEAVY = (
    "bs4", "lxml", "regex", "torch", "sentence_transformers", "transformers", "faiss", "numpy", "tokenizers",
    "safetensors", "ddgs", "primp", "mcp", "langchain_mcp_adapters", "psycopg", "psycopg_pool", "langchain_community",
)  # fmt: skip

GRAPH_MODULES = ("agent", "planner", "dual", "fleet")
OTHER_COMMANDS = ("doctor", "eval", "eval_run", "resume", "threads")  # cli/ modules only their commands use

RUN = f"""
import sys
from smart_agent.cli import main

code = main(["run", "Say hello.", "--json"])
print(code, sorted(m for m in {HEAVY!r} if m in sys.modules))
graphs = [sys.modules.get("smart_agent.graphs." + g) for g in {GRAPH_MODULES!r}]
print("served graphs built:", [g.__name__ for g in graphs if g is not None and "graph" in vars(g)])
print("other commands:", [c for c in {OTHER_COMMANDS!r} if "smart_agent.cli." + c in sys.modules])
print("agent graph module:", "smart_agent.graphs.agent" in sys.modules)
"""


def test_a_run_imports_no_heavy_library_it_does_not_use(scripted_server, tmp_path):
    srv = scripted_server([text("Hello.")])
    env = cli_env(srv, SMART_AGENT_HOME=tmp_path / "home")  # SMART_AGENT_MEMORY=false
    res = subprocess.run([sys.executable, "-c", RUN], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.strip().splitlines()
    assert lines[-4] == "0 []"
    assert lines[-3] == "served graphs built: []"
    assert lines[-2] == "other commands: []"
    assert lines[-1] == "agent graph module: True"  # the run did build its graph from that module
    assert len(srv.requests) == 1  # the run reached the model


def test_a_served_graph_is_built_on_first_access(tmp_path):
    """``from smart_agent.graphs.agent import graph`` (notebooks) and the factories of
    ``graphs/served.py`` (langgraph.json) get the compiled graph, built once and kept in the module."""
    code = """
import smart_agent.graphs.agent as m
before = "graph" in vars(m)
from smart_agent.graphs.agent import graph
from smart_agent.graphs.served import served_graph_of
from langgraph.graph.state import CompiledStateGraph
print(before, isinstance(graph, CompiledStateGraph), graph is m.graph is served_graph_of("agent"), "graph" in vars(m))
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == ["False", "True", "True", "True"]
