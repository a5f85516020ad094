"""Record/replay cassettes (smart_agent/cassette): normalization, the exact and tolerant
matches, the choice among recorded interactions, the file format and the miss message."""

from __future__ import annotations

import copy
import json

import pytest

from smart_agent.cassette import (
    Cassette,
    CassetteError,
    Interaction,
    Recorder,
    ReplayMiss,
    endpoint,
    exact_key,
    load_interactions,
    miss_from_error,
    normalize_request,
    tolerant_key,
)

PATH = "/v1/chat/completions"


def conversation(**changes):
    """A request after one tool call: system, user, assistant tool call, tool result."""
    body = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "You are an agent. Workspace /tmp/a."},
            {"role": "user", "content": "What is 37*43?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_abc", "type": "function",
                     "function": {"name": "calculator", "arguments": '{"expression": "37*43"}'}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_abc", "content": "1591 (archived as exec-1)"},
        ],
        "tools": [{"type": "function", "function": {"name": "calculator", "description": "math", "parameters": {}}}],
    }  # fmt: skip
    for key, value in changes.items():
        body[key] = value
    return body


def edited(body, fn):
    body = copy.deepcopy(body)
    fn(body)
    return body


def test_endpoint_drops_the_api_prefix():
    assert endpoint("/v1/chat/completions") == "chat/completions"
    assert endpoint("/openai/v1/chat/completions?x=1") == "chat/completions"
    assert endpoint("/api/chat") == "api/chat"


def test_normalize_drops_volatile_fields_renames_ids_and_canonicalizes_arguments():
    body = conversation(user="u-1", metadata={"run": "x"})
    norm = normalize_request(body)
    assert "stream_options" not in norm and "user" not in norm and "metadata" not in norm
    call = norm["messages"][2]["tool_calls"][0]
    assert call["id"] == "id-1" and norm["messages"][3]["tool_call_id"] == "id-1"  # still paired
    assert call["function"]["arguments"] == '{"expression":"37*43"}'
    assert body["messages"][2]["tool_calls"][0]["id"] == "call_abc"  # the input is not changed


def test_exact_key_ignores_volatile_fields_ids_key_order_and_argument_spacing():
    base = exact_key(PATH, conversation())
    other_ids = edited(conversation(), lambda b: (
        b["messages"][2]["tool_calls"][0].update(id="call_zzz"), b["messages"][3].update(tool_call_id="call_zzz")))
    spaced = edited(conversation(), lambda b: b["messages"][2]["tool_calls"][0]["function"].update(
        arguments='{ "expression" :  "37*43" }'))
    reordered = dict(reversed(list(conversation(stream_options={"include_usage": False}).items())))
    for body in (other_ids, spaced, reordered):
        assert exact_key(PATH, body) == base
    assert exact_key("/other/v1/chat/completions", conversation()) == base  # another base URL


def test_exact_key_differs_for_any_other_content():
    base = exact_key(PATH, conversation())
    assert exact_key(PATH, edited(conversation(), lambda b: b["messages"][0].update(content="Other prompt"))) != base
    assert exact_key(PATH, edited(conversation(), lambda b: b["messages"][3].update(content="1591"))) != base
    assert exact_key(PATH, conversation(stream=False)) != base
    assert exact_key("/v1/responses", conversation()) != base


def test_tolerant_key_ignores_system_text_and_tool_results_but_not_the_conversation():
    base = tolerant_key(PATH, conversation())
    assert exact_key(PATH, conversation()) != base
    same = [
        edited(conversation(), lambda b: b["messages"][0].update(content="Another prompt, other memories")),
        edited(conversation(), lambda b: b["messages"][3].update(content="1591 (archived as exec-2)")),
        edited(conversation(), lambda b: b["tools"][0]["function"].update(description="other words")),
    ]
    for body in same:
        assert tolerant_key(PATH, body) == base
    different = [
        edited(conversation(), lambda b: b["messages"][1].update(content="What is 37*44?")),
        edited(conversation(), lambda b: b["messages"][2]["tool_calls"][0]["function"].update(arguments='{"e": 1}')),
        edited(conversation(), lambda b: b["messages"][2]["tool_calls"][0]["function"].update(name="python")),
        edited(conversation(), lambda b: b["messages"].pop()),
        conversation(model="m2"),
        conversation(stream=False),
        conversation(tools=[]),
        conversation(tool_choice="required"),
    ]
    for body in different:
        assert tolerant_key(PATH, body) != base


def test_tolerant_key_ignores_anthropic_style_system_and_tool_result_blocks():
    def anthropic(system, result):
        return {
            "model": "claude", "system": system, "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "ls", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": result}]},
            ],
        }  # fmt: skip

    assert tolerant_key("/v1/messages", anthropic("a", "x")) == tolerant_key("/v1/messages", anthropic("b", "y"))
    assert exact_key("/v1/messages", anthropic("a", "x")) != exact_key("/v1/messages", anthropic("a", "y"))


def interaction(seq, body, content="{}", content_type="application/json", status=200):
    return Interaction(
        seq=seq, method="POST", url="http://h/v1/chat/completions", path=PATH, body=body, status=status,
        headers={"content-type": content_type}, content=content.encode(),
    )  # fmt: skip


def write(folder, *interactions):
    recorder = Recorder(folder)
    for i in interactions:
        recorder.write(i)


def test_find_prefers_exact_then_tolerant_then_reuses_the_last(tmp_path):
    first, second = conversation(), edited(conversation(), lambda b: b["messages"][0].update(content="v2"))
    third = edited(conversation(), lambda b: b["messages"][0].update(content="v3"))
    write(tmp_path, interaction(1, first, '{"n": 1}'), interaction(2, first, '{"n": 2}'),
          interaction(3, second, '{"n": 3}'))  # fmt: skip
    cassette = Cassette(tmp_path)
    assert cassette.find(PATH, second).seq == 3  # exact wins over the tolerant candidates 1 and 2
    assert cassette.find(PATH, third).seq == 1  # no exact one: the first unused of the same conversation
    answers = [cassette.find(PATH, first).content for _ in range(2)]
    assert answers == [b'{"n": 2}', b'{"n": 2}']  # 1 was replayed: the next unused, then the last again
    assert cassette.find(PATH, third).seq == 3  # every tolerant candidate replayed: the last one
    assert cassette.matches == [(3, "exact"), (1, "tolerant"), (2, "exact"), (2, "exact"), (3, "tolerant")]
    assert cassette.find(PATH, conversation(model="other")) is None


def test_a_miss_is_one_line_naming_the_request(tmp_path):
    write(tmp_path, interaction(1, conversation()))
    cassette = Cassette(tmp_path)
    body = edited(conversation(), lambda b: b["messages"][1].update(content="What is\n37*44?"))
    with pytest.raises(ReplayMiss) as info:
        cassette.answer(PATH, body)
    message = str(info.value)
    assert "\n" not in message
    assert "chat/completions" in message and "model=m" in message and "'What is 37*44?'" in message
    assert str(tmp_path) in message and "1 recorded" in message
    assert isinstance(info.value, ValueError)  # the CLI's one-line, exit-2 kind


def test_file_forms_round_trip(tmp_path):
    sse = 'data: {"a": 1}\n\ndata: [DONE]\n\n'
    write(
        tmp_path,
        interaction(1, {"m": 1}, '{"id": "x", "usage": {"total_tokens": 3}}'),
        interaction(2, {"m": 2}, sse, "text/event-stream"),
        interaction(3, {"m": 3}, "plain text", "text/plain"),
        Interaction(seq=4, method="POST", url="u", path=PATH, body={"m": 4}, status=500, headers={},
                    content=b"\xff\xfe"),
    )  # fmt: skip
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["0001.json", "0002.json", "0003.json", "0004.json"]
    raw = [json.loads((tmp_path / f).read_text())["response"] for f in files]
    assert raw[0]["json"] == {"id": "x", "usage": {"total_tokens": 3}}
    assert raw[1]["events"] == ['data: {"a": 1}', "data: [DONE]"]
    assert raw[2]["body"] == "plain text" and "body_base64" in raw[3]
    loaded = load_interactions(tmp_path)
    assert json.loads(loaded[0].content) == {"id": "x", "usage": {"total_tokens": 3}}
    assert loaded[1].content == sse.encode() and loaded[2].content == b"plain text"
    assert loaded[3].content == b"\xff\xfe" and loaded[3].status == 500


def test_recorder_numbers_after_existing_files_and_claims_exclusively(tmp_path):
    write(tmp_path, interaction(1, {"a": 1}), interaction(2, {"a": 2}))
    one, two = Recorder(tmp_path), Recorder(tmp_path)
    assert [one.claim(), two.claim(), one.claim()] == [3, 4, 5]  # two recorders never share a number
    assert (tmp_path / "0004.json").read_text() == ""
    assert [i.seq for i in load_interactions(tmp_path)] == [1, 2]  # claimed, unanswered files are skipped


def test_bad_folders_and_files_are_one_line_errors(tmp_path):
    with pytest.raises(CassetteError, match="does not exist"):
        Cassette(tmp_path / "missing")
    (tmp_path / "0001.json").write_text("{not json")
    with pytest.raises(CassetteError, match=r"cassette file .*0001\.json: not valid JSON \(.* at line 1 column 2\)"):
        Cassette(tmp_path)
    (tmp_path / "0001.json").write_text(json.dumps({"format": "other/1"}))
    with pytest.raises(CassetteError, match="not a recorded interaction"):
        Cassette(tmp_path)


def test_miss_from_error_reads_the_miss_response():
    class Response:
        def __init__(self, headers, body):
            self.headers, self.content = headers, json.dumps(body).encode()

    class ClientError(Exception):
        def __init__(self, response):
            self.response = response

    miss = miss_from_error(
        ClientError(Response({"x-smart-agent-replay": "miss"}, {"error": {"message": "replay: no recorded x"}}))
    )
    assert isinstance(miss, ReplayMiss) and str(miss) == "replay: no recorded x"
    assert miss_from_error(ClientError(Response({}, {"error": {"message": "bad request"}}))) is None
    assert miss_from_error(ValueError("no response")) is None
    assert miss_from_error(miss) is miss


async def test_a_summary_request_the_cassette_lacks_fails_the_run_instead_of_a_digest():
    """A failed summary call falls back to a digest, but a replay miss is not hidden: the run
    fails naming the summary request (nodes/summarize.py)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from smart_agent.config.context import AgentContext
    from smart_agent.history.budget import ContextBudget
    from smart_agent.nodes.summarize import write_summary
    from smart_agent.testing.fake_models import ScriptedChatModel

    def missing(_messages):
        raise ReplayMiss("replay: no recorded response for the summary")

    def failing(_messages):
        raise RuntimeError("summary backend down")

    call = {"name": "read_file", "args": {"path": "a.txt"}, "id": "c1"}
    compacted = [
        HumanMessage("Read a.txt"), AIMessage("", tool_calls=[call]), ToolMessage("x " * 3000, tool_call_id="c1"),
    ]  # fmt: skip
    budget = ContextBudget(lambda ctx, state: [])
    ctx = AgentContext(model="openai:m", memory=False)
    body, strategy, error = await write_summary(compacted, "Read a.txt", ctx, budget, 200, ScriptedChatModel(
        responses=[failing]))
    assert strategy == "fallback_digest" and "summary backend down" in error  # an ordinary failure: the digest
    with pytest.raises(ReplayMiss, match="the summary"):
        await write_summary(compacted, "Read a.txt", ctx, budget, 200, ScriptedChatModel(responses=[missing]))
