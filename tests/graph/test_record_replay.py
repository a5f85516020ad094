"""Record and replay (smart_agent.cassette) through the real langchain-openai client: a graph
run recorded against the scripted server replays with the server stopped, streamed or not."""

from __future__ import annotations

import contextlib
import json

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.cassette import ReplayMiss, recording, replaying
from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.chat import ModelConfigError
from smart_agent.testing.scripted_server import text, tool_call


def calculator_model(req):
    results = [m for m in req["messages"] if m["role"] == "tool"]
    if not results:
        return tool_call("calculator", {"expression": "37*43"})
    return text(f"37*43 = {results[-1]['content']}")


async def streamed_run(task, workspace, thread):
    """An agent run whose model calls stream (stream_mode "messages"): the answer, tool calls,
    usage and the text of the streamed message chunks."""
    graph = build_agent_graph(checkpointer=InMemorySaver())
    context = Context(model="openai:scripted-model", workspace=str(workspace), memory=False)
    final, pieces = {}, []
    async for mode, chunk in graph.astream(
        {"task": task}, config={"configurable": {"thread_id": thread}}, context=context,
        stream_mode=["messages", "values"],
    ):  # fmt: skip
        if mode == "messages":
            pieces.append(chunk[0].content)
        else:
            final = chunk
    calls = [(c["name"], c["args"]) for m in final["messages"] for c in getattr(m, "tool_calls", [])]
    return final["answer"], calls, final.get("usage"), "".join(p for p in pieces if isinstance(p, str))


async def test_streamed_run_replays_with_the_server_stopped(openai_server, workspace, tmp_path):
    srv = openai_server(responder=calculator_model)
    cassette = tmp_path / "cassette"
    async with recording(cassette):
        recorded = await streamed_run("What is 37*43?", workspace, "rec")
    srv.stop()
    bodies = [json.loads(p.read_text())["request"]["body"] for p in sorted(cassette.glob("*.json"))]
    assert len(bodies) == 2 and all(b["stream"] is True for b in bodies)  # the client streamed both calls
    assert recorded[0] == "37*43 = 1591" and recorded[1] == [("calculator", {"expression": "37*43"})]
    assert "37*43 = 1591" in recorded[3] and recorded[2]["model_calls"] == 2

    async with replaying(cassette) as session:
        replayed = await streamed_run("What is 37*43?", workspace, "rep")
    assert replayed == recorded  # answer, tool calls, usage and the streamed text
    assert session.cassette.matches == [(1, "exact"), (2, "exact")] and session.misses == []


async def test_streamed_conversation_replays_turn_by_turn(openai_server, workspace, tmp_path):
    """Two streamed turns on one thread (what ``chat`` does): the second turn's request holds
    the first turn, and both replay from the cassette with the server stopped."""

    def model(req):
        users = [m["content"] for m in req["messages"] if m["role"] == "user"]
        return text(f"turn {len(users)}: you said {users[-1]}")

    srv = openai_server(responder=model)
    cassette = tmp_path / "chat"

    async def conversation(thread):
        graph = build_agent_graph(checkpointer=InMemorySaver())
        context = Context(model="openai:scripted-model", workspace=str(workspace), memory=False)
        turns = []
        for line in ("I am Ada", "Who am I?"):
            streamed = []
            async for mode, chunk in graph.astream(
                {"task": line}, config={"configurable": {"thread_id": thread}}, context=context,
                stream_mode=["messages", "values"],
            ):  # fmt: skip
                if mode == "messages" and isinstance(chunk[0].content, str):
                    streamed.append(chunk[0].content)
                elif mode == "values":
                    answer = chunk.get("answer")
            turns.append((answer, "".join(streamed)))
        return turns

    async with recording(cassette):
        recorded = await conversation("rec")
    srv.stop()
    assert [a for a, _ in recorded] == ["turn 1: you said I am Ada", "turn 2: you said Who am I?"]
    assert all(answer in streamed for answer, streamed in recorded)
    bodies = [json.loads(p.read_text())["request"]["body"] for p in sorted(cassette.glob("*.json"))]
    assert [b["stream"] for b in bodies] == [True, True] and len(bodies[1]["messages"]) > len(bodies[0]["messages"])
    async with replaying(cassette) as session:
        assert await conversation("rep") == recorded
    assert session.cassette.matches == [(1, "exact"), (2, "exact")]


async def test_replay_miss_names_the_request_and_is_not_retried(openai_server, workspace, tmp_path):
    srv = openai_server(responder=calculator_model)
    async with recording(tmp_path / "c"):
        await streamed_run("What is 37*43?", workspace, "rec")
    srv.stop()
    session = replaying(tmp_path / "c")
    with pytest.raises(ReplayMiss, match=r"last user message 'What is 6\*7\?'"):
        async with session:
            await streamed_run("What is 6*7?", workspace, "rep")
    assert len(session.misses) == 1  # one request: the client did not retry the miss


async def test_a_miss_the_run_caught_is_raised_when_the_replay_ends(openai_server, tmp_path):
    """Code that catches every error (a fleet worker, a tool, a sub-agent) may turn a miss into
    a failed step and go on; the replay session raises it at its end all the same."""
    from langchain_core.messages import HumanMessage

    from smart_agent.models.chat import invoke_model, load_chat_model

    srv = openai_server([text("recorded")])
    async with recording(tmp_path / "c"):
        await invoke_model(load_chat_model("openai:scripted-model"), [HumanMessage("recorded")])
    srv.stop()
    caught = []
    with pytest.raises(ReplayMiss, match="'not recorded'"):
        async with replaying(tmp_path / "c"):
            model = load_chat_model("openai:scripted-model")
            assert (await invoke_model(model, [HumanMessage("recorded")])).content == "recorded"
            try:
                await invoke_model(model, [HumanMessage("not recorded")])
            except Exception as exc:  # swallowed, as a worker's failure would be
                caught.append(exc)
    assert [type(e) for e in caught] == [ReplayMiss]
    async with replaying(tmp_path / "c", strict=False) as session:  # the caller inspects the misses itself
        with contextlib.suppress(ReplayMiss):
            await invoke_model(load_chat_model("openai:scripted-model"), [HumanMessage("not recorded")])
    assert len(session.misses) == 1


async def test_concurrent_runs_record_and_replay_their_own_cassettes(openai_server, workspace, tmp_path):
    """Sessions are per context: runs gathered in one process (an eval's --concurrency) each
    record into, and replay from, their own folder."""
    import asyncio

    srv = openai_server(responder=lambda req: text("answer to " + req["messages"][-1]["content"]))

    async def one(session, task):
        async with session:
            answer, *_ = await streamed_run(task, workspace, task)
        return answer

    tasks = ["alpha", "beta", "gamma"]
    recorded = await asyncio.gather(*(one(recording(tmp_path / t), t) for t in tasks))
    srv.stop()
    assert recorded == [f"answer to {t}" for t in tasks]
    assert all(len(list((tmp_path / t).iterdir())) == 1 for t in tasks)  # each run in its own cassette
    replayed = await asyncio.gather(*(one(replaying(tmp_path / t), t) for t in tasks))
    assert replayed == recorded


async def test_a_stream_the_client_closed_before_its_end_is_not_recorded(openai_server, tmp_path):
    from langchain_core.messages import HumanMessage

    from smart_agent.models.chat import load_chat_model

    openai_server([text("one two three four five six seven eight"), text("whole")])
    async with recording(tmp_path / "c"):
        model = load_chat_model("openai:scripted-model")
        stream = model.astream([HumanMessage("cut")])
        await stream.__anext__()  # the first chunk, then the run is cancelled
        await stream.aclose()
        assert (await model.ainvoke([HumanMessage("whole")])).content == "whole"
    files = sorted(tmp_path.joinpath("c").iterdir())
    assert [p.name for p in files] == ["0002.json"]  # the cut stream's number was freed, nothing half-written
    assert json.loads(files[0].read_text())["request"]["body"]["messages"][-1]["content"] == "whole"


async def test_other_providers_are_refused_while_a_session_is_active(tmp_path):
    async with recording(tmp_path / "c"):
        graph = build_agent_graph(checkpointer=InMemorySaver())
        context = Context(model="anthropic:claude-sonnet-4-5", workspace=str(tmp_path), memory=False)
        with pytest.raises(ModelConfigError, match="cover only openai"):
            await graph.ainvoke({"task": "hi"}, config={"configurable": {"thread_id": "t"}}, context=context)
    assert list((tmp_path / "c").iterdir()) == []
