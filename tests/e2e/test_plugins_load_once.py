"""A folder plugin loads once per process: `langgraph dev` serving every graph loads it
not while it imports and builds the graphs, once when a run first lists the tools, never
again after; a CLI run loads it once for its --tools check and its graph together."""

from __future__ import annotations

from pathlib import Path

from conftest import cli_env, run_cli
from plugin_support import loads

from smart_agent.testing.scripted_server import text


async def test_served_graphs_load_a_plugin_once(counting_plugin: Path, dev_server) -> None:
    """``counting_plugin`` comes first: the server starts with SMART_AGENT_PLUGINS set."""
    from langgraph_sdk import get_client

    url, srv = dev_server
    client = get_client(url=url)
    graphs = {a["graph_id"] for a in await client.assistants.search(limit=50)}
    assert {"agent", "planner", "dual", "fleet"} <= graphs
    assert loads(counting_plugin) == 0, "serving (importing and building) the graphs ran the plugin"

    srv.reset([text("first"), text("second")])
    for task in ("one", "two"):
        thread = await client.threads.create()
        result = await client.runs.wait(
            thread["thread_id"], "agent", input={"task": task}, context={"model": "openai:scripted-model"}
        )
        assert isinstance(result, dict) and result.get("answer") in ("first", "second"), result
    assert "counted" in srv.offered_tools(0) and "counted" in srv.offered_tools(1)
    assert loads(counting_plugin) == 1


def test_a_cli_run_loads_a_plugin_once(counting_plugin: Path, scripted_server) -> None:
    srv = scripted_server([text("done")])
    res = run_cli(["run", "--tools", "counted,calculator", "hi"], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert srv.offered_tools(0) == ["counted", "calculator"]
    assert loads(counting_plugin) == 1
