"""The planner graph over the real ``langchain_openai.ChatOpenAI`` client against a scripted server."""

from __future__ import annotations

import json

import pytest
from conftest import openai_model
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from planner_support import SlowPages, make_registry, run_graph

from smart_agent.config.context import Context
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.tools.builtins import default_registry


def submit(plan):
    return {"tool_calls": [{"name": "submit_plan", "arguments": plan}]}


@pytest.fixture
def builtins(tmp_path):
    return default_registry(plugins_folder=tmp_path / "no-plugins", entry_points=False)


async def test_four_slow_pages_are_browsed_in_parallel(scripted_server, workspace, builtins):
    with SlowPages(delay_s=0.2, together=4) as pages:  # each page answers only once all four are requested
        plan = {
            "steps": [
                *({"id": f"p{i}", "tool": "browse_url", "args": {"url": pages.url(f"/page{i}")}} for i in range(4)),
                {
                    "id": "save",
                    "tool": "write_file",
                    "args": {"path": "pages.txt", "content": "${p0}\n${p1}\n${p2}\n${p3}"},
                },
            ]
        }
        server = scripted_server([submit(plan), {"content": "All four pages say hello; saved to pages.txt."}])
        graph = build_planner_graph(model=openai_model(server), registry=builtins)
        ctx = Context(model="openai:scripted-model", allow_private_network=True, workspace=str(workspace))
        final, events = await run_graph(graph, {"task": "Read the four pages and save them"}, context=ctx)

    assert pages.peak == 4, f"{pages.peak} requests in flight at most; parallel browsing has all four"
    assert final["answer"] == "All four pages say hello; saved to pages.txt." and final["status"] == "done"
    assert sorted(pages.hits) == ["/page0", "/page1", "/page2", "/page3"]
    saved = (workspace / "pages.txt").read_text()
    assert all(f"Content of /page{i}" in saved for i in range(4))
    assert final["plan"]["steps"][4]["depends_on"] == ["p0", "p1", "p2", "p3"]
    # the planning request offered submit_plan and described the tools; the synthesis saw the trace
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["submit_plan"]
    assert "browse_url" in first["messages"][0]["content"] and "write_file" in first["messages"][0]["content"]
    assert "tools" not in second and "Content of /page3" in second["messages"][-1]["content"]
    usage = [e for e in events if e["event"] == "usage"]
    assert [u["node"] for u in usage] == ["plan", "synthesize"] and all(u["total_tokens"] > 0 for u in usage)
    starts = [e["step"] for e in events if e["event"] == "step_start"]
    assert starts[:4] == ["p0", "p1", "p2", "p3"] and starts[4] == "save"


async def test_cycle_is_sent_back_to_the_model(scripted_server):
    registry, calls = make_registry()
    cyclic = {
        "steps": [
            {"id": "a", "tool": "echo", "args": {"text": "${b}"}},
            {"id": "b", "tool": "echo", "args": {"text": "${a}"}},
        ]
    }
    fixed = {
        "steps": [
            {"id": "a", "tool": "echo", "args": {"text": "A"}},
            {"id": "b", "tool": "echo", "args": {"text": "${a}B"}},
        ]
    }
    server = scripted_server([submit(cyclic), submit(fixed), {"content": "AB"}])
    graph = build_planner_graph(model=openai_model(server), registry=registry)
    final, _ = await run_graph(graph, {"task": "t"}, context=Context(model="openai:scripted-model"))
    assert final["answer"] == "AB" and final["step_results"]["b"]["output"] == "AB"
    retry = server.requests[1]["messages"]
    assert retry[-2]["role"] == "assistant" and retry[-2]["tool_calls"][0]["function"]["name"] == "submit_plan"
    assert retry[-1]["role"] == "tool" and "cycle" in retry[-1]["content"] and "a -> b -> a" in retry[-1]["content"]
    assert calls["echo"] == 2


async def test_plan_as_json_text_with_slips(scripted_server):
    registry, calls = make_registry()
    reply = (
        "Here you go:\n```json\n{\n  // one step\n  'steps': [{'id': 's1', 'tool': 'add', 'args': {'a': 20, 'b': "
        "22},}],\n}\n```"
    )
    server = scripted_server([{"content": reply}, {"content": "42"}])
    graph = build_planner_graph(model=openai_model(server), registry=registry, plan_method="text")
    final, _ = await run_graph(graph, {"task": "20+22"}, context=Context(model="openai:scripted-model"))
    assert final["answer"] == "42" and final["step_results"]["s1"]["output"] == {"sum": 42}
    assert "tools" not in server.requests[0]


async def test_structured_output_over_openai(scripted_server):
    registry, calls = make_registry()
    plan = {"steps": [{"id": "s1", "tool": "echo", "args": {"text": "structured"}}]}
    server = scripted_server([{"content": json.dumps(plan)}, {"content": "ok"}])
    graph = build_planner_graph(model=openai_model(server), registry=registry, plan_method="structured")
    final, _ = await run_graph(graph, {"task": "t"}, context=Context(model="openai:scripted-model"))
    assert final["answer"] == "ok" and calls["echo:structured"] == 1
    assert server.requests[0].get("response_format", {}).get("type") == "json_schema"


async def test_approval_and_replan_over_openai(scripted_server):
    registry, calls = make_registry()
    first = {
        "steps": [
            {"id": "s1", "tool": "echo", "args": {"text": "kept"}},
            {"id": "s2", "tool": "fail", "args": {"message": "quota"}, "depends_on": ["s1"]},
        ]
    }
    revised = {"steps": [{"id": "r1", "tool": "upper", "args": {"text": "${s1}"}}]}
    server = scripted_server([submit(first), submit(revised), {"content": "KEPT"}])
    graph = build_planner_graph(
        model=openai_model(server), registry=registry, checkpointer=InMemorySaver(), backoff_base_s=0.01
    )
    ctx = Context(model="openai:scripted-model", approve_plan=True)
    config = {"configurable": {"thread_id": "t1"}}
    await graph.ainvoke({"task": "t"}, config, context=ctx)
    assert (await graph.aget_state(config)).interrupts[0].value["plan"]["steps"][1]["id"] == "s2"
    await graph.ainvoke(Command(resume={"action": "approve"}), config, context=ctx)
    request = (await graph.aget_state(config)).interrupts[0].value  # the revised plan needs approval too
    assert request["replan"] == 1 and request["finished_steps"] == ["s1"]
    final = await graph.ainvoke(Command(resume={"action": "approve"}), config, context=ctx)
    assert final["answer"] == "KEPT" and calls["echo:kept"] == 1 and calls["upper"] == 1
    assert "quota" in server.requests[1]["messages"][-1]["content"]
