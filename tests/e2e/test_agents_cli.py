"""`--agents FILE` and `smart-agent agents` in separate processes, against the scripted server:
a transfer gives the next request the other agent's prompt and tools, the file is recorded for
`resume`, a named sub-agent's answer alone reaches its caller (its lines tagged in the output),
and bad files are one line naming the problem, exit 2, before any model call."""

import json

import pytest
from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call

TEAM = """\
default: triage
agents:
  triage:
    description: Routes each question to the right specialist.
    prompt: You are the triage agent.
    tools: []
    handoffs: [math]
    sub_agents: [checker]
  math:
    description: Does arithmetic.
    prompt: You are the math agent.
    tools: [calculator]
  checker:
    description: Checks a sum and answers yes or no.
    prompt: You are the checker.
    tools: [calculator]
"""


@pytest.fixture
def team_file(tmp_path):
    path = tmp_path / "team.yaml"
    path.write_text(TEAM)
    return path


def offered(req):
    return [t["function"]["name"] for t in req.get("tools") or []]


def system(req):
    return req["messages"][0]["content"]


def test_run_transfers_and_the_next_request_carries_the_other_agent(scripted_server, workspace, team_file):
    srv = scripted_server([
        tool_call("transfer_to_math", {"reason": "sums"}), tool_call("calculator", {"expression": "6*7"}), text("42"),
    ])
    res = run_cli(["run", "what is 6*7?", "--agents", str(team_file), "--workspace", str(workspace), "--json"],
                  env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["answer"] == "42"
    first, second, third = srv.requests
    assert system(first).startswith("You are the triage agent.") and offered(first) == ["checker", "transfer_to_math"]
    assert system(second).startswith("You are the math agent.") and offered(second) == ["calculator"]
    assert system(third).startswith("You are the math agent.") and third["messages"][-1]["content"] == "42"


def test_resume_runs_the_recorded_team(scripted_server, workspace, team_file):
    srv = scripted_server([tool_call("transfer_to_math", {}), tool_call("calculator", {"expression": "2+3"}),
                           text("5")])
    args = ["run", "2+3?", "--agents", str(team_file), "--workspace", str(workspace), "--thread", "team-1",
            "--approve", "calculator"]
    res = run_cli(args, env=cli_env(srv))
    assert res.returncode == 3, res.stderr
    assert len(srv.requests) == 2
    resumed = run_cli(["resume", "--thread", "team-1", "--approve"], env=cli_env(srv))  # no --agents: recorded
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip().splitlines()[-1] == "5"
    after = srv.requests[2]
    assert system(after).startswith("You are the math agent.") and after["messages"][-1]["content"] == "5"


def test_named_sub_agent_answer_alone_returns_and_its_lines_are_tagged(scripted_server, workspace, team_file):
    def respond(req):
        last = req["messages"][-1]
        if system(req).startswith("You are the checker."):
            return text("yes") if last["role"] == "tool" else tool_call("calculator", {"expression": "2+2"})
        return text(f"checked: {last['content']}") if last["role"] == "tool" else tool_call(
            "checker", {"task": "Is 2+2 equal to 4?"})

    srv = scripted_server(responder=respond)
    res = run_cli(["run", "check 2+2=4", "--agents", str(team_file), "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert "checked: yes" in res.stdout
    root, child, _child_after, root_after = srv.requests
    assert system(child).startswith("You are the checker.") and offered(child) == ["calculator"]
    assert [m["content"] for m in root_after["messages"] if m["role"] == "tool"] == ["yes"]
    assert len(root_after["messages"]) == len(root["messages"]) + 2
    tagged = [line for line in res.stdout.splitlines() if line.strip().startswith("[checker-")]
    assert any("→ calculator(expression=2+2)" in line for line in tagged), res.stdout


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("tools: [calculator]\n  checker", "tools: [calculater]\n  checker",
         "agent 'math': tools: unknown tool 'calculater'"),
        ("handoffs: [math]", "handoffs: [mathematics]", "agent 'triage': handoffs: unknown agent 'mathematics'"),
        ("prompt: You are the checker.\n", "prompt: You are the checker.\n    sub_agents: [triage]\n",
         "sub_agents: a cycle (triage -> checker -> triage)"),
        ("handoffs: [math]", "handoffs: [math", "not valid YAML"),
    ],
)
def test_bad_files_are_one_line_exit_2(scripted_server, workspace, tmp_path, old, new, expected):
    bad = tmp_path / "bad.yaml"
    assert old in TEAM
    bad.write_text(TEAM.replace(old, new, 1))
    srv = scripted_server([text("never")])
    for args in (["run", "hi", "--agents", str(bad), "--workspace", str(workspace)], ["agents", "validate", str(bad)],
                 ["graph", "agent", "--agents", str(bad)]):
        res = run_cli(args, env=cli_env(srv))
        assert res.returncode == 2, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and str(bad) in lines[0] and expected in lines[0], (args, lines)
    assert srv.requests == []


def test_tools_flag_with_an_agents_file_is_one_line_exit_2(scripted_server, workspace, team_file):
    srv = scripted_server([text("never")])
    res = run_cli(["run", "hi", "--agents", str(team_file), "--tools", "web_search", "--workspace", str(workspace)],
                  env=cli_env(srv))
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--tools" in lines[0] and "the tools the file lists" in lines[0], lines
    assert srv.requests == []


def test_a_sub_agent_chain_deeper_than_the_limit_is_one_line_exit_2(scripted_server, workspace, tmp_path):
    deep = tmp_path / "deep.yaml"  # triage -> checker -> math: two levels of sub-agents
    checker = "prompt: You are the checker.\n"
    deep.write_text(TEAM.replace(checker, checker + "    sub_agents: [math]\n"))
    srv = scripted_server([text("never")])
    env = cli_env(srv, SMART_AGENT_MAX_AGENT_DEPTH="1")
    run = ["run", "hi", "--agents", str(deep), "--workspace", str(workspace)]
    for args in (run, ["agents", "validate", str(deep)]):
        res = run_cli(args, env=env)
        assert res.returncode == 2, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "triage -> checker -> math is deeper than max_agent_depth 1" in lines[0], lines
    assert run_cli(["agents", "validate", str(deep)], env=cli_env()).returncode == 0  # within the default limit (3)
    assert srv.requests == []


def test_agents_validate_list_and_graph(team_file):
    env = cli_env()
    res = run_cli(["agents", "validate", str(team_file)], env=env)
    assert res.returncode == 0 and "3 agents (triage, math, checker), default triage" in res.stdout
    res = run_cli(["agents", "list", "--agents", str(team_file), "--json"], env=env)
    rows = json.loads(res.stdout)
    assert [(r["name"], r["default"], r["handoffs"], r["sub_agents"]) for r in rows] == [
        ("triage", True, ["math"], ["checker"]), ("math", False, [], []), ("checker", False, [], [])]
    res = run_cli(["agents", "list"], env=cli_env(SMART_AGENT_AGENTS=str(team_file)))
    assert res.stdout.startswith("triage (default): Routes each question")
    assert run_cli(["agents", "list"], env=env).stdout.startswith("agent (default): the single agent")
    for args in (["graph", "agent"], ["graph", "agent", "--agents", str(team_file)]):
        drawing = run_cli(args, env=env).stdout
        assert "handoff(handoff)" in drawing and "agent -.-> handoff;" in drawing
    res = run_cli(["graph", "planner", "--agents", str(team_file)], env=env)
    assert res.returncode == 2 and "--agents: only the agent graph runs a team" in res.stderr


def test_chat_keeps_the_active_agent_between_turns(scripted_server, workspace, team_file):
    srv = scripted_server([tool_call("transfer_to_math", {}), text("Math here: 42."), text("Still math: 43.")])
    res = run_cli(["chat", "--agents", str(team_file), "--workspace", str(workspace)],
                  env=cli_env(srv), input_text="what is 6*7?\nand plus one?\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["Math here: 42.", "Still math: 43."]
    prompts = [system(r).split(".")[0] for r in srv.requests]
    assert prompts == ["You are the triage agent", "You are the math agent", "You are the math agent"]
    assert srv.requests[2]["messages"][-1]["content"] == "and plus one?"


def test_an_agents_files_own_mcp_servers_are_opened_for_the_run(scripted_server, workspace, tmp_path):
    from mcp_support import pid_of, stdio_server

    from smart_agent.testing.scripted_server import last_tool_message

    team = {"default": "triage", "mcp_servers": {"math": stdio_server(tmp_path)}, "agents": {
        "triage": {"description": "Routes.", "prompt": "You are the triage agent.", "handoffs": ["math"]},
        "math": {"description": "Adds.", "prompt": "You are the math agent.", "tools": ["math__add"]},
    }}
    path = tmp_path / "team.json"
    path.write_text(json.dumps(team))
    srv = scripted_server([tool_call("transfer_to_math", {}), tool_call("math__add", {"a": 4, "b": 5}),
                           lambda req: text(f"sum: {last_tool_message(req)}")])
    res = run_cli(["run", "4+5", "--agents", str(path), "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "sum: 9"
    assert offered(srv.requests[1]) == ["math__add"] and pid_of(tmp_path) > 0
    team["mcp_servers"]["math"]["url"] = "http://127.0.0.1:1/mcp"  # both command and url
    path.write_text(json.dumps(team))
    res = run_cli(["agents", "validate", str(path)], env=cli_env())
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0
    assert f"{path}: mcp_servers.math: give exactly one of" in res.stderr
