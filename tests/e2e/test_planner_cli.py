"""``smart-agent plan`` / ``execute`` / ``run --graph planner`` as separate processes."""

from __future__ import annotations

import io
import json

import pytest
from conftest import cli_env, run_cli

from smart_agent.cli.planner import format_plan, prompt_for_approval

PLAN = {
    "steps": [
        {"id": "a", "tool": "calculator", "args": {"expression": "6*7"}},
        {"id": "b", "tool": "calculator", "args": {"expression": "2**10"}},
        {"id": "save", "tool": "write_file", "args": {"path": "out/result.txt", "content": "a=${a} b=${b}"}},
        {"id": "check", "tool": "read_file", "args": {"path": "out/result.txt"}, "depends_on": ["save"]},
    ]
}


def submit(plan):
    return {"tool_calls": [{"name": "submit_plan", "arguments": plan}]}


def test_plan_command_saves_a_validated_plan(scripted_server, tmp_path):
    bad = {"steps": [{"id": "a", "tool": "calculator", "args": {"expr": "1"}}]}
    server = scripted_server([submit(bad), submit(PLAN)])
    target = tmp_path / "plan.json"
    proc = run_cli(["plan", "compute and save", "--save", str(target)], env=cli_env(server))
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(target.read_text())
    assert [s["id"] for s in saved["steps"]] == ["a", "b", "save", "check"]
    assert saved["steps"][2]["depends_on"] == ["a", "b"]  # implied by the references
    assert "saved to" in proc.stdout and "2 attempt(s)" in proc.stdout
    assert "unknown argument 'expr'" in server.requests[1]["messages"][-1]["content"]


def test_plan_command_reports_failure(scripted_server):
    bad = submit({"steps": [{"id": "a", "tool": "teleport", "args": {}}]})
    server = scripted_server([bad, bad])
    proc = run_cli(["plan", "t", "--max-plan-attempts", "2", "--json"], env=cli_env(server))
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["plan"] is None and out["attempts"] == 2 and "unknown_tool" in out["errors"][0]


def test_plan_command_without_a_model_explains_configuration():
    proc = run_cli(["plan", "t", "--model", "nosuchprovider:x"], env=cli_env())
    assert proc.returncode == 2 and "model" in proc.stderr.lower()


def test_execute_is_deterministic_and_needs_no_model(tmp_path):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(PLAN))
    outputs = []
    for i in range(2):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        proc = run_cli(["execute", str(plan_file), "--workspace", str(ws), "--json"], env=cli_env())
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
        assert (ws / "out" / "result.txt").read_text() == "a=42 b=1024"
    assert outputs[0] == outputs[1]
    result = json.loads(outputs[0])
    assert result["status"] == "done"
    assert [(e["id"], e["status"], e["round"]) for e in result["trace"]] == [
        ("a", "ok", 1),
        ("b", "ok", 1),
        ("save", "ok", 2),
        ("check", "ok", 3),
    ]
    assert result["trace"][2]["args"]["content"] == "a=42 b=1024"
    assert "Execution done: 4 ok" in result["answer"]


def test_execute_human_output_and_failures(tmp_path):
    plan = {"steps": [
        {"id": "x", "tool": "read_file", "args": {"path": "missing.txt"}, "on_fail": "continue"},
        {"id": "y", "tool": "calculator", "args": {"expression": "1+1"}},
        {"id": "z", "tool": "calculator", "args": {"expression": "${x}"}},
    ]}
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    proc = run_cli(["execute", str(plan_file), "--workspace", str(tmp_path)], env=cli_env())
    assert proc.returncode == 1
    assert (
        "x read_file: failed" in proc.stdout
        and "z calculator: skipped" in proc.stdout
        and "y calculator: ok" in proc.stdout
    )
    assert "▶ y calculator" in proc.stderr


def test_execute_rejects_an_invalid_plan(tmp_path):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"steps": [{"id": "a", "tool": "calculator", "args": {}, "depends_on": ["a"]}]}))
    proc = run_cli(["execute", str(plan_file), "--json"], env=cli_env())
    assert proc.returncode == 2
    result = json.loads(proc.stdout)
    assert result["status"] == "planning_failed" and result["trace"] == []
    assert any("missing required argument 'expression'" in e for e in result["errors"])
    assert any("depends on itself" in e for e in result["errors"])
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    proc = run_cli(["execute", str(broken)], env=cli_env())
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr


def test_run_graph_planner(scripted_server, tmp_path):
    server = scripted_server([submit(PLAN), {"content": "6*7 is 42 and 2**10 is 1024."}])
    proc = run_cli(
        ["run", "--graph", "planner", "compute", "--workspace", str(tmp_path), "--json"], env=cli_env(server)
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["answer"] == "6*7 is 42 and 2**10 is 1024."


def test_run_graph_planner_with_approval_pauses_and_resumes(scripted_server, tmp_path):
    """Not a terminal (stdin is a pipe): the plan's approval is not asked, the run exits 3
    and `smart-agent resume` approves or rejects it with the same graph and workspace."""
    server = scripted_server([submit(PLAN), {"content": "approved and done"}, submit(PLAN)])
    env = cli_env(server)
    run = ["run", "--graph", "planner", "compute", "--workspace", str(tmp_path), "--approve-plan", "--json"]
    proc = run_cli([*run, "--thread", "p1"], env=env, input_text="a\n")
    assert proc.returncode == 3, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "interrupted" and out["interrupts"][0]["value"]["type"] == "plan_approval"
    assert "approve?" not in proc.stderr and not (tmp_path / "out").exists() and len(server.requests) == 1
    resumed = run_cli(["resume", "--thread", "p1", "--approve", "--json"], env=env)  # graph and workspace recorded
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "approved and done"
    assert (tmp_path / "out" / "result.txt").read_text() == "a=42 b=1024"

    assert run_cli([*run, "--thread", "p2"], env=env).returncode == 3
    wrong = run_cli(["resume", "--thread", "p2", "--graph", "agent", "--reject", "no"], env=env)
    assert wrong.returncode == 2 and "runs the 'planner' graph, not 'agent'" in wrong.stderr
    rejected = run_cli(["resume", "--thread", "p2", "--reject", "too risky"], env=env)
    assert rejected.returncode == 1, rejected.stderr  # nothing of the task was done: the run halted
    assert "smart-agent: the run halted: The plan was rejected (too risky)" in rejected.stderr
    assert "The plan was rejected (too risky)" in rejected.stdout and len(server.requests) == 3


@pytest.mark.unit  # in-process (the approval prompt alone): in the fast run too
def test_prompt_for_approval(tmp_path):
    request = {"type": "plan_approval", "task": "t", "plan": PLAN, "errors": ["edited plan: bad"], "replan": 1}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps({"steps": []}))
    lines = iter(["what?\n", "e /no/such/file.json\n", f"e {edited}\n"])
    out = io.StringIO()
    assert prompt_for_approval(request, read=lambda: next(lines), out=out) == {"action": "edit", "plan": {"steps": []}}
    text = out.getvalue()
    assert "Plan (revised) for: t" in text and "! edited plan: bad" in text and "cannot read" in text
    assert prompt_for_approval(request, read=lambda: "r not now\n", out=out) == {
        "action": "reject",
        "reason": "not now",
    }
    assert prompt_for_approval(request, read=lambda: "", out=out)["action"] == "reject"
    assert "check: read_file" in format_plan(PLAN) and "after save" in format_plan(PLAN)
