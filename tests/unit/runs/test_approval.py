"""Human review: approval.py's payloads and checks, the route to the human node and which
calls need a human (nodes/human.py), on hand-built values."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from smart_agent.config.checks import approve_rules, approve_valid
from smart_agent.config.context import AgentContext
from smart_agent.nodes.human import human_calls, needs_human
from smart_agent.nodes.routes import END, reviewed, route_after_agent
from smart_agent.policies.review import reviewed_message
from smart_agent.runs.approval import (
    ReviewError,
    allowed_decisions,
    allowed_of,
    answer_of,
    check_decisions,
    is_question,
    is_review_request,
    needs_approval,
    question_request,
    rejection_text,
    review_request,
)
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.registry import ToolMeta

REQUESTS = [{"name": "write_file", "args": {"path": "a", "content": "x"}}, {"name": "send", "args": {}}]


def ai(*calls):
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)])


def test_needs_approval_by_setting():
    assert not needs_approval("write_file", "none", True)
    assert not needs_approval("write_file", None, True)
    assert needs_approval("write_file", "side-effects", True)
    assert not needs_approval("read_file", "side-effects", False)
    assert needs_approval("read_file", "read_file, calculator", False)
    assert not needs_approval("write_file", "read_file", True)
    assert needs_approval("write_file", "read_file,side-effects", True)


def test_review_request_has_the_hitl_shape():
    value = review_request(REQUESTS)
    assert is_review_request(value) and not is_question(value)
    assert [a["name"] for a in value["action_requests"]] == ["write_file", "send"]
    assert value["action_requests"][0]["args"] == {"path": "a", "content": "x"}
    assert "Tool: write_file" in value["action_requests"][0]["description"]
    assert value["review_configs"][1] == {"action_name": "send", "allowed_decisions": ["approve", "edit", "reject"]}


def test_check_decisions_normalizes_each_kind():
    edit = {"type": "edit", "edited_action": {"name": "send", "args": {"to": "x"}}}
    out = check_decisions({"decisions": [{"type": "reject"}, edit]}, REQUESTS)
    assert out == [{"type": "reject", "message": ""}, {"type": "edit", "name": "send", "args": {"to": "x"}}]
    assert check_decisions([{"type": "approve"}, {"type": "approve"}], REQUESTS) == [{"type": "approve"}] * 2


@pytest.mark.parametrize(
    ("resume", "error"),
    [
        ("yes", 'must be {"decisions": [...]}'),
        ({"decisions": [{"type": "approve"}]}, "2 tool call(s) wait for review but 1 decision(s) were given"),
        ({"decisions": [{"type": "ok"}, {"type": "approve"}]}, "decision 1: type must be one of approve, edit, reject"),
        ({"decisions": [{"type": "approve"}, {"type": "reject", "message": 3}]}, "decision 2: a reject's message"),
        ({"decisions": [{"type": "edit"}, {"type": "approve"}]}, 'decision 1: an edit needs "edited_action"'),
        (
            [{"type": "edit", "edited_action": {"name": "rm", "args": {}}}, {"type": "approve"}],
            "decision 1: an edit may change the arguments of 'write_file', not call 'rm'",
        ),
    ],
)
def test_check_decisions_refuses_what_does_not_answer(resume, error):
    with pytest.raises(ReviewError) as info:
        check_decisions(resume, REQUESTS)
    assert error in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("write_file=approve/reject", True),
        ("side-effects=respond, calculator", True),
        ("write_file=approve/approve", False),
        ("write_file=maybe", False),
        ("write_file=", False),
        ("=approve", False),
    ],
)
def test_an_approve_entry_may_name_its_decisions(value, valid):
    assert approve_valid(value) is valid


def test_allowed_decisions_per_tool_then_side_effects_then_the_default():
    setting = "write_file=approve/reject,side-effects=respond,calculator"
    assert approve_rules(setting)["write_file"] == ("approve", "reject")
    assert allowed_decisions("write_file", setting, True) == ("approve", "reject")  # its own entry first
    assert allowed_decisions("shell", setting, True) == ("respond",)
    assert allowed_decisions("calculator", setting, False) == ("approve", "edit", "reject")
    assert needs_approval("write_file", setting, False) and needs_approval("shell", setting, True)


def test_a_decision_the_request_does_not_allow_is_refused():
    value = review_request(REQUESTS, [("approve", "reject"), ("respond",)])
    assert [c["allowed_decisions"] for c in value["review_configs"]] == [["approve", "reject"], ["respond"]]
    allowed = allowed_of(value)
    ok = check_decisions([{"type": "reject"}, {"type": "respond", "message": "42"}], REQUESTS, allowed)
    assert ok[1] == {"type": "respond", "message": "42"}
    edit = {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "b"}}}
    with pytest.raises(ReviewError, match="decision 1: type must be one of approve, reject for 'write_file'"):
        check_decisions([edit, {"type": "respond", "message": "42"}], REQUESTS, allowed)
    with pytest.raises(ReviewError, match="decision 2: type must be one of respond"):
        check_decisions([{"type": "approve"}, {"type": "approve"}], REQUESTS, allowed)
    with pytest.raises(ReviewError, match="a respond needs"):
        check_decisions([{"type": "approve"}, {"type": "respond"}], REQUESTS, allowed)


def test_questions_and_answers():
    assert question_request("Which file?") == {"question": "Which file?"}
    assert is_question({"question": "q"}) and not is_review_request({"question": "q"})
    assert answer_of("b.txt") == "b.txt" and answer_of({"answer": "b.txt"}) == "b.txt"
    with pytest.raises(ReviewError, match="must be text"):
        answer_of({"decisions": []})


def test_rejection_text_carries_the_message():
    assert rejection_text("write_file", "c1", " not allowed ").endswith(": not allowed")
    assert "it was not run" in rejection_text("write_file", "c1", "")


def test_route_after_agent_goes_through_human_only_when_asked():
    state = {"messages": [HumanMessage("q"), ai(("write_file", {}))]}
    assert route_after_agent(state) == "tools"
    assert route_after_agent(state, True) == "human"
    assert route_after_agent({"messages": [HumanMessage("q"), AIMessage("done")]}, True) == END
    assert route_after_agent({**state, "bookkeeping": {"finalize": True}}, True) == END


def test_reviewed_binds_the_predicate_under_the_default_context_outside_a_run():
    seen = []

    def check(state, ctx):
        seen.append(ctx)
        return True

    edge = reviewed(route_after_agent, check)
    assert edge.invoke({"messages": [ai(("x", {}))]}) == "human"
    assert isinstance(seen[0], AgentContext) and edge.name == "route_after_agent"


def test_human_calls_by_setting_side_effects_and_ask_user():
    @tool
    def mail(to: str) -> str:
        """Send mail."""
        return "sent"

    registry = default_registry(entry_points=False)
    registry.register(mail, ToolMeta(side_effects=True, source="plugin:mail.py"))
    message = ai(
        ("read_file", {"path": "a"}), ("write_file", {"path": "a", "content": ""}), ("mail", {"to": "x"}),
        ("ask_user", {"question": "Which?"}), ("ask_user", {"question": " "}), ("nope", {}),
    )
    side = AgentContext(approve="side-effects", ask_user=True)
    review, questions = human_calls(registry, side, message)
    assert [c["name"] for c in review] == ["write_file", "mail"]
    assert [c["id"] for c in questions] == ["c3"]  # an empty question is the tools node's invalid call
    review, questions = human_calls(registry, AgentContext(approve="read_file,nope"), message)
    assert [c["name"] for c in review] == ["read_file"] and questions == []  # unknown tools: the tools node's
    capped = AgentContext(approve="side-effects", ask_user=True, max_tool_calls_per_turn=2)
    assert [c["name"] for c in human_calls(registry, capped, message)[0]] == ["write_file"]  # mail is past the cap
    check = needs_human(registry)
    assert check({"messages": [message]}, side)
    assert not check({"messages": [message]}, AgentContext())
    assert not check({"messages": [ai(("read_file", {"path": "a"}))]}, side)


def test_reviewed_message_per_kind():
    call = {"name": "write_file", "id": "c1"}
    rejected = reviewed_message(call, {"type": "reject", "message": "no"})
    assert rejected.status == "error" and rejected.content == rejection_text("write_file", "c1", "no")
    answered = reviewed_message({"name": "ask_user", "id": "q"}, {"type": "answer", "text": "blue"})
    assert answered.status == "success" and answered.content == "blue" and answered.tool_call_id == "q"
    refused = reviewed_message(call, {"type": "refuse", "message": "Not run: x"})
    assert refused.status == "error" and refused.content == "Not run: x"
