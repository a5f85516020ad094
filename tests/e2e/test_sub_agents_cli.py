"""The sub-agent tools from the CLI, against the scripted server: `smart-agent tools` lists them (offered with
--sub-agents); `--sub-agents` offers sub_agent and the background tools, whose child's answer reaches the
agent when it checks; a task still running when the run answers is cancelled (the process does not wait
for it); --max-agent-depth and --max-model-calls bound background children as they bound blocking ones."""

from __future__ import annotations

import json
import re
import time

from conftest import cli_env, offered, run_cli

from smart_agent.testing.scripted_server import text, tool_call

BACKGROUND = ["sub_agent", "start_sub_agent", "check_sub_agent", "cancel_sub_agent"]


def is_child(req) -> bool:
    return next(m["content"] for m in req["messages"] if m["role"] == "user").startswith("CHILD")


def responder(child, start_task="CHILD: compute", wait_s=20):
    """Root: start a task, check it (waiting), answer with the check's result; a child: ``child(req)``."""

    def respond(req):
        if is_child(req):
            return child(req)
        last = req["messages"][-1]
        if last["role"] == "user":
            return tool_call("start_sub_agent", {"task": start_task})
        if last["content"].startswith("Started background task"):
            found = re.search(r"task-[0-9a-f]{8}", last["content"]).group(0)
            return tool_call("check_sub_agent", {"task_id": found, "wait_s": wait_s})
        return text(f"final: {last['content']}")

    return respond


def test_tools_lists_the_sub_agent_tools_and_when_they_are_offered():
    res = run_cli(["tools", "--json"], env=cli_env())
    assert res.returncode == 0, res.stderr
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    for name in BACKGROUND:
        assert rows[name]["offered"] == "with --sub-agents", rows[name]
    assert rows["read_skill"]["offered"] == "when the run has skills"
    listed = run_cli(["tools"], env=cli_env()).stdout
    assert re.search(r"^start_sub_agent .*offered with --sub-agents\)$", listed, re.MULTILINE), listed


def test_a_background_childs_answer_reaches_the_agent_when_it_checks(scripted_server, workspace):
    srv = scripted_server(responder=responder(lambda req: text("CHILD ANSWER 42")))
    res = run_cli(["run", "go", "--sub-agents", "--workspace", str(workspace), "--json"], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "finished. The helper's answer:\nCHILD ANSWER 42" in out["answer"]
    assert offered(srv.requests[0])[-4:] == BACKGROUND
    assert out["usage"]["model_calls"] == len(srv.requests) == 4  # the child's call counts on the run
    assert "started in the background: CHILD: compute" in res.stderr


def test_off_by_default(scripted_server, workspace):
    srv = scripted_server([text("ok")])
    res = run_cli(["run", "go", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert not set(BACKGROUND) & set(offered(srv.requests[0]))


def test_a_task_still_running_when_the_agent_answers_is_cancelled(scripted_server, workspace):
    def respond(req):
        if is_child(req):
            return text("much too late", delay_s=60)
        if req["messages"][-1]["role"] == "user":
            return tool_call("start_sub_agent", {"task": "CHILD: slow"})
        return text("answered without waiting")

    srv = scripted_server(responder=respond)
    began = time.monotonic()
    res = run_cli(["run", "go", "--sub-agents", "--workspace", str(workspace)], env=cli_env(srv), timeout=50)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - began < 40
    assert "answered without waiting" in res.stdout and "much too late" not in res.stdout


def test_depth_and_model_call_limits_bound_background_children(scripted_server, workspace):
    srv = scripted_server(responder=responder(lambda req: text("child tools: " + ",".join(offered(req)))))
    res = run_cli(["run", "go", "--sub-agents", "--max-agent-depth", "1", "--workspace", str(workspace), "--json"],
                  env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    child = next(r for r in srv.requests if is_child(r))
    assert not set(BACKGROUND) & set(offered(child))  # the child is at the depth limit
    zero = run_cli(["run", "go", "--sub-agents", "--max-agent-depth", "0", "--workspace", str(workspace), "--json"],
                   env=cli_env(srv))
    assert "sub-agent depth limit reached (0)" in json.loads(zero.stdout)["answer"]

    def busy(req):  # a child that never stops calling tools
        return tool_call("calculator", {"expression": f"{len(req['messages'])}*3"})

    srv.reset()
    srv.responder = responder(busy)
    res = run_cli(["run", "go", "--sub-agents", "--max-model-calls", "5", "--workspace", str(workspace), "--json"],
                  env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert len(srv.requests) <= 5 and json.loads(res.stdout)["usage"]["model_calls"] == len(srv.requests)
