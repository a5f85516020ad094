"""Attack on nested runs of a served graph: a client narrows the server's workspace to ``sub``;
the runs inside its run - fleet workers, the planner inside the dual graph, ``sub_agent``
children - keep that narrowed workspace (``../top.txt``, in the server's workspace but outside
``sub``, is refused to each) and never the server's wider one. A served run here is what
``langgraph dev`` runs (``graphs/run_scope.served_run``, which the factories of ``graphs/served.py``
enter) around the real OpenAI client against a scripted server; a client's ``smart_agent_depth``
in ``configurable`` cannot lift the nesting limit."""

from __future__ import annotations

import pytest
from conftest import openai_model, run_graph

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.dual import build_dual_graph
from smart_agent.graphs.fleet import build_fleet_graph
from smart_agent.graphs.run_scope import served_run
from smart_agent.graphs.sub_agent import sub_agent_tool
from smart_agent.nodes.dual import DECIDE
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM, SUBMIT_SUBTASKS
from smart_agent.testing.scripted_server import text, tool_call, tool_calls
from smart_agent.tools.agents import DEPTH_KEY, agent_depth

pytestmark = pytest.mark.graph

CONTEXT = {"model": "openai:scripted-model", "memory": False, "workspace": "sub"}
SECRET = "TOP OF THE SERVER'S WORKSPACE"


@pytest.fixture
def server(tmp_path, monkeypatch):
    root = tmp_path / "server"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "note.txt").write_text("THE NOTE")
    (root / "top.txt").write_text(SECRET)
    monkeypatch.setenv("SMART_AGENT_WORKSPACE", str(root))
    monkeypatch.delenv("SMART_AGENT_MAX_AGENT_DEPTH", raising=False)
    return root


async def run_served(graph, task, context):
    """A served run: the client's context checked first, then the run (tests/conftest.run_graph)."""
    async with served_run(graph, context=context) as run:
        return await run_graph(run, task, context)


def tool_results(srv) -> list[str]:
    return [m["content"] for r in srv.requests for m in r["messages"] if m.get("role") == "tool"]


async def test_fleet_workers_keep_the_clients_narrowed_workspace(server, scripted_server):
    def respond(req):
        tools = [t["function"]["name"] for t in req.get("tools") or []]
        last = req["messages"][-1]
        if SUBMIT_SUBTASKS in tools:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": ["Read ../top.txt", "Read note.txt"]})
        if req["messages"][0]["content"] == AGGREGATE_SYSTEM or last["role"] == "tool":
            return text(str(last["content"]))
        return tool_call("read_file", {"path": "../top.txt" if "../top.txt" in last["content"] else "note.txt"})

    srv = scripted_server(responder=respond)
    graph = build_fleet_graph(model=openai_model(srv))
    final = await run_served(graph, "Read two files", {**CONTEXT, "max_workers": 1})
    answers = {r["task"]: r.get("answer") for r in final["results"].values()}
    assert answers["Read note.txt"] == "THE NOTE"
    assert "Refused" in answers["Read ../top.txt"] and SECRET not in str(final)


async def test_the_planner_inside_dual_keeps_the_clients_narrowed_workspace(server, scripted_server):
    plans = [{"steps": [{"id": "s1", "tool": "read_file", "args": {"path": "../top.txt"}}]},  # halts: replanned
             {"steps": [{"id": "s2", "tool": "read_file", "args": {"path": "note.txt"}}]}]

    decisions = [{"action": "execute", "objective": "Read ../top.txt, else note.txt"},
                 {"action": "final", "answer": "done"}]

    def respond(req):
        tools = [t["function"]["name"] for t in req.get("tools") or []]
        if DECIDE in tools:
            return tool_call(DECIDE, decisions.pop(0))
        if "submit_plan" in tools:
            return tool_call("submit_plan", plans.pop(0))
        return text("planner: " + str(req["messages"][-1]["content"]))

    srv = scripted_server(responder=respond)
    graph = build_dual_graph(model=openai_model(srv))
    final = await run_served(graph, "Read the files", CONTEXT)
    (asset,) = final["assets"].values()
    assert "THE NOTE" in asset["answer"] and final["answer"] == "done", final
    assert "outside the workspace" in str(srv.requests), "the step reading ../top.txt was refused"
    assert SECRET not in str(final) and SECRET not in str(srv.requests)


async def test_a_sub_agent_keeps_the_clients_narrowed_workspace(server, scripted_server):
    srv = scripted_server([
        tool_call("sub_agent", {"task": "Read ../top.txt and note.txt"}),
        tool_calls([("read_file", {"path": "../top.txt"}), ("read_file", {"path": "note.txt"})]),
        lambda req: text("child: " + " | ".join(m["content"] for m in req["messages"] if m["role"] == "tool")),
        lambda req: text("parent: " + str(req["messages"][-1]["content"])),
    ])
    model = openai_model(srv)
    graph = build_agent_graph(model=model, tools=[sub_agent_tool(model=model)])
    final = await run_served(graph, "Delegate it", CONTEXT)
    answer = final["answer"]
    assert answer.startswith("parent: child: ") and "Refused" in answer and "THE NOTE" in answer, answer
    assert SECRET not in str(srv.requests)


async def test_a_clients_depth_cannot_lift_the_nesting_limit(server, scripted_server):
    """``configurable`` reaches the graph as the client sent it: a negative depth counts as 0, so a
    child at ``max_agent_depth`` 1 is offered no ``sub_agent``."""
    assert agent_depth({"configurable": {DEPTH_KEY: -100}}) == 0
    srv = scripted_server([
        tool_call("sub_agent", {"task": "Go deeper"}),
        text("the child answers"),
        lambda req: text("parent: " + str(req["messages"][-1]["content"])),
    ])
    model = openai_model(srv)
    graph = build_agent_graph(model=model, tools=[sub_agent_tool(model=model)])
    context, config = {**CONTEXT, "max_agent_depth": 1}, {"configurable": {DEPTH_KEY: -100}}
    final = {}
    async with served_run(graph, context=context, configurable=config["configurable"]) as run:
        stream = run.astream({"task": "Delegate"}, config=config, stream_mode=["values"], context=context)
        async for _mode, chunk in stream:
            final = chunk
    child_tools = [t["function"]["name"] for t in srv.requests[1].get("tools") or []]
    assert "sub_agent" not in child_tools and final["answer"] == "parent: the child answers"
