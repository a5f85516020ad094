"""The structured-reply package: JSON out of text (json-repair kept honest), submissions, feedback,
and the one text-shortening helper."""

from __future__ import annotations

import itertools

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from smart_agent.nodes.planner.validate import find_cycles
from smart_agent.replies.feedback import feedback
from smart_agent.replies.parse import (
    REPAIR_MAX_CHARS,
    ReplySyntaxError,
    extract_json,
    parse_json_answer,
    unexplained_character,
)
from smart_agent.replies.submit import (
    bind_submit,
    find_submission,
    reply_payload,
    submit_tool,
)
from smart_agent.runs.events import clip, preview
from smart_agent.testing.fake_models import ScriptedChatModel


@pytest.mark.parametrize("text", ['{"a": 1 @@ }', '{"a": =>1}', '{"a": 1; "b": 2}', "{nope"])
def test_repair_never_swallows_text_it_does_not_understand(text):
    with pytest.raises(ReplySyntaxError, match="invalid JSON"):
        extract_json(text)


def test_characters_in_strings_and_comments_do_not_block_a_repair():
    assert unexplained_character("{'a': 'x@y;', // @ here\n b: 2, /* => */ # ;\n}") is None
    assert extract_json("{'a': 'x@y;', // note\n b: 2,}") == {"a": "x@y;", "b": 2}
    assert unexplained_character('{"a": 1 @}') == "@"


def test_long_text_is_read_strictly_only():
    broken = "{'a': '" + "x" * REPAIR_MAX_CHARS + "'}"
    with pytest.raises(ReplySyntaxError, match="invalid JSON"):
        extract_json(broken)
    assert extract_json(broken.replace("'", '"'))["a"].startswith("x")


def test_preferred_values_win_and_strict_beats_repaired():
    text = 'first [1, 2] then {"steps": []}'
    assert extract_json(text) == [1, 2]
    assert extract_json(text, prefer=lambda v: isinstance(v, dict)) == {"steps": []}
    assert extract_json("```\n{'a': 1}\n```\n[2]") == [2]  # the strictly valid candidate wins


def test_final_answers_are_read_strictly():
    assert parse_json_answer("{'a': 1}")[1].startswith("not valid JSON")
    assert parse_json_answer("Result:\n```json\n[1]\n```") == ([1], None)
    assert parse_json_answer("  ") == (None, "the answer is empty; expected a JSON object")


def test_find_cycles_one_per_strongly_connected_group():
    edges = {"a": ["b"], "b": ["a", "c"], "c": ["d"], "d": ["c", "b"], "e": ["e"], "f": ["a"]}
    cycles = find_cycles(["a", "b", "c", "d", "e", "f"], edges)
    assert [c[0] for c in cycles] == ["a", "e"] and cycles[1] == ["e", "e"]
    first = cycles[0]
    assert first[0] == first[-1] and all(b in edges[a] for a, b in itertools.pairwise(first))


def test_submission_shapes():
    call = AIMessage(content="", tool_calls=[{"name": "submit", "args": {"x": 1}, "id": "c1"}])
    assert reply_payload(call, "submit") == ({"x": 1}, None)
    bad = AIMessage(content="", invalid_tool_calls=[{"name": "submit", "args": "{'x': 2,}", "id": "c2", "error": None}])
    assert reply_payload(bad, "submit") == ({"x": 2}, None)
    other = AIMessage(content="", tool_calls=[{"name": "search", "args": {}, "id": "c3"}])
    assert find_submission(other, "submit").called == ["search"]
    assert reply_payload(other, "submit") == (None, "expected a submit call or JSON, got a call to search")
    assert reply_payload(AIMessage(content="no idea"), "submit")[1].startswith("no JSON found in the reply")
    parsed = AIMessage(content="", additional_kwargs={"parsed": {"y": 3}})
    assert find_submission(parsed, "submit").value == {"y": 3}


def test_feedback_answers_every_call_and_drops_malformed_ones():
    response = AIMessage(
        content="", tool_calls=[{"name": "a", "args": {}, "id": "1"}, {"name": "b", "args": {}, "id": "2"}],
        invalid_tool_calls=[{"name": "c", "args": "{", "id": "3", "error": None}],
    )
    ai, first, second = feedback(response, ["bad"])
    assert isinstance(ai, AIMessage) and [c["id"] for c in ai.tool_calls] == ["1", "2"] and not ai.invalid_tool_calls
    assert isinstance(first, ToolMessage) and "- bad" in first.content and second.content == "See the errors above."
    plain = feedback(AIMessage(content=""), ["x"], text="fix it", empty="(no plan)")
    assert plain[0].content == "(no plan)" and isinstance(plain[1], HumanMessage) and plain[1].content == "fix it"


def test_bind_submit_binds_or_falls_back():
    model = ScriptedChatModel(responses=[])
    tool = submit_tool("submit", "Submit.", {"x": {"type": "string"}}, ["x"])
    bind_submit(model, [tool], tool_choice="submit")
    assert model.bind_tools_calls[-1] == ["submit"]

    class NoTools(ScriptedChatModel):
        def bind_tools(self, *args, **kwargs):
            raise NotImplementedError

    plain = NoTools(responses=[])
    assert bind_submit(plain, [tool]) is plain


def test_clip_is_the_one_shortener():
    assert clip("short", 10) == "short"
    assert clip("abc  defghi", 6) == "abc…" and len(clip("x" * 50, 10)) == 10
    assert clip("abcdef", 3, "... [{cut} more characters]", within=False) == "abc... [3 more characters]"
    assert preview("y" * 12, 4) == "yyyy… [12 chars]"


def test_sanitize_reply_finds_lone_surrogates_anywhere_in_the_calls():
    from smart_agent.replies.guard import sanitize_reply

    clean = AIMessage("plain é text", tool_calls=[{"name": "t", "args": {"a": [1, {"b": "ok"}]}, "id": "c1"}])
    assert sanitize_reply(clean) is clean  # nothing to replace: the reply itself, no copy
    deep: dict = {"v": "x\ud800"}
    for _ in range(2000):  # deeper than the recursion limit: the walk is a loop
        deep = {"k": [deep]}
    for args, where in (({"a": [1, {"b": "bad\udce9"}]}, "value"), ({"k\ud800": 1}, "key")):
        reply = sanitize_reply(AIMessage("", tool_calls=[{"name": "t", "args": args, "id": "c1"}]))
        assert "\ud800" not in repr(reply.tool_calls) and "\udce9" not in repr(reply.tool_calls), where
    reply = sanitize_reply(AIMessage("", tool_calls=[{"name": "t", "args": deep, "id": "c1"}]))
    inner = reply.tool_calls[0]["args"]
    for _ in range(2000):
        inner = inner["k"][0]
    assert inner == {"v": "x\ufffd"}
    assert sanitize_reply(AIMessage("caf\udce9")).content == "caf\ufffd"
    # What only looks like one where the first look reads the reply's repr: a backslash the text
    # holds, a code point beside the surrogates that repr escapes too; then one behind them
    for text in ("C:\\udir\\udfff", "\ud7ff \ue000 \U0001f600"):
        looks = AIMessage(text, tool_calls=[{"name": "t", "args": {"p": text}, "id": "c1"}])
        assert sanitize_reply(looks) is looks
    hidden = AIMessage("C:\\ud800", tool_calls=[{"name": "t", "args": {"p": "\\ud", "q": ["\udbff"]}, "id": "c1"}])
    assert sanitize_reply(hidden).tool_calls[0]["args"] == {"p": "\\ud", "q": ["\ufffd"]}
