"""``--record DIR`` / ``--replay DIR`` on run and chat, in CLI processes: a run recorded
against the scripted server replays with the server stopped; a miss is one line naming the
request, exit 2; the scripted server's ``--cassette`` answers the recorded requests."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call


def calculator_model(req):
    results = [m for m in req["messages"] if m["role"] == "tool"]
    if not results:
        return tool_call("calculator", {"expression": "37*43"})
    return text(f"37*43 = {results[-1]['content']}")


def offline_env(**extra):
    """No model server: a base URL where nothing listens and no key."""
    return cli_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", SMART_AGENT_MODEL="openai:scripted-model", **extra)


def outcome(stdout):
    out = json.loads(stdout)
    return out["answer"], out["tool_calls"], out["tool_calls_made"], out["usage"]


def record_calculator_run(scripted_server, workspace, cassette):
    srv = scripted_server(responder=calculator_model)
    res = run_cli(
        ["run", "What is 37*43?", "--json", "--workspace", str(workspace), "--record", str(cassette)],
        env=cli_env(srv),
    )
    assert res.returncode == 0, res.stderr
    srv.stop()
    return res


def test_recorded_run_replays_with_the_server_stopped(scripted_server, workspace, tmp_path):
    cassette = tmp_path / "cassette"
    recorded = record_calculator_run(scripted_server, workspace, cassette)
    assert sorted(p.name for p in cassette.iterdir()) == ["0001.json", "0002.json"]

    replayed = run_cli(
        ["run", "What is 37*43?", "--json", "--workspace", str(workspace), "--replay", str(cassette)],
        env=offline_env(),
    )
    assert replayed.returncode == 0, replayed.stderr
    assert outcome(replayed.stdout) == outcome(recorded.stdout)  # answer, tool calls and usage
    assert outcome(replayed.stdout)[0] == "37*43 = 1591"

    # another system prompt: no exact match, the tolerant one answers the same conversation
    other_prompt = run_cli(
        ["run", "What is 37*43?", "--json", "--replay", str(cassette), "--system-prompt", "Be brief."],
        env=offline_env(),
    )
    assert other_prompt.returncode == 0, other_prompt.stderr
    assert outcome(other_prompt.stdout) == outcome(recorded.stdout)


def test_replay_miss_is_one_line_naming_the_request(scripted_server, workspace, tmp_path):
    cassette = tmp_path / "cassette"
    record_calculator_run(scripted_server, workspace, cassette)
    res = run_cli(["run", "What is 6*7?", "--replay", str(cassette)], env=offline_env())
    assert res.returncode == 2
    assert res.stderr.startswith("smart-agent: replay: no recorded response in ")
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert "'What is 6*7?'" in res.stderr and "model=scripted-model" in res.stderr

    res = run_cli(["run", "hi", "--replay", str(tmp_path / "missing")], env=offline_env())
    assert res.returncode == 2 and "is not a cassette folder" in res.stderr and "Traceback" not in res.stderr
    res = run_cli(["run", "hi", "--replay", str(cassette), "--record", str(tmp_path / "x")], env=offline_env())
    assert res.returncode == 2 and "not allowed with argument" in res.stderr


def test_recorded_chat_replays_with_the_server_stopped(scripted_server, tmp_path):
    def model(req):
        users = [m["content"] for m in req["messages"] if m["role"] == "user"]
        return text(f"turn {len(users)}: you said {users[-1]}")

    srv = scripted_server(responder=model)
    cassette = tmp_path / "chat"
    lines = "I am Ada\nWho am I?\n"
    recorded = run_cli(["chat", "--record", str(cassette)], env=cli_env(srv), input_text=lines)
    assert recorded.returncode == 0, recorded.stderr
    srv.stop()
    assert recorded.stdout.splitlines() == ["turn 1: you said I am Ada", "turn 2: you said Who am I?"]
    replayed = run_cli(["chat", "--replay", str(cassette)], env=offline_env(), input_text=lines)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout


def test_scripted_server_serves_a_cassette(scripted_server, workspace, tmp_path):
    cassette = tmp_path / "cassette"
    recorded = record_calculator_run(scripted_server, workspace, cassette)
    proc = subprocess.Popen(
        [sys.executable, "-m", "smart_agent.testing.scripted_server", "--cassette", str(cassette), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=30)
        assert line and line[0].startswith("BASE_URL="), "the server printed no BASE_URL line"
        env = cli_env(OPENAI_BASE_URL=line[0].strip().split("=", 1)[1], OPENAI_API_KEY="k",
                      SMART_AGENT_MODEL="openai:scripted-model")  # fmt: skip
        served = run_cli(["run", "What is 37*43?", "--json", "--workspace", str(workspace)], env=env)
        assert served.returncode == 0, served.stderr
        assert outcome(served.stdout) == outcome(recorded.stdout)
        missed = run_cli(["run", "What is 6*7?"], env=env)
        assert missed.returncode == 2 and "'What is 6*7?'" in missed.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run(
        [sys.executable, "-m", "smart_agent.testing.scripted_server", "--cassette", str(tmp_path / "none")],
        capture_output=True, text=True, env=cli_env(), timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def test_planner_run_replays_and_its_tools_run_again(scripted_server, tmp_path):
    """Every graph's model calls go through the cassette: a planner run (planning and
    synthesis requests) replays in a fresh workspace, where its steps' tools run for real."""
    plan = {"steps": [{"id": "a", "tool": "calculator", "args": {"expression": "37*43"}},
                      {"id": "b", "tool": "write_file", "args": {"path": "r.txt", "content": "result ${a}"}}]}
    srv = scripted_server(
        [
            tool_call("submit_plan", plan),
            lambda req: text("Synthesized: " + ("1591" if "1591" in json.dumps(req["messages"]) else "?")),
        ]
    )
    cassette, first, second = tmp_path / "planner", tmp_path / "ws1", tmp_path / "ws2"
    first.mkdir()
    second.mkdir()
    args = ["run", "--graph", "planner", "Compute 37*43 and save it", "--json"]
    recorded = run_cli([*args, "--workspace", str(first), "--record", str(cassette)], env=cli_env(srv))
    assert recorded.returncode == 0, recorded.stderr
    srv.stop()
    assert len(list(cassette.iterdir())) == 2  # planning and synthesis
    replayed = run_cli([*args, "--workspace", str(second), "--replay", str(cassette)], env=offline_env())
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["answer"] == json.loads(recorded.stdout)["answer"] == "Synthesized: 1591"
    assert (second / "r.txt").read_text() == "result 1591"


def test_streamed_run_on_a_terminal_replays_the_stream(scripted_server, workspace, tmp_path):
    """On a terminal the CLI streams the answer (stream=True requests, SSE responses): the
    recorded stream replays with the server stopped and the same answer streams on screen."""
    import pexpect

    exe = str(Path(sys.executable).with_name("smart-agent"))

    def on_terminal(args, env):
        child = pexpect.spawn(exe, args, env=env, encoding="utf-8", timeout=90, dimensions=(50, 200))
        child.expect(pexpect.EOF)
        child.close()
        return child.exitstatus, child.before

    srv = scripted_server(responder=calculator_model)
    cassette = tmp_path / "streamed"
    args = ["run", "What is 37*43?", "--workspace", str(workspace)]
    code, recorded = on_terminal([*args, "--record", str(cassette)], cli_env(srv))
    assert code == 0, recorded
    srv.stop()
    files = [json.loads(p.read_text()) for p in sorted(cassette.glob("*.json"))]
    assert [f["request"]["body"]["stream"] for f in files] == [True, True]
    assert all("events" in f["response"] for f in files)  # stored as server-sent events
    code, replayed = on_terminal([*args, "--replay", str(cassette)], offline_env())
    assert code == 0, replayed
    for screen in (recorded, replayed):
        assert "calculator" in screen and screen.count("37*43 = 1591") == 1  # streamed once, not printed again


def test_a_paused_run_and_its_resume_record_into_one_cassette_and_replay(scripted_server, workspace, tmp_path):
    """resume takes --record/--replay too: a run that waits for approval (exit 3) and its
    resume record into one cassette and replay, both, with the server stopped."""
    srv = scripted_server(responder=calculator_model)
    cassette = tmp_path / "approval"
    run = ["run", "What is 37*43?", "--approve", "calculator", "--json", "--workspace", str(workspace)]
    first = run_cli([*run, "--thread", "r1", "--record", str(cassette)], env=cli_env(srv))
    assert first.returncode == 3, first.stderr
    resumed = run_cli(["resume", "--thread", "r1", "--approve", "--json", "--record", str(cassette)], env=cli_env(srv))
    assert resumed.returncode == 0, resumed.stderr
    srv.stop()
    assert len(list(cassette.iterdir())) == 2

    paused = run_cli([*run, "--thread", "p1", "--replay", str(cassette)], env=offline_env())
    assert paused.returncode == 3, paused.stderr
    done = run_cli(["resume", "--thread", "p1", "--approve", "--json", "--replay", str(cassette)], env=offline_env())
    assert done.returncode == 0, done.stderr
    assert outcome(done.stdout)[:2] == outcome(resumed.stdout)[:2]
    assert outcome(done.stdout)[0] == "37*43 = 1591"
