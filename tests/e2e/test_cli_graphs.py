"""`smart-agent run/chat --graph ...` and `--reasoning two-phase`, in separate processes
against a scripted OpenAI-compatible server."""

import json

from conftest import cli_env, offered, run_cli

from smart_agent.nodes.dual import DECIDE
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM
from smart_agent.nodes.reasoning import REASONING
from smart_agent.testing.scripted_server import text, tool_call


def test_run_planner_graph(scripted_server, workspace):
    plan = {"steps": [{"id": "a", "tool": "calculator", "args": {"expression": "37*43"}},
                      {"id": "b", "tool": "write_file", "args": {"path": "r.txt", "content": "result ${a}"}}]}
    srv = scripted_server(
        [
            tool_call("submit_plan", plan),
            lambda req: text("Synthesized from trace: " + ("1591" if "1591" in json.dumps(req["messages"]) else "?")),
        ]
    )
    res = run_cli(
        ["run", "--graph", "planner", "Compute 37*43 and save it", "--json", "--workspace", str(workspace)],
        env=cli_env(srv),
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["answer"] == "Synthesized from trace: 1591"
    assert (workspace / "r.txt").read_text() == "result 1591"
    assert len(srv.requests) == 2  # one planning call, one synthesis call


def test_run_dual_graph_and_chat_keeps_the_thread(scripted_server, workspace):
    srv = scripted_server(
        [
            tool_call(DECIDE, {"action": "brainstorm", "thought": "A greeting needs no tools."}),
            tool_call(DECIDE, {"action": "final", "answer": "Hello, Ada."}),
            lambda req: tool_call(
                DECIDE,
                {
                    "action": "final",
                    "answer": "You are Ada."
                    if "User: I am Ada" in req["messages"][-1]["content"]
                    else "I do not know.",
                },
            ),
        ]
    )
    res = run_cli(
        ["chat", "--graph", "dual", "--thread", "d1", "--workspace", str(workspace)],
        env=cli_env(srv),
        input_text="I am Ada\nWho am I?\n",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["Hello, Ada.", "You are Ada."]
    assert all(offered(r) == [DECIDE] for r in srv.requests)

    srv.reset([tool_call(DECIDE, {"action": "final", "answer": "Runner mode works."})])
    res = run_cli(["run", "--graph", "dual", "Say something", "--json"], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["answer"] == "Runner mode works."


def test_reasoning_two_phase_flag(scripted_server, workspace):
    srv = scripted_server([
        tool_call(REASONING, {"situation": "Need arithmetic.", "plan": ["calculator: 37*43"], "done": False}),
        tool_call("calculator", {"expression": "37*43"}),
        tool_call(REASONING, {"situation": "Have 1591.", "plan": [], "done": True}),
        text("1591"),
    ])
    res = run_cli(
        ["run", "What is 37*43?", "--reasoning", "two-phase", "--json", "--workspace", str(workspace)], env=cli_env(srv)
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["answer"] == "1591"
    assert [offered(r) for r in srv.requests] == [[REASONING], ["calculator"], [REASONING], []]
    assert "✎ reasoning: Need arithmetic. · plan: calculator: 37*43 · tools: calculator" in res.stderr


def test_run_fleet_graph(scripted_server, workspace):
    def model(req):
        names = offered(req)
        last = req["messages"][-1]["content"] if req["messages"] else ""
        if req["messages"][0]["content"] == AGGREGATE_SYSTEM:
            return text("aggregated: " + ",".join(w for w in ("one", "two") if f"Result: {w}" in last))
        if "submit_subtasks" in names:
            return tool_call(
                "submit_subtasks", {"subtasks": [{"id": "x", "task": "say one"}, {"id": "y", "task": "say two"}]}
            )
        if "say one" in last:
            return text("one")
        if "say two" in last:
            return text("two")
        return text("unexpected request")

    srv = scripted_server(responder=model)
    res = run_cli(
        ["run", "--graph", "fleet", "Say one and two", "--json", "--workspace", str(workspace)], env=cli_env(srv)
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["answer"] == "aggregated: one,two"
