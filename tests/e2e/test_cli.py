"""The smart-agent CLI in separate processes, against a scripted server on 127.0.0.1."""

import json
import socket
from pathlib import Path

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call


def test_run_json_calls_calculator_and_answers(scripted_server, workspace):
    def model(req):
        tool_results = [m for m in req["messages"] if m["role"] == "tool"]
        if not tool_results:
            return tool_call("calculator", {"expression": "37*43"})
        return text(f"37 * 43 = {tool_results[-1]['content']}")

    srv = scripted_server(responder=model)
    res = run_cli(["run", "What is 37*43?", "--json", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)  # exactly one JSON object on stdout
    assert out["answer"] == "37 * 43 = 1591"
    assert [c["name"] for c in out["tool_calls"]] == ["calculator"] and out["tool_calls"][0]["ok"] is True
    assert out["thread_id"] and out["tool_calls_made"] == 1
    assert "calculator" in res.stderr  # the live events went to stderr


def test_run_stops_after_exactly_max_tool_calls(scripted_server, workspace):
    srv = scripted_server(
        responder=lambda req: tool_call("calculator", {"expression": "1+1"}) if req.get("tools") else text("final: 2")
    )
    res = run_cli(
        ["run", "loop forever", "--json", "--max-tool-calls", "3", "--workspace", str(workspace)], env=cli_env(srv)
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["tool_calls_made"] == 3 and len(out["tool_calls"]) == 3
    assert out["answer"] == "final: 2"
    assert "tools" not in srv.requests[-1] and all("tools" in r for r in srv.requests[:-1])


def test_same_thread_shares_history_across_processes(scripted_server, workspace):
    srv = scripted_server(
        [
            text("Noted: teal."),
            lambda req: text("history: " + " | ".join(m["content"] for m in req["messages"] if m["role"] != "system")),
        ]
    )
    env = cli_env(srv)
    first = run_cli(["run", "My favourite colour is teal.", "--thread", "s1", "--json"], env=env)
    assert first.returncode == 0, first.stderr
    second = run_cli(["run", "What is my favourite colour?", "--thread", "s1", "--json"], env=env)
    assert second.returncode == 0, second.stderr
    assert (
        json.loads(second.stdout)["answer"]
        == "history: My favourite colour is teal. | Noted: teal. | What is my favourite colour?"
    )
    # a different thread does not see it
    srv.reset([lambda req: text(str(len(req["messages"])))])
    third = run_cli(["run", "fresh", "--thread", "s2", "--json"], env=env)
    assert json.loads(third.stdout)["answer"] == "2"


def test_missing_api_key_gives_configuration_help(workspace):
    res = run_cli(["run", "hi", "--model", "openai:gpt-4o-mini"], env=cli_env())
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert "OPENAI_API_KEY" in res.stderr and "--model" in res.stderr


def test_unreachable_server_gives_configuration_help(workspace):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    env = cli_env(OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY="k")
    res = run_cli(["run", "hi", "--model", "openai:gpt-4o-mini"], env=env)
    assert res.returncode == 2
    assert "Could not reach the model service" in res.stderr and f"127.0.0.1:{port}" in res.stderr
    assert "Traceback" not in res.stderr


def test_rejected_credentials_give_configuration_help(scripted_server):
    srv = scripted_server([{"error": {"status": 401, "message": "Incorrect API key"}}])
    res = run_cli(["run", "hi"], env=cli_env(srv))
    assert res.returncode == 2 and "rejected the credentials" in res.stderr and "Traceback" not in res.stderr
    # with --json, stdout still holds exactly one JSON object
    srv.reset([{"error": {"status": 401, "message": "Incorrect API key"}}])
    res = run_cli(["run", "hi", "--json", "--thread", "j1"], env=cli_env(srv))
    assert res.returncode == 2 and "rejected the credentials" in res.stderr
    out = json.loads(res.stdout)
    assert out["thread_id"] == "j1" and out["answer"] == "" and out["error"]["type"] == "ModelConfigError"


def test_chat_reads_turns_from_a_pipe(scripted_server):
    srv = scripted_server([text("Hello Ada."), lambda req: text(f"turn with {len(req['messages'])} messages")])
    res = run_cli(["chat", "--thread", "c1"], env=cli_env(srv), input_text="I am Ada\n\nWho am I?\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["Hello Ada.", "turn with 4 messages"]


def test_demo_runs_offline_and_is_labelled(tmp_path):
    ws = tmp_path / "demo-ws"
    res = run_cli(["demo", "--workspace", str(ws)], env=cli_env())
    assert res.returncode == 0, res.stderr
    assert "SCRIPTED MODEL" in res.stdout
    assert "→ calculator" in res.stdout and "→ write_file" in res.stdout
    assert "answer: 37 × 43 = 1591" in res.stdout
    assert (ws / "answer.txt").read_text().strip() == "37*43 = 1591"


def test_demo_without_a_workspace_saves_its_answer():
    # The default workspace is a fresh folder outside smart-agent's data home, which the file tools refuse.
    res = run_cli(["demo"], env=cli_env())
    assert res.returncode == 0, res.stderr
    workspace = next(line.split(": ", 1)[1] for line in res.stdout.splitlines() if line.startswith("workspace: "))
    assert (Path(workspace) / "answer.txt").read_text().strip() == "37*43 = 1591", res.stdout
    assert "did not save" not in res.stdout


def test_bad_input_is_a_clean_error(scripted_server):
    srv = scripted_server([])
    res = run_cli(["run", "   "], env=cli_env(srv))
    assert res.returncode == 2 and "Nothing to do" in res.stderr and "Traceback" not in res.stderr


def test_graph_command_prints_mermaid():
    res = run_cli(["graph", "agent"], env=cli_env())
    assert res.returncode == 0, res.stderr
    assert "toolLimitFinalize" in res.stdout and "graph TD" in res.stdout
