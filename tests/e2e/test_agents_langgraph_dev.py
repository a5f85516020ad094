"""`langgraph dev` serving the agent graph: its drawing includes `handoff`, and with
SMART_AGENT_AGENTS naming a two-agent file a run through langgraph_sdk transfers from one agent
to the other (the second agent's system prompt reaches the model). A bad file stops the served
module from loading with the one line naming it."""

import subprocess
import sys

import pytest
from conftest import TRIAGE_MATH_TEAM, cli_env

from smart_agent.testing.scripted_server import text, tool_call

TEAM = TRIAGE_MATH_TEAM


@pytest.fixture
def dev_server_env(tmp_path):
    path = tmp_path / "team.yaml"
    path.write_text(TEAM)
    return {"SMART_AGENT_AGENTS": str(path)}


async def test_served_agent_graph_runs_the_team_and_draws_handoff(dev_server):
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset([tool_call("transfer_to_math", {"reason": "arithmetic"}), tool_call("calculator", {"expression": "6*7"}),
               lambda req: text(f"It is {req['messages'][-1]['content']}.")])
    client = get_client(url=url)
    assistant = (await client.assistants.search(graph_id="agent"))[0]
    drawing = await client.assistants.get_graph(assistant["assistant_id"])
    node_ids = {n["id"] for n in drawing["nodes"]}
    assert "handoff" in node_ids
    assert {("agent", "handoff"), ("handoff", "agent")} <= {(e["source"], e["target"]) for e in drawing["edges"]}

    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "agent", input={"task": "What is 6*7?"}, context={"model": "openai:scripted-model"}
    )
    assert result["answer"] == "It is 42."
    first, second, _third = srv.requests
    assert first["messages"][0]["content"].startswith("You are the triage agent.")
    assert second["messages"][0]["content"].startswith("You are the math agent.")
    assert [t["function"]["name"] for t in second["tools"]] == ["calculator"]
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["active_agent"] == "math"


def test_a_bad_served_file_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(TEAM.replace("handoffs: [math]", "handoffs: [nobody]"))
    # (the served graph is built on its first use: when the server reads it)
    build = "from smart_agent.graphs.served import served_graph_of; served_graph_of('agent')"
    res = subprocess.run([sys.executable, "-c", build], capture_output=True, text=True,
                         env=cli_env(SMART_AGENT_AGENTS=str(bad)), timeout=120)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("smart_agent.tools.agents_file.AgentsFileError: ") and str(bad) in last
    assert "agent 'triage': handoffs: unknown agent 'nobody'" in last
