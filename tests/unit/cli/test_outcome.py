"""A run's status and exit code (cli/outcome.py), what the summary counts from the events of
every graph (cli/summary.py), and the earlier turns the planner, fleet and dual prompts show."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from smart_agent.cli.outcome import EXIT_CODES, halt_error, result_json, run_status, summary_line
from smart_agent.cli.summary import RunSummary
from smart_agent.models.messages import HISTORY_MESSAGES, conversation_so_far
from smart_agent.nodes.planner.prompts import with_history


@pytest.mark.parametrize(
    ("final", "status", "code"),
    [
        ({"answer": "hi"}, "completed", 0),  # the agent loop, the dual graph
        ({"answer": "x", "status": "done"}, "completed", 0),  # planner, fleet
        ({"answer": "x", "status": "over_budget"}, "completed", 0),  # answered from what ran
        ({"answer": "no plan", "status": "planning_failed"}, "failed", 1),
        ({"answer": "x", "status": "halted", "halt": {"errors": {"a": "boom"}}}, "halted", 1),
        ({"answer": "x", "status": "plan_invalid"}, "halted", 1),  # a revision never valid after a halt
        ({"answer": "x", "status": "rejected"}, "halted", 1),  # a person rejected the plan
        ({"answer": "", "__interrupt__": ["pending"]}, "interrupted", 3),
    ],
)
def test_run_status_and_exit_code(final, status, code):
    assert run_status(final) == status and EXIT_CODES[status] == code


def test_halt_error_names_each_failed_step_on_one_line():
    final = {"halt": {"steps": ["a", "b"], "errors": {"a": "Tool 'read_file' failed:\n  not found", "b": "x"}}}
    assert halt_error(final) == "step 'a' failed: Tool 'read_file' failed: not found; step 'b' failed: x"
    assert halt_error({"halt": None}) is None


def test_summary_counts_agent_calls_planner_step_attempts_and_steps():
    s = RunSummary()
    events = [
        {"event": "tool_call", "id": "c1", "name": "calculator", "args": {"expression": "1"}},
        {"event": "tool_result", "id": "c1", "name": "calculator", "ok": True},
        {"event": "step_start", "step": "a", "tool": "read_file"},
        {"event": "step_result", "step": "a", "tool": "read_file", "status": "failed", "ok": False, "error": "gone",
         "attempts": 3, "args": {"path": "x"}},
        {"event": "step_result", "step": "b", "tool": "write_file", "status": "skipped", "ok": False, "attempts": 0},
        {"event": "step_result", "step": "w1", "ok": True, "agent": None},  # a fleet worker: no tool of its own
        {"event": "usage", "input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
    ]
    for ev in events:
        s.add(ev)
    assert [(t["name"], t["ok"]) for t in s.tool_calls] == [("calculator", True), ("read_file", False)]
    assert s.tool_calls[1]["attempts"] == 3 and s.tool_calls[1]["args"] == {"path": "x"}
    assert s.tool_executions == 4  # one call, three attempts of a step; the skipped step never ran
    assert [(st["step"], st["status"]) for st in s.steps] == [("a", "failed"), ("b", "skipped"), ("w1", "ok")]
    assert summary_line("t1", s) == "(thread t1 · 3 steps · 4 tool calls · 12 tokens · cost unknown)"  # no state
    # the run's own usage (its state) when there is one: priced, or a model without a price
    priced = {"usage": {"model_calls": 2, "input_tokens": 30, "output_tokens": 5, "cost_usd": 0.00125}}
    assert summary_line("t1", s, priced) == "(thread t1 · 3 steps · 4 tool calls · 35 tokens · $0.0013)"
    unpriced = {"usage": {**priced["usage"], "cost_usd": None}}
    assert summary_line("t1", s, unpriced) == "(thread t1 · 3 steps · 4 tool calls · 35 tokens · cost unknown)"
    one = RunSummary()
    for ev in events[:2] + [{"event": "step_result", "step": "w1", "ok": True}, {"event": "usage", "total_tokens": 1}]:
        one.add(ev)
    assert summary_line("t1", one) == "(thread t1 · 1 step · 1 tool call · 1 token · cost unknown)"  # not '1 steps'


def test_result_json_of_a_halted_planner_run():
    s = RunSummary()
    s.add({"event": "step_result", "step": "a", "tool": "read_file", "status": "failed", "ok": False,
           "error": "not found", "attempts": 1, "args": {"path": "m.txt"}})
    plan = {"steps": [{"id": "a", "tool": "read_file", "args": {"path": "m.txt"}}]}
    final = {
        "answer": "could not", "status": "halted", "plan": plan, "tool_calls_made": 1,
        "step_results": {"a": {"id": "a", "tool": "read_file", "args": {"path": "m.txt"}, "status": "failed",
                               "error": "not found", "attempts": 1, "round": 1}},
        "halt": {"steps": ["a"], "errors": {"a": "not found"}},
    }
    out = result_json(final, "t", s)
    assert out["status"] == "halted" and out["graph_status"] == "halted"
    assert out["error"] == "step 'a' failed: not found"
    assert [(e["id"], e["status"], e["error"]) for e in out["steps"]] == [("a", "failed", "not found")]
    assert out["plan"] == plan and out["tool_calls_made"] == 1 and out["steps_run"] == 1


def test_result_json_of_a_fleet_run_has_each_subtasks_result():
    final = {
        "answer": "both", "status": "done", "subtasks": [{"id": "w1", "task": "a"}, {"id": "w2", "task": "b"}],
        "results": {"w1": {"id": "w1", "task": "a", "ok": True, "answer": "A", "usage": {}, "round": 1},
                    "w2": {"id": "w2", "task": "b", "ok": False, "answer": "", "error": "boom", "round": 1}},
    }
    out = result_json(final, "t", RunSummary())
    assert out["status"] == "completed"
    assert [(s["id"], s["ok"], s["answer"], s.get("error")) for s in out["subtasks"]] == [
        ("w1", True, "A", None), ("w2", False, "", "boom")
    ]


def test_conversation_so_far_leaves_out_the_current_task_and_tool_traffic():
    earlier = [HumanMessage("I am Ada"), AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}]),
               ToolMessage("r", tool_call_id="1"), AIMessage("Hello Ada")]
    assert conversation_so_far({"messages": earlier}) == "User: I am Ada\nYou: Hello Ada"
    assert conversation_so_far({"messages": [*earlier, HumanMessage("Who am I?")]}) == "User: I am Ada\nYou: Hello Ada"
    assert conversation_so_far({"messages": [HumanMessage("only the task")]}) == ""
    many = [HumanMessage(f"line {i}") if i % 2 == 0 else AIMessage(f"reply {i}") for i in range(30)]
    assert conversation_so_far({"messages": many}).count("\n") == HISTORY_MESSAGES - 1


def test_with_history_prefixes_the_earlier_turns_only_when_there_are_any():
    assert with_history("Task: t", "") == "Task: t"
    prompt = with_history("Task: t", "User: I am Ada")
    assert prompt.startswith("Conversation so far") and "User: I am Ada" in prompt and prompt.endswith("Task: t")
