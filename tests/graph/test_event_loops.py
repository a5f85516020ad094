"""A script that runs the agent in one ``asyncio.run`` after another (or a worker thread with a loop
of its own): every run talks to the model service through HTTP connections of its own event loop.
(LangChain's OpenAI models share one async HTTP client per base URL in the whole process; its pooled
connections belong to the loop that opened them, and the next loop's run failed with "Event loop is
closed".) The real client over HTTP against the scripted server."""

from __future__ import annotations

import asyncio
import threading

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.chat import load_chat_model
from smart_agent.testing.scripted_server import text


def test_a_script_runs_the_agent_in_one_asyncio_run_after_another(openai_server, workspace):
    srv = openai_server(responder=lambda req: text(f"answer {len(srv.requests)}"))
    graph = build_agent_graph()
    context = Context(model="openai:scripted-model", workspace=str(workspace), memory=False, model_max_retries=0)
    answers = [asyncio.run(graph.ainvoke({"task": f"question {i}"}, context=context))["answer"] for i in range(3)]
    assert answers == ["answer 1", "answer 2", "answer 3"]
    # A loop of a worker thread too.
    result: dict = {}
    worker = threading.Thread(
        target=lambda: result.update(asyncio.run(graph.ainvoke({"task": "from a thread"}, context=context)))
    )
    worker.start()
    worker.join(60)
    assert result["answer"] == "answer 4"


def test_a_fallback_model_answers_in_one_asyncio_run_after_another(openai_server, workspace):
    down = {"error": {"status": 500, "message": "A is down"}}
    srv = openai_server(responder=lambda req: down if req["model"] == "A" else text("from B"))
    graph = build_agent_graph()
    context = Context(
        model="openai:A", fallback_models=["openai:B"], workspace=str(workspace), memory=False, model_max_retries=0
    )
    for i in range(2):
        assert asyncio.run(graph.ainvoke({"task": f"question {i}"}, context=context))["answer"] == "from B"
    assert [r["model"] for r in srv.requests] == ["A", "B", "A", "B"]


def test_each_event_loop_has_its_own_model_and_http_client(openai_server):
    openai_server(responder=lambda req: text("hi"))

    async def load() -> tuple:
        first, second = load_chat_model("openai:scripted-model"), load_chat_model("openai:scripted-model")
        return first, second

    a1, a2 = asyncio.run(load())
    b1, _ = asyncio.run(load())
    assert a1 is a2  # one loop: built once
    assert b1 is not a1 and b1.async_client is not a1.async_client  # another loop: its own client
    assert load_chat_model("openai:scripted-model") is load_chat_model("openai:scripted-model")  # no loop: cached


def test_with_a_proxy_langchain_gives_each_model_its_client(openai_server, monkeypatch):
    """LangChain refuses a client beside a proxy ($OPENAI_PROXY) and builds one per model itself."""
    openai_server(responder=lambda req: text("hi"))
    monkeypatch.setenv("OPENAI_PROXY", "http://127.0.0.1:9")

    async def load():
        return load_chat_model("openai:scripted-model")

    first, second = asyncio.run(load()), asyncio.run(load())
    assert first is not second and first.async_client is not second.async_client


def test_a_runs_turns_find_its_model_on_the_loop(openai_server, workspace, monkeypatch):
    """The model of a spec is built off the loop once per loop; every later turn finds it without
    a thread hop. Another base URL is another model."""
    from smart_agent.models import chat as models
    from smart_agent.testing.scripted_server import tool_call

    replies = iter([tool_call("calculator", {"expression": "6*7"}), tool_call("calculator", {"expression": "1+1"})])
    openai_server(responder=lambda req: next(replies, text("done")))
    builds: list[str] = []
    to_thread = asyncio.to_thread

    async def counting(fn, *args, **kw):
        if fn is models._load:
            builds.append(args[0])
        return await to_thread(fn, *args, **kw)

    monkeypatch.setattr(asyncio, "to_thread", counting)
    graph = build_agent_graph()
    context = Context(model="openai:scripted-model", workspace=str(workspace), memory=False, model_max_retries=0)
    final = asyncio.run(graph.ainvoke({"task": "compute"}, context=context))
    assert final["answer"] == "done" and final["turns"] == 3
    assert builds == ["openai:scripted-model"]  # three turns, one build

    async def two_urls():
        first = await models.aload_chat_model("openai:scripted-model")
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        return first, await models.aload_chat_model("openai:scripted-model")

    first, second = asyncio.run(two_urls())
    assert first is not second and second.openai_api_base == "http://127.0.0.1:9/v1"
    assert len(builds) == 3  # a new loop: built again; another base URL: another model


def test_a_model_written_summary_in_one_asyncio_run_after_another(openai_server, workspace):
    """The summarize node loads the run's model for its loop too."""
    from scripted_support import big_echo_registry

    from smart_agent.history.transcript import SUMMARY_SYSTEM_PROMPT
    from smart_agent.testing.scripted_server import tool_calls

    turns = {"n": 0}

    def respond(req):
        if str(req["messages"][0].get("content", "")).startswith(SUMMARY_SYSTEM_PROMPT[:40]):
            return text("Summary: fetched the records so far; all fine.")
        turns["n"] += 1
        if turns["n"] % 5 == 0:
            return text("All records fetched.")
        t = turns["n"]
        return tool_calls(
            [("fetch", {"key": f"k{t}a"}), ("fetch", {"key": f"k{t}b"})],
            content=f"Turn {t}: I will now fetch two more records because the analysis needs them. " * 6,
        )

    openai_server(responder=respond)
    graph = build_agent_graph(registry=big_echo_registry())
    context = Context(model="openai:scripted-model", workspace=str(workspace), memory=False, model_max_retries=0,
                      context_token_limit=2000, archive_threshold_chars=0)
    for i in range(2):
        events: list = []

        async def run(i=i, events=events):
            async for mode, chunk in graph.astream(
                {"task": f"Fetch the records ({i})."}, context=context, stream_mode=["custom", "values"]
            ):
                if mode == "custom":
                    events.append(chunk)
                else:
                    final = chunk
            return final

        assert asyncio.run(run())["answer"] == "All records fetched."
        assert [e["strategy"] for e in events if e.get("action") == "summarize"][:1] == ["model"]
