"""cli/review.py's pure helpers: decisions from flags and files, the terminal prompt with a
scripted reader, what a paused run prints, the recorded run metadata, the event lines."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest

from smart_agent.cli import resume, review
from smart_agent.cli.render import format_event
from smart_agent.runs.approval import ReviewError, question_request, review_request

REVIEW = review_request([{"name": "write_file", "args": {"path": "a", "content": "x"}},
                         {"name": "calculator", "args": {"expression": "1+1"}}])
QUESTION = question_request("Which colour?")
PLAN = {"type": "plan_approval", "task": "t", "plan": {"steps": [{"id": "s", "tool": "calculator", "args": {}}]}}


def interrupt(value, id_="i1"):
    return SimpleNamespace(id=id_, value=value)


def reader(*lines):
    it = iter(lines)
    return lambda: next(it, "")


def test_flag_decisions_per_kind():
    assert resume.flag_decision(REVIEW, approve=True) == {"decisions": [{"type": "approve"}] * 2}
    assert resume.flag_decision(REVIEW, reject="no") == {"decisions": [{"type": "reject", "message": "no"}] * 2}
    edited = resume.flag_decision(REVIEW, edit={"path": "b"})
    assert [d["edited_action"] for d in edited["decisions"]] == [
        {"name": "write_file", "args": {"path": "b"}}, {"name": "calculator", "args": {"path": "b"}}
    ]
    with pytest.raises(ReviewError, match="JSON object"):
        resume.flag_decision(REVIEW, edit=[1])
    with pytest.raises(ReviewError, match="not an answer"):
        resume.flag_decision(REVIEW, answer="x")
    assert resume.flag_decision(QUESTION, answer="teal") == "teal"
    with pytest.raises(ReviewError, match="--answer"):
        resume.flag_decision(QUESTION, approve=True)
    assert resume.flag_decision(PLAN, approve=True) == {"action": "approve"}
    assert resume.flag_decision(PLAN, reject="") == {"action": "reject", "reason": ""}
    assert resume.flag_decision(PLAN, edit={"steps": []}) == {"action": "edit", "plan": {"steps": []}}
    assert resume.flag_decision({"custom": 1}, answer="x") == "x"


def test_file_decisions_split_across_pending_reviews():
    one = review_request([{"name": "write_file", "args": {}}])
    pending = [interrupt(REVIEW, "i1"), interrupt(one, "i2")]
    decisions = [{"type": "approve"}, {"type": "reject", "message": "m"}, {"type": "approve"}]
    assert resume.file_decisions(pending, {"decisions": decisions}) == [
        {"decisions": decisions[:2]}, {"decisions": decisions[2:]}
    ]
    with pytest.raises(ReviewError, match="3 tool call"):
        resume.file_decisions(pending, decisions[:2])
    with pytest.raises(ReviewError, match="type must be"):
        resume.file_decisions(pending, [{"type": "maybe"}] * 3)
    with pytest.raises(ReviewError, match="other requests"):
        resume.file_decisions([interrupt(REVIEW), interrupt(QUESTION, "i2")], decisions[:2])
    assert resume.file_decisions([interrupt(PLAN)], {"action": "approve"}) == [{"action": "approve"}]


def test_resume_value_maps_answers_by_interrupt_id():
    assert review.resume_value([interrupt(QUESTION, "a"), interrupt(QUESTION, "b")], ["x", "y"]) == {"a": "x", "b": "y"}
    assert review.resume_value([SimpleNamespace(id=None, value=QUESTION)], ["x"]) == "x"


def test_ask_terminal_review_question_and_end_of_input():
    out = io.StringIO()
    pending = [interrupt(REVIEW, "r"), interrupt(QUESTION, "q")]
    lines = reader("maybe\n", "e\n", "{bad\n", "e [1]\n", "e {\"path\": \"b\"}\n", "r not this one\n", "teal\n")
    value = review.ask_terminal(pending, read=lines, out=out)
    assert value == {
        "r": {"decisions": [
            {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "b"}}},
            {"type": "reject", "message": "not this one"},
        ]},
        "q": "teal",
    }
    text = out.getvalue()
    assert "answer a, e or r" in text and "not valid JSON" in text and "must be a JSON object" in text
    assert "? Which colour?" in text and 'args: {"content": "x", "path": "a"}' in text
    assert review.ask_terminal(pending, read=reader("a\n"), out=out) is None  # input ended: stays paused
    assert review.ask_terminal([interrupt(PLAN)], read=reader("a\n"), out=out) == {"i1": {"action": "approve"}}


def test_what_a_paused_run_prints():
    pending = [interrupt(REVIEW), interrupt(QUESTION, "i2")]
    message = review.interrupted_message("t 1", pending)
    assert message.splitlines()[0] == (
        "smart-agent: paused on thread t 1: 2 tool call(s) wait for review; 1 question(s) wait for an answer; "
        "nothing more runs until resumed."
    )
    assert "  ? Which colour?" in message and '  2. calculator({"expression": "1+1"})' in message
    assert message.splitlines()[-1].startswith("continue with: smart-agent resume --thread 't 1' (--approve")
    out = review.interrupted_json({"answer": "", "thread_id": "t", "status": "planned"}, pending)
    assert out["status"] == "interrupted" and out["interrupts"][1] == {"id": "i2", "value": QUESTION}
    assert json.loads(json.dumps(out)) == out


def test_recorded_run_round_trip():
    metadata = review.run_metadata("planner", {"workspace": "/w", "tools": ["calculator"]})
    assert all(isinstance(v, str) for v in metadata.values())  # LangGraph keeps only scalar metadata
    assert review.recorded_run(metadata) == ("planner", {"workspace": "/w", "tools": ["calculator"]})
    assert review.recorded_run({}) == (None, {})
    assert review.recorded_run({review.RUN_METADATA: "{not json"}) == (None, {})
    assert review.recorded_run({review.RUN_METADATA: '{"graph": 1, "context": []}'}) == (None, {})


def test_ask_user_is_on_in_chat_unless_turned_off():
    from smart_agent.cli import build_parser
    from smart_agent.cli.context_args import context_values

    def values(*argv: str) -> dict:
        out = context_values(build_parser().parse_args(list(argv)))
        return {k: v for k, v in out.items() if k in ("ask_user", "approve")}

    assert values("chat") == {"ask_user": True}
    assert values("chat", "--no-ask-user") == {"ask_user": False}
    assert values("run", "t") == {}
    assert values("run", "t", "--ask-user", "--approve", "write_file") == {"ask_user": True, "approve": "write_file"}


def test_event_lines():
    call = {"id": "call_1", "name": "write_file", "args": {"path": "a"}}
    assert format_event({"event": "approval_requested", "calls": [call]}) == (
        '  ⏸ waiting for approval: write_file({"path": "a"})'
    )
    step = {"id": "save", "name": "write_file", "args": {"path": "a"}}
    assert format_event({"event": "approval_requested", "requests": [step]}).endswith('save: write_file({"path": "a"})')
    assert format_event({"event": "approval", "name": "write_file", "decision": "approve"}) == "  ✓ approved write_file"
    rejected = {"event": "approval", "name": "w", "decision": "reject", "message": "no"}
    assert format_event(rejected) == "  ✗ rejected w: no"
    assert "edited arguments" in format_event({"event": "approval", "name": "w", "decision": "edit", "args": {}})
    assert format_event({"event": "question", "question": "Why?"}) == "  ? the agent asks: Why?"
    assert format_event({"event": "answer", "preview": "teal"}) == "  ↳ answered: teal"


def test_resume_context_is_the_recorded_flags_overridden_by_the_given_ones(tmp_path):
    from smart_agent.cli import build_parser
    from smart_agent.cli.context_args import context_from_args

    args = build_parser().parse_args(["resume", "--thread", "t", "--approve", "--model", "openai:now", "--no-ask-user"])
    assert args.graph is None and args.decide_approve is True and not hasattr(args, "approve")
    args.graph = "agent"
    recorded = {"model": "openai:then", "workspace": str(tmp_path), "approve": "write_file", "ask_user": True}
    ctx = context_from_args(args, base=recorded)
    assert (ctx.model, ctx.workspace, ctx.approve, ctx.ask_user) == ("openai:now", str(tmp_path), "write_file", False)
