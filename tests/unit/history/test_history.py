"""Context management pieces on hand-built data: routing, units, compaction, tokens,
archive, todo changes, structured-output validation."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from smart_agent.config.context import Context
from smart_agent.history.digest import digest, summary_message
from smart_agent.history.groups import group_units, pairing_problems, plan_compaction, rebuild
from smart_agent.models.tokens import (
    approx_counter,
    count_messages,
    count_request,
    resolve_counter,
    text_counter,
    usable_tokens,
)
from smart_agent.nodes.routes import END, route_after_structured_output, route_after_tools, route_before_agent
from smart_agent.replies.structured import parse_json_answer, schema_problem, validate_answer
from smart_agent.sessions.archive import ToolArchive, clip_text, execution_id, make_view
from smart_agent.tools.context_tools import apply_todo_changes, render_todos
from smart_agent.tools.guards import ToolError


def call(i, n=1):
    return AIMessage("", tool_calls=[{"name": "calc", "args": {"x": i}, "id": f"c{i}_{k}"} for k in range(n)])


def results(i, n=1, size=10):
    return [ToolMessage("r" * size, tool_call_id=f"c{i}_{k}", name="calc") for k in range(n)]


# -- routing ----------------------------------------------------------------------
def test_route_before_agent_compares_prediction_with_usable_budget():
    limit = 4000
    budget = {"context_token_limit": limit}
    assert route_before_agent({}) == "agent"  # no budget in state (e.g. another graph)
    assert route_before_agent({"run_settings": budget, "request_tokens": usable_tokens(limit)}) == "agent"
    assert route_before_agent({"run_settings": budget, "request_tokens": usable_tokens(limit) + 1}) == "summarize"
    assert usable_tokens(limit) < 0.9 * limit  # headroom for counter error


def test_route_after_tools_goes_through_the_budget_check():
    over = {"request_tokens": 10_000}
    three = {"context_token_limit": 4000, "max_tool_calls": 3}
    assert route_after_tools({**over, "tool_calls_made": 1, "run_settings": three}) == "summarize"
    assert route_after_tools({**over, "tool_calls_made": 3, "run_settings": three}) == "toolLimitFinalize"


def test_route_after_structured_output():
    feedback = HumanMessage("fix it", additional_kwargs={"smart_agent": {"kind": "output_feedback"}})
    assert route_after_structured_output({"messages": [AIMessage("{}")]}) == END
    assert route_after_structured_output({"messages": [feedback]}) == "agent"
    over = {"run_settings": {"context_token_limit": 4000}, "request_tokens": 9999}
    assert route_after_structured_output({"messages": [feedback], **over}) == "summarize"


# -- units and compaction ---------------------------------------------------------------
def test_units_keep_calls_with_their_results():
    msgs = [HumanMessage("task"), call(1, 2), *results(1, 2), AIMessage("thinking"), call(2), *results(2)]
    assert group_units(msgs) == [(0, 1), (1, 4), (4, 5), (5, 7)]
    assert pairing_problems(msgs) == []
    assert pairing_problems([HumanMessage("t"), *results(1)]) == ["tool result 'c1_0' without its tool call"]
    assert pairing_problems([HumanMessage("t"), call(1, 2), results(1, 2)[0]]) == ["tool call 'c1_1' without a result"]


@pytest.mark.parametrize("keep", [0, 50, 200, 400, 10_000])
def test_compaction_never_splits_pairs_and_keeps_task_and_last_turn(keep):
    msgs = [HumanMessage("old task"), AIMessage("old answer"), HumanMessage("task")]
    for i in range(6):
        msgs += [call(i, 3), *results(i, 3, size=300)]
    kept_from, t = plan_compaction(msgs, approx_counter, keep)
    assert t == 2
    starts = {a for a, _ in group_units(msgs)}
    assert kept_from in starts | {len(msgs)}
    summary = summary_message("body", [m for i, m in enumerate(msgs[:kept_from]) if i != t], {}, 1)
    new = rebuild(msgs, kept_from, t, summary)
    assert pairing_problems(new) == []
    assert any(m.content == "task" for m in new)
    assert new[-4:] == msgs[-4:]  # the most recent turn is always kept verbatim


def test_digest_is_lossless_for_archived_and_short_outputs():
    view = ToolMessage(
        "[Large output archived ...]",
        tool_call_id="c1_0",
        name="read_file",
        additional_kwargs={"smart_agent_archive": {"execution_id": "ex_0123456789abcdef", "chars": 9000}},
    )
    lines, lossless = digest([call(1), view, call(2), *results(2, size=20)])
    assert lossless
    assert lines[0] == "- calc(x=1) → archived as ex_0123456789abcdef (9000 chars)"
    assert lines[1] == "- calc(x=2) → " + "r" * 20
    _, lossless = digest([AIMessage("a long explanation " * 40)])
    assert not lossless


def test_summary_header_lists_the_execution_ids_it_covers():
    view = ToolMessage(
        "v",
        tool_call_id="c1_0",
        name="read_file",
        additional_kwargs={"smart_agent_archive": {"execution_id": "ex_0123456789abcdef", "chars": 9000}},
    )
    s1 = summary_message("b1", [call(1), view], {"ex_0123456789abcdef": {"tool": "read_file", "args": 'path="a"'}}, 1)
    assert 'ex_0123456789abcdef read_file(path="a")' in s1.content
    s2 = summary_message("b2", [s1, AIMessage("x")], {}, 2)  # a later summary still covers it
    assert s2.additional_kwargs["smart_agent"]["execution_ids"] == ["ex_0123456789abcdef"]
    assert s2.additional_kwargs["smart_agent"]["compacted"] == 3


# -- tokens ---------------------------------------------------------------------------
def test_approx_counter_is_an_upper_bound_of_the_sent_body():
    from langchain_core.messages import convert_to_openai_messages

    msgs = [SystemMessage("sys é 中"), HumanMessage('line\n"quoted"\ttab ' * 50), call(1), *results(1)]
    body = json.dumps(
        {"model": "m", "messages": convert_to_openai_messages(msgs)}, ensure_ascii=False, separators=(",", ":")
    ).encode()
    assert count_request(approx_counter, msgs) >= len(body) / 4
    assert count_messages(approx_counter, msgs[:1]) > 0


def test_user_counters():
    words = text_counter(lambda s: len(s.split()))
    assert words([HumanMessage("a b c")]) > 0

    class Model:
        def get_num_tokens_from_messages(self, messages, tools=None):
            return 7 * len(messages)

    assert resolve_counter(Model())([HumanMessage("x")]) == 7
    assert resolve_counter(None) is approx_counter
    with pytest.raises(TypeError):
        resolve_counter(42)


# -- archive ----------------------------------------------------------------------------
async def test_file_archive_is_content_addressed(tmp_path):
    archive = ToolArchive(root=tmp_path)
    eid = await archive.put("hello " * 1000)
    assert eid == execution_id("hello " * 1000) and await archive.put("hello " * 1000) == eid
    assert await archive.get(eid) == "hello " * 1000
    assert len(list(tmp_path.rglob("*.txt"))) == 1
    assert await archive.get("ex_ffffffffffffffff") is None and await archive.get("../../etc/passwd") is None


def test_view_and_clip():
    text = "".join(f"{i:05d}" for i in range(2000))
    view = make_view(text, "ex_0123456789abcdef", "read_file", 4000)
    assert "execution_id: ex_0123456789abcdef" in view and "10000 chars" in view
    assert view.split("\n")[1] == text[:600] and view.endswith(text[-300:]) and len(view) < 1400
    clipped = clip_text(text, 1000)
    assert len(clipped) <= 1000 and clipped.startswith(text[:100]) and "characters cut" in clipped


# -- todo ----------------------------------------------------------------------------------
def test_todo_changes_and_diff():
    todos, diff = apply_todo_changes([], add=["a", "b"])
    assert [t["id"] for t in todos] == [1, 2] and len(diff["added"]) == 2
    todos, diff = apply_todo_changes(todos, update=[{"id": 1, "status": "done"}], remove=[2])
    assert todos == [{"id": 1, "content": "a", "status": "done"}]
    assert diff["updated"][0]["before"]["status"] == "pending" and diff["removed"][0]["id"] == 2
    todos, _ = apply_todo_changes(todos, add=["c"])
    assert todos[-1]["id"] == 2  # ids continue after the highest
    with pytest.raises(ToolError):
        apply_todo_changes(todos, remove=[99])
    assert "[x] 1. a (done)" in render_todos(todos)


# -- structured output ---------------------------------------------------------------------
def test_parse_and_validate():
    assert parse_json_answer('```json\n{"a": 1}\n```') == ({"a": 1}, None)
    assert parse_json_answer('Here it is: {"a": 1} hope it helps')[0] == {"a": 1}
    assert "not valid JSON" in parse_json_answer("{nope")[1]
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert validate_answer('{"a": 2}', schema) == ({"a": 2}, [])
    value, errors = validate_answer('{"a": "x"}', schema)
    assert value is None and errors == ["$.a: 'x' is not of type 'integer'"]


def test_context_validation_of_new_fields():
    assert schema_problem({"type": "object"}) is None
    with pytest.raises(ValueError, match="output_schema is not a valid JSON Schema"):
        Context(output_schema={"type": 12})
    with pytest.raises(ValueError, match="context_token_limit"):
        Context(context_token_limit=10)
    with pytest.raises(ValueError, match="archive_threshold_chars"):
        Context(archive_threshold_chars=-1)
