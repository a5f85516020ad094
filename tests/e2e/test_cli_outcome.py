"""What a CLI run reports for every graph: the ``--json`` object (status, plan and steps, the
fleet's subtasks, tool calls), the summary's counts, the exit codes (0 completed, 1 failed or
halted, 130 Ctrl-C with the thread resumable) and Assistant mode for the planner and the fleet
(earlier turns in the planning and decomposition prompts). Separate CLI processes against the
scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from conftest import cli_env, offered, run_cli

from smart_agent.nodes.dual import DECIDE
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM
from smart_agent.testing.scripted_server import text, tool_call

MISSING = {"steps": [{"id": "a", "tool": "read_file", "args": {"path": "missing.txt"}, "on_fail": "halt"}]}
ONE_SUM = {"steps": [{"id": "s", "tool": "calculator", "args": {"expression": "6*7"}}]}
TWO_SUMS = {"steps": [{"id": "a", "tool": "calculator", "args": {"expression": "6*7"}},
                      {"id": "b", "tool": "calculator", "args": {"expression": "2**10"}}]}


def planner_model(plan, answer="the answer"):
    """Plans ``plan`` whenever it is asked for one (a replan too), answers ``answer`` otherwise."""

    def model(req):
        return tool_call("submit_plan", plan) if "submit_plan" in offered(req) else text(answer)

    return model


def planning_requests(srv) -> list[str]:
    """The user prompt of each planning request the server received."""
    return [r["messages"][-1]["content"] for r in srv.requests if "submit_plan" in offered(r)]


def test_planner_json_halted_step_exits_1_with_the_steps_error(scripted_server, workspace):
    srv = scripted_server(responder=planner_model(MISSING, "missing.txt could not be read"))
    res = run_cli(
        ["run", "--graph", "planner", "read missing.txt", "--json", "--max-replans", "0", "--workspace",
         str(workspace)],
        env=cli_env(srv),
    )
    assert res.returncode == 1, res.stderr
    out = json.loads(res.stdout)  # exactly one JSON object
    assert out["status"] == "halted" and out["graph_status"] == "halted"
    assert "step 'a' failed" in out["error"] and "missing.txt" in out["error"]
    assert out["plan"]["steps"][0]["id"] == "a"
    [step] = out["steps"]
    assert step["id"] == "a" and step["status"] == "failed" and "missing.txt" in step["error"]
    assert out["halt"]["steps"] == ["a"]
    assert out["tool_calls_made"] == 1 and out["steps_run"] == 1
    [call] = out["tool_calls"]
    assert call["name"] == "read_file" and call["args"] == {"path": "missing.txt"} and call["ok"] is False
    assert out["answer"] == "missing.txt could not be read" and out["usage"]["model_calls"] == 2
    assert "the run halted: step 'a' failed" in res.stderr


def test_planner_halt_after_a_failed_replan_exits_1_without_json_too(scripted_server, workspace):
    # The default one replan: the same plan again reuses the failed step's id, is rejected,
    # and the run reports what ran - halted.
    srv = scripted_server(responder=planner_model(MISSING, "could not read it"))
    res = run_cli(["run", "--graph", "planner", "read missing.txt", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 1, res.stderr
    assert res.stdout.rstrip().splitlines()[-1] == "could not read it"  # the answer, after the events
    assert "smart-agent: the run halted: step 'a' failed" in res.stderr
    assert re.search(r"\(thread [0-9a-f-]{36}; details: --json\)$", res.stderr.rstrip())  # how to resume or inspect it


def test_planner_that_never_gets_a_valid_plan_exits_1_with_status_failed(scripted_server):
    srv = scripted_server(responder=planner_model({"steps": [{"id": "a", "tool": "teleport", "args": {}}]}))
    res = run_cli(["run", "--graph", "planner", "go", "--json", "--max-plan-attempts", "2"], env=cli_env(srv))
    assert res.returncode == 1, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "failed" and out["graph_status"] == "planning_failed"
    assert out["plan"] is None and out["steps"] == [] and out["tool_calls"] == []
    assert "unknown_tool" in out["plan_errors"][0] and out["error"].startswith("Planning failed")
    assert len(srv.requests) == 2


def test_planner_json_and_summary_count_the_steps_tool_calls(scripted_server, workspace):
    srv = scripted_server(responder=planner_model(TWO_SUMS, "42 and 1024"))
    env = cli_env(srv)
    res = run_cli(["run", "--graph", "planner", "compute", "--json", "--workspace", str(workspace)], env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "completed" and out["answer"] == "42 and 1024"
    assert [(s["id"], s["status"], s["output"]) for s in out["steps"]] == [("a", "ok", "42"), ("b", "ok", "1024")]
    assert [(c["name"], c["args"], c["ok"]) for c in out["tool_calls"]] == [
        ("calculator", {"expression": "6*7"}, True), ("calculator", {"expression": "2**10"}, True)
    ]
    assert out["tool_calls_made"] == 2 and out["steps_run"] == 2
    human = run_cli(["run", "--graph", "planner", "compute", "--workspace", str(workspace)], env=env)
    assert human.returncode == 0, human.stderr
    assert " · 2 steps · 2 tool calls · " in human.stderr.splitlines()[-1]


def test_dual_run_counts_the_planners_tool_calls(scripted_server, workspace):
    def model(req):
        names = offered(req)
        if "submit_plan" in names:
            return tool_call("submit_plan", ONE_SUM)
        if names == [DECIDE]:
            prompt = req["messages"][-1]["content"]
            if "Assets" in prompt:
                return tool_call(DECIDE, {"action": "final", "answer": "It is 42."})
            return tool_call(DECIDE, {"action": "execute", "objective": "compute 6*7"})
        return text("6*7 = 42")  # the planner's synthesis

    srv = scripted_server(responder=model)
    env = cli_env(srv)
    res = run_cli(["run", "--graph", "dual", "what is 6*7", "--json", "--workspace", str(workspace)], env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "completed" and out["answer"] == "It is 42."
    assert out["tool_calls_made"] == 1 and [c["name"] for c in out["tool_calls"]] == ["calculator"]
    assert [(a["objective"], a["status"], a["answer"]) for a in out["assets"]] == [("compute 6*7", "ok", "6*7 = 42")]
    human = run_cli(["run", "--graph", "dual", "what is 6*7", "--workspace", str(workspace)], env=env)
    assert human.returncode == 0, human.stderr
    assert " · 1 tool call · " in human.stderr.splitlines()[-1]  # the planner's step, run for the dual graph


def fleet_model(req):
    names = offered(req)
    last = req["messages"][-1]["content"] if req["messages"] else ""
    if req["messages"][0]["content"] == AGGREGATE_SYSTEM:
        return text("aggregated")
    if "submit_subtasks" in names:
        return tool_call("submit_subtasks", {"subtasks": [{"id": "x", "task": "compute 6*7"}, "say hi"]})
    if "compute 6*7" in last:
        return tool_call("calculator", {"expression": "6*7"}) if "calculator" in names else text("unexpected")
    if req["messages"][-1]["role"] == "tool":
        return text("42")
    return text("hi")


def test_fleet_json_has_each_subtasks_result(scripted_server, workspace):
    srv = scripted_server(responder=fleet_model)
    res = run_cli(["run", "--graph", "fleet", "two things", "--json", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "completed" and out["answer"] == "aggregated"
    assert [(s["id"], s["task"], s["ok"], s["answer"]) for s in out["subtasks"]] == [
        ("w1", "compute 6*7", True, "42"), ("w2", "say hi", True, "hi")
    ]
    assert out["tool_calls_made"] == 1 and [c["name"] for c in out["tool_calls"]] == ["calculator"]
    assert out["steps_run"] == 2


def test_chat_planner_second_planning_request_carries_the_first_turn(scripted_server, workspace):
    srv = scripted_server(responder=planner_model({"steps": []}, "noted"))
    res = run_cli(
        ["chat", "--graph", "planner", "--workspace", str(workspace)],
        env=cli_env(srv),
        input_text="My name is Ada Lovelace\nWhat is my name?\n",
    )
    assert res.returncode == 0, res.stderr
    first, second = planning_requests(srv)
    assert "Ada Lovelace" not in first.replace("Task: My name is Ada Lovelace", "")
    assert "User: My name is Ada Lovelace" in second and "You: noted" in second
    assert second.rstrip().endswith("Task: What is my name?")


def test_chat_fleet_second_decomposition_request_carries_the_first_turn(scripted_server, workspace):
    srv = scripted_server(responder=fleet_model)
    res = run_cli(
        ["chat", "--graph", "fleet", "--workspace", str(workspace)],
        env=cli_env(srv),
        input_text="Remember the number 9135\nTwo things please\n",
    )
    assert res.returncode == 0, res.stderr
    decompositions = [r["messages"][-1]["content"] for r in srv.requests if "submit_subtasks" in offered(r)]
    assert len(decompositions) == 2
    assert "9135" not in decompositions[0].replace("Remember the number 9135", "")
    assert "User: Remember the number 9135" in decompositions[1] and "You: aggregated" in decompositions[1]
    assert decompositions[1].rstrip().endswith("Two things please")


def test_chat_turn_that_fails_to_plan_makes_chat_exit_1(scripted_server, workspace):
    bad = {"steps": [{"id": "a", "tool": "teleport", "args": {}}]}
    srv = scripted_server(responder=planner_model(bad))
    res = run_cli(
        ["chat", "--graph", "planner", "--max-plan-attempts", "1", "--workspace", str(workspace)],
        env=cli_env(srv),
        input_text="first\nsecond\n",
    )
    assert res.returncode == 1
    assert res.stderr.count("smart-agent: Planning failed") == 2  # both turns ran, each said so


def _cli_command() -> list[str]:
    exe = Path(sys.executable).with_name("smart-agent")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "smart_agent.cli"]


def test_ctrl_c_exits_130_and_the_thread_resumes(scripted_server, workspace):
    arrived, release = threading.Event(), threading.Event()
    answered = []

    def model(req):
        if not answered:  # the first request: hold it until the CLI was interrupted
            arrived.set()
            release.wait(60)
            answered.append("held")
            return text("too late")
        answered.append("resumed")
        user = [m["content"] for m in req["messages"] if m["role"] == "user"]
        return text("resumed: " + " | ".join(user))

    srv = scripted_server(responder=model)
    env = cli_env(srv)
    proc = subprocess.Popen(
        [*_cli_command(), "run", "remember 4711", "--thread", "c1", "--json", "--workspace", str(workspace)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert arrived.wait(60), "the CLI never sent its model request"
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    stopped = json.loads(out)
    assert stopped["status"] == "interrupted" and stopped["thread_id"] == "c1"
    assert "smart-agent resume --thread c1" in err

    resumed = run_cli(["resume", "--thread", "c1", "--json"], env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "resumed: remember 4711"  # the stopped turn, run again
    again = run_cli(["run", "what did I ask?", "--thread", "c1", "--json"], env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["answer"] == "resumed: remember 4711 | what did I ask?"


def test_structured_output_never_valid_exits_1_with_status_failed(scripted_server, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
    srv = scripted_server(responder=lambda _req: text("not JSON at all"))
    res = run_cli(
        ["run", "give n", "--output-schema", str(schema), "--max-output-retries", "1", "--json"], env=cli_env(srv)
    )
    assert res.returncode == 1, res.stderr
    out = json.loads(res.stdout)  # still exactly one JSON object
    assert out["status"] == "failed" and out["error"]["type"] == "StructuredOutputError"
    assert "structured output failed" in res.stderr and len(srv.requests) == 2


def test_a_model_error_exits_1_with_status_failed(scripted_server):
    srv = scripted_server(responder=lambda _req: {"error": {"status": 500, "message": "the model broke"}})
    for graph in ("agent", "planner", "fleet", "dual"):
        res = run_cli(["run", "hi", "--graph", graph, "--model-retries", "0", "--json"], env=cli_env(srv))
        assert res.returncode == 1, (graph, res.stderr)
        out = json.loads(res.stdout)
        assert out["status"] == "failed" and "the model broke" in out["error"]["message"], graph
