"""Cold start: a whole ``smart-agent run`` (memory off) imports no heavy library that only a
tool or a feature needs (the HTML parsers, the regex engine, torch, FAISS, NumPy, the search
client, MCP, Postgres); each loads when first used. Checked in a fresh interpreter, where
nothing is imported yet. ``benchmarks/cold_start.py`` measures the time."""

from __future__ import annotations

import subprocess
import sys

from conftest import cli_env

from smart_agent.testing.scripted_server import text

HEAVY = (
    "bs4", "lxml", "regex", "torch", "sentence_transformers", "transformers", "faiss", "numpy", "tokenizers",
    "safetensors", "ddgs", "primp", "mcp", "langchain_mcp_adapters", "psycopg", "psycopg_pool", "langchain_community",
)  # fmt: skip

RUN = f"""
import sys
from smart_agent.cli import main

code = main(["run", "Say hello.", "--json"])
print(code, sorted(m for m in {HEAVY!r} if m in sys.modules))
"""


def test_a_run_imports_no_heavy_library_it_does_not_use(scripted_server, tmp_path):
    srv = scripted_server([text("Hello.")])
    env = cli_env(srv, SMART_AGENT_HOME=tmp_path / "home")  # SMART_AGENT_MEMORY=false
    res = subprocess.run([sys.executable, "-c", RUN], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "0 []"
    assert len(srv.requests) == 1  # the run reached the model
