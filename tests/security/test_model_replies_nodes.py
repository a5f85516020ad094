"""Attack: a bad reply to the summarize node's summary request or the planner's
synthesize request, through the real langchain-openai client over HTTP.

Before: summarize called the model directly (a lone surrogate in the summary went
into the thread's history; a timeout was reported as the client's ``APITimeoutError``),
and synthesize could end a run with an empty answer. Now summarize goes through
``models.invoke_model`` like every model call (and still falls back to the digest when
the call fails), and an empty synthesis is asked again once, then fails with one line.
"""

from __future__ import annotations

import pytest
from conftest import openai_model, run_graph
from langchain_core.tools import tool
from planner_support import make_registry
from planner_support import run_graph as run_planner

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.history.markers import is_summary
from smart_agent.history.transcript import SUMMARY_SYSTEM_PROMPT
from smart_agent.models.chat import ModelReplyError
from smart_agent.testing.scripted_server import text, tool_call, tool_calls
from smart_agent.tools.registry import ToolRegistry

pytestmark = pytest.mark.graph


def is_summary_request(req) -> bool:
    first = (req.get("messages") or [{}])[0]
    return first.get("role") == "system" and str(first.get("content", "")).startswith(SUMMARY_SYSTEM_PROMPT[:40])


def records_registry() -> ToolRegistry:
    @tool
    def fetch(key: str) -> str:
        """Fetch a record by key."""
        return f"record {key}: " + " ".join(["alpha", "beta", "gamma", "delta"][(len(key) + i) % 4] for i in range(230))

    registry = ToolRegistry()
    registry.register(fetch)
    return registry


def records_model(summary, turns=8):
    """Fetches two records per turn (long texts, so compaction asks for a model summary);
    a summary request gets ``summary(request)``."""
    state = {"turn": 0}

    def respond(req):
        if is_summary_request(req):
            return summary(req)
        state["turn"] += 1
        t = state["turn"]
        if t > turns:
            return text("All records fetched.")
        content = f"Turn {t}: I will now fetch two more records because the analysis needs them. " * 6
        return tool_calls([("fetch", {"key": f"k{t}a"}), ("fetch", {"key": f"k{t}b"})], content=content)

    return respond


async def summarize_run(srv, workspace, **model_kw):
    graph = build_agent_graph(model=openai_model(srv, **model_kw), registry=records_registry())
    events: list = []
    final = await run_graph(
        graph,
        "Fetch the records.",
        Context(workspace=str(workspace), memory=False, context_token_limit=2000, archive_threshold_chars=0),
        events=events,
    )
    assert final["answer"] == "All records fetched."
    assert any(is_summary_request(r) for r in srv.requests)
    return final, [e for e in events if e["event"] == "summarization" and e["action"] == "summarize"]


async def test_a_summary_with_lone_surrogates_is_cleaned_before_it_enters_history(scripted_server, workspace):
    srv = scripted_server(responder=records_model(lambda req: text("Summary: fetched k1 \ud800 and k2 \udfff.")))
    final, summ = await summarize_run(srv, workspace)
    assert summ and summ[0]["strategy"] == "model"
    summary = next(m for m in final["messages"] if is_summary(m))
    assert "fetched k1 \ufffd and k2 \ufffd." in summary.content
    summary.content.encode("utf-8")  # would raise UnicodeEncodeError on a lone surrogate


async def test_a_summary_request_that_times_out_falls_back_to_the_digest_with_one_line(scripted_server, workspace):
    # two turns: one summary request, so one 1 s timeout (eight turns made seven, 7 s)
    srv = scripted_server(responder=records_model(lambda req: text("too late", delay_s=3), turns=2))
    final, summ = await summarize_run(srv, workspace, timeout=1.0)
    assert summ and all(e["strategy"] == "fallback_digest" for e in summ)
    error = summ[0]["error"]
    assert error.startswith("ModelTimeoutError: The model service did not answer in time"), error
    assert "\n" not in error
    summary = next(m for m in final["messages"] if is_summary(m))
    assert "too late" not in summary.content and "- fetch(key=" in summary.content


def planner_with_synthesis(*replies):
    registry, calls = make_registry()
    plan = {"steps": [{"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}}]}
    return registry, calls, [tool_call("submit_plan", plan), *replies]


async def test_an_empty_synthesis_is_asked_again_once(scripted_server):
    registry, calls, script = planner_with_synthesis(text(""), text("2 + 3 = 5"))
    srv = scripted_server(script)
    graph = build_planner_graph(model=openai_model(srv), registry=registry)
    final, _ = await run_planner(graph, {"task": "2+3"}, context=Context(model="openai:scripted-model", memory=False))
    assert final["answer"] == "2 + 3 = 5" and calls["add"] == 1
    assert len(srv.requests) == 3
    assert "Your previous reply was empty" in srv.requests[-1]["messages"][-1]["content"]


async def test_a_synthesis_empty_twice_fails_the_run_with_one_line(scripted_server):
    blocked = text("", finish_reason="content_filter")
    registry, _, script = planner_with_synthesis(blocked, blocked)
    srv = scripted_server(script)
    graph = build_planner_graph(model=openai_model(srv), registry=registry)
    with pytest.raises(ModelReplyError, match="empty reply twice \\(finish_reason 'content_filter'\\)"):
        await run_planner(graph, {"task": "2+3"}, context=Context(model="openai:scripted-model", memory=False))
    assert len(srv.requests) == 3
