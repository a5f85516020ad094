"""Plugins load on first use, once per process: importing a graph module runs no plugin
code, and every registry of the process (each graph's, the CLI's ``--tools`` check)
shares one load. Each check runs in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from plugin_support import loads


def python(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_every_graph_module_imported_loads_no_plugin(counting_plugin: Path) -> None:
    """Building the served graphs (graphs/served.py, what langgraph.json serves) loads no plugin."""
    python("import smart_agent.graphs.served, smart_agent.graphs.team")
    assert loads(counting_plugin) == 0


AGENT_RUN = """
import asyncio, os
from smart_agent.testing.scripted_server import ScriptedOpenAIServer, text

import smart_agent.graphs.agent, smart_agent.graphs.dual, smart_agent.graphs.fleet, smart_agent.graphs.planner
assert open(os.environ["COUNTER"]).read().count("loaded") == 0 if os.path.exists(os.environ["COUNTER"]) else True

with ScriptedOpenAIServer([text("done"), text("again")]) as srv:
    os.environ.update(OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="test-key")
    ctx = {"model": "openai:scripted-model", "memory": False}

    async def two_runs():
        for _ in range(2):
            final = await smart_agent.graphs.agent.graph.ainvoke({"task": "hi"}, context=ctx)
            assert final["answer"], final

    asyncio.run(two_runs())
    print(",".join(srv.offered_tools(0)))

# the CLI's --tools check and any other registry of the process reuse the same load
from smart_agent.config.context import Context
from smart_agent.tools.builtins import default_registry
from smart_agent.cli.options import check_tool_names

check_tool_names(Context(tools=["counted"]))
assert "counted" in default_registry() and "counted" in default_registry(entry_points=False)
"""


def test_listing_the_agent_graphs_tools_loads_plugins_exactly_once(counting_plugin: Path) -> None:
    offered = python(AGENT_RUN).strip().split(",")
    assert "counted" in offered, offered  # the plugin's tool is in the agent graph's tool list
    assert loads(counting_plugin) == 1


def test_a_registry_loads_its_plugins_when_first_read(counting_plugin: Path) -> None:
    """In-process: a registry is built without running the plugin; the first read loads
    it; later registries (and copies) share that load."""
    from smart_agent.tools.builtins import default_registry
    from smart_agent.tools.context_tools import with_context_tools

    registry = with_context_tools(default_registry())
    copy = registry.copy()
    assert loads(counting_plugin) == 0 and registry.pending
    assert "counted" in registry.names() and "get_tool_response" in registry
    assert loads(counting_plugin) == 1
    assert "counted" in copy and "counted" in default_registry().names()
    assert loads(counting_plugin) == 1
