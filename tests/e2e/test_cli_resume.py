"""Human review and questions through the CLI: a run that pauses exits 3 (one JSON object
under --json, nothing more runs), `smart-agent resume` continues it with a decision. Separate
CLI processes against the scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call, tool_calls


def writer(path="out.txt", content="hello"):
    """A model that writes one file, then answers with the tool result it got."""

    def model(req):
        results = [m for m in req["messages"] if m["role"] == "tool"]
        if not results:
            return tool_call("write_file", {"path": path, "content": content})
        return text("done: " + results[-1]["content"])

    return model


def run_args(workspace, *extra):
    return ["run", "write the file", "--workspace", str(workspace), "--approve", "write_file", *extra]


def test_approve_write_file_pauses_then_reject_and_approve(scripted_server, workspace):
    srv = scripted_server(responder=writer())
    env = cli_env(srv)
    paused = run_cli(run_args(workspace, "--json", "--thread", "t1"), env=env)
    assert paused.returncode == 3, paused.stderr
    out = json.loads(paused.stdout)  # exactly one JSON object
    assert out["status"] == "interrupted" and out["thread_id"] == "t1" and out["answer"] == ""
    [pending] = out["interrupts"]
    assert pending["id"] and [a["name"] for a in pending["value"]["action_requests"]] == ["write_file"]
    assert pending["value"]["action_requests"][0]["args"] == {"path": "out.txt", "content": "hello"}
    assert not (workspace / "out.txt").exists() and len(srv.requests) == 1  # nothing ran after the interrupt

    rejected = run_cli(["resume", "--thread", "t1", "--reject", "not allowed"], env=env)
    assert rejected.returncode == 0, rejected.stderr
    assert not (workspace / "out.txt").exists()
    tool_message = srv.requests[-1]["messages"][-1]
    assert tool_message["role"] == "tool" and "not allowed" in tool_message["content"]
    assert "rejected write_file: not allowed" in rejected.stdout  # the approval event's line
    assert "  → write_file(path=out.txt, content=hello) [rejected: not run]\n" in rejected.stdout
    assert "(thread t1 · 1 tool call · " in rejected.stderr  # the rejected call is one of the run's calls

    second = run_cli(run_args(workspace, "--thread", "t2"), env=env)  # human mode, not a terminal
    assert second.returncode == 3, second.stderr
    assert '⏸ waiting for approval: write_file({"path": "out.txt", "content": "hello"})\n' in second.stdout
    assert "paused on thread t2" in second.stderr and "smart-agent resume --thread t2" in second.stderr
    assert not (workspace / "out.txt").exists()
    approved = run_cli(["resume", "--thread", "t2", "--approve", "--json"], env=env)
    assert approved.returncode == 0, approved.stderr
    assert (workspace / "out.txt").read_text() == "hello"
    result = json.loads(approved.stdout)
    assert result["answer"].startswith("done: Wrote 5") and result["thread_id"] == "t2"


def test_resume_edit_runs_the_call_with_new_arguments(scripted_server, workspace):
    srv = scripted_server(responder=writer())
    env = cli_env(srv)
    assert run_cli(run_args(workspace, "--thread", "e1", "--json"), env=env).returncode == 3
    bad = run_cli(["resume", "--thread", "e1", "--edit", "{not json"], env=env)
    assert bad.returncode == 2 and "--edit: not valid JSON" in bad.stderr and len(bad.stderr.splitlines()) == 1
    edited = run_cli(
        ["resume", "--thread", "e1", "--edit", json.dumps({"path": "other.txt", "content": "edited"})], env=env
    )
    assert edited.returncode == 0, edited.stderr
    assert (workspace / "other.txt").read_text() == "edited" and not (workspace / "out.txt").exists()


def test_an_approve_entry_limits_the_decisions_a_person_may_take(scripted_server, workspace):
    """`--approve write_file=reject/respond`: the request says so, an edit or approval is refused
    (one line, exit 2, the run stays paused), and `--answer` responds in the tool's place."""
    srv = scripted_server(responder=writer())
    env = cli_env(srv)
    paused = run_cli(["run", "write the file", "--workspace", str(workspace), "--approve", "write_file=reject/respond",
                      "--json", "--thread", "d1"], env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stderr
    [pending] = json.loads(paused.stdout)["interrupts"]
    assert pending["value"]["review_configs"][0]["allowed_decisions"] == ["reject", "respond"]
    for flags in (["--approve"], ["--edit", json.dumps({"path": "x.txt", "content": "x"})]):
        refused = run_cli(["resume", "--thread", "d1", *flags], env=env)
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "type must be one of reject, respond for 'write_file'" in refused.stderr
    assert len(srv.requests) == 1 and not list(workspace.iterdir())  # nothing ran
    answered = run_cli(["resume", "--thread", "d1", "--answer", "Wrote it by hand.", "--json"], env=env)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["answer"] == "done: Wrote it by hand."  # the person's text was the result
    assert not list(workspace.iterdir())


def test_ask_user_question_is_answered_with_resume(scripted_server, workspace):
    def model(req):
        results = [m for m in req["messages"] if m["role"] == "tool"]
        if not results:
            return tool_call("ask_user", {"question": "Which colour?"})
        return text("you said " + results[-1]["content"])

    srv = scripted_server(responder=model)
    env = cli_env(srv)
    paused = run_cli(["run", "pick a colour", "--ask-user", "--json", "--thread", "q1"], env=env)
    assert paused.returncode == 3, paused.stderr
    assert json.loads(paused.stdout)["interrupts"][0]["value"] == {"question": "Which colour?"}
    wrong = run_cli(["resume", "--thread", "q1", "--approve"], env=env)
    assert wrong.returncode == 2 and "--answer" in wrong.stderr and len(wrong.stderr.splitlines()) == 1
    answered = run_cli(["resume", "--thread", "q1", "--answer", "teal", "--json"], env=env)
    assert answered.returncode == 0, answered.stderr
    out = json.loads(answered.stdout)
    assert out["answer"] == "you said teal"
    assert [(c["name"], c["args"], c["ok"]) for c in out["tool_calls"]] == [
        ("ask_user", {"question": "Which colour?"}, True)
    ]  # the question is one of the run's tool calls
    assert srv.requests[-1]["messages"][-1] == {**srv.requests[-1]["messages"][-1], "role": "tool", "content": "teal"}


def test_chat_offers_ask_user_and_exits_3_on_a_pipe(scripted_server):
    srv = scripted_server(responder=lambda req: tool_call("ask_user", {"question": "Who?"}))
    env = cli_env(srv)
    res = run_cli(["chat", "--thread", "c1", "--json"], env=env, input_text="hello\nsecond turn\n")
    assert res.returncode == 3, res.stderr
    assert "ask_user" in srv.offered_tools(0)
    assert json.loads(res.stdout)["interrupts"][0]["value"] == {"question": "Who?"}
    # the second line answered the question (piped chat reads answers from stdin); the model asked
    # again and no line was left: the turn waits for `resume`
    assert len(srv.requests) == 2 and srv.requests[1]["messages"][-1]["content"] == "second turn"
    srv.reset([])
    off = run_cli(["chat", "--no-ask-user", "--thread", "c2"], env=env, input_text="")
    assert off.returncode == 0, off.stderr


def test_decisions_file(scripted_server, workspace, tmp_path):
    def model(req):
        results = [m for m in req["messages"] if m["role"] == "tool"]
        if not results:
            return tool_calls([("write_file", {"path": "a.txt", "content": "A"}),
                               ("write_file", {"path": "b.txt", "content": "B"})])
        return text(" | ".join(m["content"] for m in results))

    srv = scripted_server(responder=model)
    env = cli_env(srv)
    paused = run_cli(run_args(workspace, "--thread", "d1", "--json"), env=env)
    assert paused.returncode == 3, paused.stderr
    assert len(json.loads(paused.stdout)["interrupts"][0]["value"]["action_requests"]) == 2
    one = tmp_path / "one.json"
    one.write_text(json.dumps([{"type": "approve"}]))
    wrong = run_cli(["resume", "--thread", "d1", "--decisions", str(one)], env=env)
    assert wrong.returncode == 2 and "2 tool call(s) wait for review but 1 decision(s)" in wrong.stderr
    assert len(wrong.stderr.splitlines()) == 1 and not (workspace / "a.txt").exists()
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"decisions": [{"type": "approve"}, {"type": "reject", "message": "not b"}]}))
    done = run_cli(["resume", "--thread", "d1", "--decisions", str(two), "--json"], env=env)
    assert done.returncode == 0, done.stderr
    assert (workspace / "a.txt").read_text() == "A" and not (workspace / "b.txt").exists()
    assert "not b" in json.loads(done.stdout)["answer"]


def test_resume_without_a_pending_interrupt_is_a_usage_error(scripted_server, workspace):
    srv = scripted_server([text("hi")])
    env = cli_env(srv)
    assert run_cli(["run", "hello", "--thread", "n1"], env=env).returncode == 0
    nothing = run_cli(["resume", "--thread", "n1", "--approve"], env=env)
    assert nothing.returncode == 2 and "has no paused run" in nothing.stderr
    assert len(nothing.stderr.splitlines()) == 1
    missing = run_cli(["resume", "--thread", "nosuch", "--approve"], env=env)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    no_decision = run_cli(["resume", "--thread", "n1"], env=env)
    assert no_decision.returncode == 2 and "has no paused run" in no_decision.stderr  # nothing stopped by Ctrl-C
    unknown = run_cli(["run", "x", "--approve", "nosuch"], env=env)
    assert unknown.returncode == 2 and "--approve: unknown tool(s) 'nosuch'. Known tools:" in unknown.stderr
    assert len(srv.requests) == 1


PLAN = {"steps": [{"id": "a", "tool": "calculator", "args": {"expression": "6*7"}},
                  {"id": "save", "tool": "write_file", "args": {"path": "out.txt", "content": "a=${a}"}}]}


def test_planner_step_waiting_for_approval_exits_3_and_resumes(scripted_server, workspace):
    srv = scripted_server([{"tool_calls": [{"name": "submit_plan", "arguments": PLAN}]}, text("saved")])
    env = cli_env(srv)
    run = ["run", "--graph", "planner", "compute", "--workspace", str(workspace), "--approve", "write_file"]
    paused = run_cli([*run, "--json", "--thread", "s1"], env=env)
    assert paused.returncode == 3, paused.stderr
    [request] = json.loads(paused.stdout)["interrupts"][0]["value"]["action_requests"]
    assert request["name"] == "write_file" and request["args"] == {"path": "out.txt", "content": "a=42"}
    assert not (workspace / "out.txt").exists() and len(srv.requests) == 1
    assert '⏸ waiting for approval: save: write_file({"path": "out.txt", "content": "a=42"})' in paused.stderr
    done = run_cli(["resume", "--thread", "s1", "--approve"], env=env)
    assert done.returncode == 0, done.stderr
    assert (workspace / "out.txt").read_text() == "a=42" and done.stdout.startswith("  ✓ approved write_file")


def test_execute_with_approve_pauses_and_resumes(workspace, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    env = cli_env()
    execute = ["execute", str(plan), "--workspace", str(workspace), "--approve", "write_file"]
    paused = run_cli([*execute, "--json"], env=env)  # no --thread: one is made up, so it can be resumed
    assert paused.returncode == 3, paused.stderr
    out = json.loads(paused.stdout)
    assert out["status"] == "interrupted" and out["thread_id"].startswith("execute-")
    assert [e["id"] for e in out["trace"] if e["status"] == "ok"] == ["a"] and not (workspace / "out.txt").exists()
    rejected = run_cli(["resume", "--thread", out["thread_id"], "--reject", "keep it", "--json"], env=env)
    assert rejected.returncode == 1, rejected.stderr  # the rejected step halted the execution, as `execute` says
    assert json.loads(rejected.stdout)["status"] == "halted"
    assert not (workspace / "out.txt").exists() and "keep it" in rejected.stdout

    human = run_cli([*execute, "--thread", "x2"], env=env)
    assert human.returncode == 3 and "smart-agent resume --thread x2" in human.stderr
    assert run_cli(["resume", "--thread", "x2", "--approve"], env=env).returncode == 0
    assert (workspace / "out.txt").read_text() == "a=42"
    unknown = run_cli([*execute[:-1], "nosuch"], env=env)
    assert unknown.returncode == 2 and "--approve: unknown tool(s) 'nosuch'" in unknown.stderr


def test_dual_graph_pauses_in_its_planner_and_resumes(scripted_server, workspace):
    from smart_agent.nodes.dual import DECIDE

    srv = scripted_server([
        tool_call(DECIDE, {"action": "execute", "objective": "compute and save"}),
        {"tool_calls": [{"name": "submit_plan", "arguments": PLAN}]},
        text("saved a=42"),
        tool_call(DECIDE, {"action": "final", "answer": "All saved."}),
    ])
    env = cli_env(srv)
    paused = run_cli(
        ["run", "--graph", "dual", "go", "--workspace", str(workspace), "--approve-plan", "--json", "--thread", "du1"],
        env=env,
    )
    assert paused.returncode == 3, paused.stderr
    assert json.loads(paused.stdout)["interrupts"][0]["value"]["type"] == "plan_approval"  # from the subgraph
    assert not (workspace / "out.txt").exists() and len(srv.requests) == 2
    done = run_cli(["resume", "--thread", "du1", "--approve", "--json"], env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "All saved." and (workspace / "out.txt").read_text() == "a=42"
