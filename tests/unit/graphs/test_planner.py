"""The planner graph end to end with an in-process scripted model (no HTTP)."""

from __future__ import annotations

import json
import time

import pytest
from conftest import REPO
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from planner_support import SimulatedCrash, build, echo, make_registry, plan_call, run_graph, steps

from smart_agent.config.context import Context
from smart_agent.testing.fake_models import ScriptedChatModel

CTX = Context(model="scripted:model")


@pytest.fixture
def tools():
    return make_registry()


def human_texts(call):
    return "\n".join(str(m.content) for m in call["messages"] if isinstance(m, (HumanMessage, ToolMessage)))


# -- the main flow -------------------------------------------------------------------
async def test_plan_execute_synthesize(tools):
    registry, calls = tools
    plan = steps(
        {"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}},
        {"id": "s2", "tool": "search", "args": {"query": "dags"}},
        {"id": "s3", "tool": "echo", "args": {"text": "sum=${s1.sum}; first=${s2.results[0].title}"}},
    )
    model = ScriptedChatModel(
        responses=[
            plan_call(plan),
            AIMessage("Sum is 5.", usage_metadata={"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}),
        ]
    )
    final, events = await run_graph(build(model, registry), {"task": "add and search"}, context=CTX)

    assert final["answer"] == "Sum is 5." and final["status"] == "done"
    assert final["step_results"]["s3"]["output"] == "sum=5; first=About dags"
    assert final["plan"]["steps"][2]["depends_on"] == ["s1", "s2"]
    assert [m.type for m in final["messages"]] == ["human", "ai"]
    # the model was offered submit_plan for planning and nothing for the synthesis
    assert model.calls[0]["tools"] == ["submit_plan"] and model.calls[1]["tools"] == []
    synth_prompt = human_texts(model.calls[1])
    assert "Task: add and search" in synth_prompt and "sum=5; first=About dags" in synth_prompt
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["usage", "plan"] and kinds[-2:] == ["usage", "final_answer"]
    assert kinds.count("step_start") == 3 and kinds.count("step_result") == 3
    assert events[-2] == {**events[-2], "node": "synthesize", "input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    starts = {e["step"]: e["round"] for e in events if e["event"] == "step_start"}
    assert starts == {"s1": 1, "s2": 1, "s3": 2}


async def test_plan_in_text_with_slips_and_messages_input(tools):
    registry, calls = tools
    text = "Sure! ```json\n{'steps': [{'id': 's1', 'tool': 'echo', 'args': {'text': 'hi'},},]}\n```"
    model = ScriptedChatModel(responses=[text, "hi"])
    final, _ = await run_graph(build(model, registry), {"messages": [HumanMessage("say hi")]}, context=CTX)
    assert final["answer"] == "hi" and calls["echo"] == 1
    assert "Task: say hi" in human_texts(model.calls[0])


async def test_structured_output_method(tools):
    registry, calls = tools
    model = ScriptedChatModel(responses=[plan_call(steps(echo("s1", "x")), call_id="c1"), "done"])
    final, _ = await run_graph(build(model, registry, plan_method="structured"), {"task": "t"}, context=CTX)
    assert final["status"] == "done" and calls["echo"] == 1


async def test_empty_plan_goes_straight_to_synthesis(tools):
    registry, calls = tools
    model = ScriptedChatModel(responses=[plan_call({"steps": []}), "Hello!"])
    final, _ = await run_graph(build(model, registry), {"task": "say hello"}, context=CTX)
    assert final["answer"] == "Hello!" and sum(calls.values()) == 0


async def test_no_task():
    model = ScriptedChatModel(responses=[])
    final, _ = await run_graph(build(model, make_registry()[0]), {"task": "  "}, context=CTX)
    assert final["status"] == "planning_failed" and "Nothing to plan" in final["answer"]


async def test_context_tools_restricts_the_registry(tools):
    registry, calls = tools
    model = ScriptedChatModel(
        responses=[
            plan_call(steps({"id": "s1", "tool": "add", "args": {"a": 1, "b": 1}})),
            plan_call(steps(echo("s1", "x"))),
            "ok",
        ]
    )
    ctx = Context(model="scripted:model", tools=["echo"])
    final, _ = await run_graph(build(model, registry), {"task": "t"}, context=ctx)
    system = model.calls[0]["messages"][0].content
    assert "- echo:" in system and "- add:" not in system
    assert "unknown_tool" in human_texts(model.calls[1]) and calls["add"] == 0 and final["status"] == "done"


# -- planning errors go back to the model --------------------------------------------
async def test_invalid_plan_is_sent_back_with_all_errors(tools):
    registry, calls = tools
    bad = steps(
        echo("a", "1", depends_on=["b"]), echo("b", "2", depends_on=["a"]), {"id": "c", "tool": "nope", "args": {}}
    )
    model = ScriptedChatModel(responses=[plan_call(bad), plan_call(steps(echo("a", "1"))), "fine"])
    final, events = await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    assert final["answer"] == "fine"
    retry = model.calls[1]["messages"]
    assert isinstance(retry[-1], ToolMessage) and retry[-1].tool_call_id == "p1"
    assert "cycle" in retry[-1].content and "a -> b -> a" in retry[-1].content and "unknown_tool" in retry[-1].content
    plan_events = [e for e in events if e["event"] == "plan"]
    assert [e["valid"] for e in plan_events] == [False, True] and plan_events[1]["attempt"] == 2


async def test_text_reply_feedback_is_a_human_message(tools):
    registry, _ = tools
    model = ScriptedChatModel(responses=["I would browse the web.", plan_call(steps(echo("s1", "x"))), "ok"])
    await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    retry = model.calls[1]["messages"]
    assert isinstance(retry[-2], AIMessage) and isinstance(retry[-1], HumanMessage)
    assert "syntax" in retry[-1].content


async def test_calling_a_tool_directly_is_a_planning_error(tools):
    registry, calls = tools
    direct = AIMessage("", tool_calls=[{"name": "echo", "args": {"text": "x"}, "id": "d1"}])
    model = ScriptedChatModel(responses=[direct, plan_call(steps(echo("s1", "x"))), "ok"])
    final, _ = await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    assert "tools are not run while planning" in model.calls[1]["messages"][-1].content
    assert calls["echo"] == 1 and final["status"] == "done"


async def test_planning_fails_after_max_attempts_and_nothing_runs(tools):
    registry, calls = tools
    bad = plan_call(steps({"id": "s1", "tool": "nope", "args": {}}))
    model = ScriptedChatModel(responses=[bad, bad])
    ctx = Context(model="scripted:model", max_plan_attempts=2)
    final, events = await run_graph(build(model, registry), {"task": "t"}, context=ctx)
    assert final["status"] == "planning_failed" and final["plan"] is None
    assert (
        final["answer"].startswith("Planning failed")
        and "2 attempts" in final["answer"]
        and "unknown_tool" in final["answer"]
    )
    assert final["error"] == final["answer"] and sum(calls.values()) == 0 and len(model.calls) == 2
    assert not any(e["event"] == "step_start" for e in events)
    assert events[-1]["event"] == "final_answer"


# -- failures: halt, continue, retries, timeouts -------------------------------------
async def test_continue_skips_dependents_and_runs_independent_steps(tools):
    registry, calls = tools
    plan = steps(
        {"id": "f", "tool": "fail", "args": {}, "on_fail": "continue"},
        echo("dep", "${f}"),
        echo("ind", "independent"),
        echo("last", "${ind}!"),
    )
    model = ScriptedChatModel(responses=[plan_call(plan), "partial answer"])
    final, events = await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    results = final["step_results"]
    assert {k: v["status"] for k, v in results.items()} == {"f": "failed", "dep": "skipped", "ind": "ok", "last": "ok"}
    assert calls["echo:${f}"] == 0 and calls["echo:independent"] == 1
    assert final["status"] == "done" and final["answer"] == "partial answer"
    assert "skipped: dependency 'f' failed" in human_texts(model.calls[1])
    assert any(e["event"] == "step_result" and e["step"] == "dep" and e["status"] == "skipped" for e in events)


async def test_halt_stops_and_reports_without_replanning(tools):
    registry, calls = tools
    plan = steps(
        {"id": "f", "tool": "fail", "args": {"message": "disk full"}},
        echo("ind", "1"),
        echo("after", "${f}"),
        echo("later", "${ind}"),
    )
    model = ScriptedChatModel(responses=[plan_call(plan), "could not finish"])
    ctx = Context(model="scripted:model", max_replans=0)
    final, _ = await run_graph(build(model, registry), {"task": "t"}, context=ctx)
    assert (
        final["status"] == "halted" and final["halt"]["steps"] == ["f"] and "disk full" in final["halt"]["errors"]["f"]
    )
    assert calls["echo:1"] == 1 and calls["echo:${ind}"] == 0 and calls["echo:${f}"] == 0  # nothing after the halt
    prompt = human_texts(model.calls[1])
    assert "Execution halted" in prompt and "later echo" in prompt and "not_run" in prompt
    assert final["answer"] == "could not finish"


async def test_retries_then_success_inside_the_graph(tools):
    registry, calls = tools
    model = ScriptedChatModel(
        responses=[plan_call(steps({"id": "s1", "tool": "flaky", "args": {"text": "ok"}, "retries": 2})), "ok"]
    )
    final, events = await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    assert final["step_results"]["s1"]["status"] == "ok" and final["step_results"]["s1"]["attempts"] == 3
    assert [e["attempts"] for e in events if e["event"] == "step_result"] == [3]


async def test_timeout_inside_the_graph(tools):
    registry, _ = tools
    plan = steps({"id": "s1", "tool": "sleep", "args": {"seconds": 3}, "timeout_s": 0.1, "on_fail": "continue"})
    model = ScriptedChatModel(responses=[plan_call(plan), "too slow"])
    start = time.perf_counter()
    final, _ = await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    assert time.perf_counter() - start < 2
    assert final["step_results"]["s1"]["kind"] == "timeout"


# -- parallelism -----------------------------------------------------------------------
async def test_independent_steps_run_in_parallel(tools):
    registry, calls = tools
    plan = steps(
        *({"id": f"s{i}", "tool": "sleep", "args": {"seconds": 0.4, "label": f"L{i}"}} for i in range(4)),
        echo("join", "${s0}${s1}${s2}${s3}"),
    )
    model = ScriptedChatModel(responses=[plan_call(plan), "joined"])
    final, _ = await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    assert calls["sleep_peak"] == 4  # the four sleeps were in flight at once (sequential: 1)
    assert final["step_results"]["join"]["output"] == "L0L1L2L3"


async def test_parallelism_is_bounded_by_max_parallel_tools(tools):
    registry, _ = tools
    plan = steps(*({"id": f"s{i}", "tool": "echo", "args": {"text": str(i)}} for i in range(5)))
    model = ScriptedChatModel(responses=[plan_call(plan), "ok"])
    ctx = Context(model="scripted:model", max_parallel_tools=2)
    final, events = await run_graph(build(model, registry), {"task": "t"}, context=ctx)
    rounds = [e["round"] for e in events if e["event"] == "step_start"]
    assert rounds == [1, 1, 2, 2, 3]


async def test_a_long_sequential_plan_needs_no_recursion_limit(tools):
    registry, calls = tools
    chain = [echo("s0", "x")] + [echo(f"s{i}", f"${{s{i - 1}}}x") for i in range(1, 40)]
    model = ScriptedChatModel(responses=[plan_call(steps(*chain)), "long"])
    ctx = Context(model="scripted:model", max_tool_calls=40)  # the default budget (20) refuses 40 steps
    final = await build(model, registry).ainvoke({"task": "t"}, context=ctx)  # no config: the graph's own limit
    assert final["step_results"]["s39"]["output"] == "x" * 40


# -- replanning ------------------------------------------------------------------------
async def test_replan_after_halt_keeps_finished_steps(tools):
    registry, calls = tools
    first = steps(
        echo("s1", "data"),
        {"id": "s2", "tool": "fail", "args": {"message": "API down"}, "depends_on": ["s1"]},
        echo("s3", "${s2}"),
    )
    revised = steps({"id": "r1", "tool": "upper", "args": {"text": "${s1}"}})
    model = ScriptedChatModel(responses=[plan_call(first), plan_call(revised, call_id="p2"), "DATA"])
    final, events = await run_graph(build(model, registry), {"task": "t"}, context=CTX)

    assert final["answer"] == "DATA" and final["status"] == "done"
    assert calls["echo:data"] == 1  # the finished step was not re-run
    assert final["step_results"]["r1"]["output"] == "DATA"
    assert final["plan"]["steps"][0]["id"] == "r1"
    replan_prompt = human_texts(model.calls[1])
    assert "halted" in replan_prompt and "API down" in replan_prompt and "s1 echo" in replan_prompt
    assert "new step ids (not s1, s2)" in replan_prompt
    synth = human_texts(model.calls[2])
    assert synth.index("- s1 echo") < synth.index("- s2 fail") < synth.index("- r1 upper")
    assert [e["replan"] for e in events if e["event"] == "plan"] == [0, 1]


async def test_replan_is_validated_against_finished_steps(tools):
    registry, calls = tools
    first = steps(echo("s1", "data"), {"id": "s2", "tool": "fail", "args": {}, "depends_on": ["s1"]})
    reuse = steps(echo("s2", "${s1}"))  # s2 is taken
    fixed = steps(echo("r1", "${s1}"))
    model = ScriptedChatModel(
        responses=[plan_call(first), plan_call(reuse, call_id="p2"), plan_call(fixed, call_id="p3"), "ok"]
    )
    final, _ = await run_graph(build(model, registry), {"task": "t"}, context=CTX)
    assert "duplicate_id" in human_texts(model.calls[2]) and final["step_results"]["r1"]["status"] == "ok"


async def test_replans_are_bounded(tools):
    registry, calls = tools
    failing = lambda sid: steps({"id": sid, "tool": "fail", "args": {}})  # noqa: E731
    model = ScriptedChatModel(responses=[plan_call(failing("a")), plan_call(failing("b"), call_id="p2"), "gave up"])
    final, _ = await run_graph(build(model, registry), {"task": "t"}, context=CTX)  # max_replans=1
    assert calls["fail"] == 2 and final["status"] == "halted" and final["answer"] == "gave up"


# -- resume after a crash ----------------------------------------------------------------
@pytest.fixture(params=["memory", "sqlite"])
async def checkpointer(request, tmp_path):
    if request.param == "memory":
        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        yield saver


async def test_resume_after_crash_never_reruns_finished_steps(tools, checkpointer):
    registry, calls = tools
    plan = steps(
        echo("s1", "one"),
        echo("s2", "two"),
        {"id": "s3", "tool": "crash_once", "args": {"text": "${s1}+${s2}"}},
        echo("s4", "four", depends_on=["s1"]),  # same superstep as s3: finishes before the crash
        echo("s5", "${s3}|${s4}"),
    )
    model = ScriptedChatModel(responses=[plan_call(plan), "resumed answer"])
    graph = build(model, registry, checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "crash"}}
    with pytest.raises(SimulatedCrash):
        await graph.ainvoke({"task": "t"}, config, context=CTX)
    assert calls["echo:one"] == calls["echo:two"] == 1 and calls["crash_once"] == 1
    snapshot = await graph.aget_state(config)
    # s1 and s2 were checkpointed with their superstep; s4 is a saved write of the crashed superstep
    assert set(snapshot.values["step_results"]) == {"s1", "s2", "s4"}
    assert snapshot.next == ("run_step",)

    final = await graph.ainvoke(None, config, context=CTX)
    assert final["answer"] == "resumed answer"
    assert final["step_results"]["s5"]["output"] == "one+two|four"
    assert calls["echo:one"] == calls["echo:two"] == 1  # finished steps were not re-run
    assert calls["echo:four"] == 1  # its superstep's successful write was kept too
    assert calls["crash_once"] == 2 and len(model.calls) == 2  # and the model was not asked to plan again


async def test_a_second_run_on_the_same_thread_starts_fresh(tools):
    registry, calls = tools
    model = ScriptedChatModel(
        responses=[plan_call(steps(echo("s1", "a"))), "first", plan_call(steps(echo("t1", "b"))), "second"]
    )
    graph = build(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "two-runs"}}
    await graph.ainvoke({"task": "one"}, config, context=CTX)
    final = await graph.ainvoke({"task": "two"}, config, context=CTX)
    assert final["answer"] == "second" and set(final["step_results"]) == {"t1"}
    assert [m.type for m in final["messages"]] == ["human", "ai", "human", "ai"]


PLANNER_EDGES = {  # (source, target, conditional), as Studio draws them
    ("__start__", "prepare", False),
    ("prepare", "plan", True),
    ("prepare", "__end__", True),
    ("plan", "plan", True),
    ("plan", "approve", True),
    ("plan", "dispatch", True),
    ("plan", "plan_failed", True),
    ("plan", "synthesize", True),
    ("approve", "approve", True),
    ("approve", "dispatch", True),
    ("approve", "__end__", True),
    ("dispatch", "run_step", True),
    ("dispatch", "review_steps", True),
    ("review_steps", "run_step", True),
    ("review_steps", "dispatch", True),
    ("dispatch", "plan", True),
    ("dispatch", "synthesize", True),
    ("run_step", "dispatch", False),
    ("plan_failed", "__end__", False),
    ("synthesize", "__end__", False),
}


def test_graph_module_exports_a_graph_without_checkpointer():
    from smart_agent.graphs import planner

    assert planner.graph.checkpointer is None and planner.graph.name == "planner"
    mermaid = planner.graph.get_graph().draw_mermaid()
    for node in ("plan", "approve", "dispatch", "review_steps", "run_step", "synthesize", "plan_failed"):
        assert node in mermaid
    assert {(e.source, e.target, e.conditional) for e in planner.graph.get_graph().edges} == PLANNER_EDGES
    json.dumps(planner.graph.get_input_jsonschema())


def test_docs_drawing_is_the_graphs_own():
    import re

    from smart_agent.graphs import planner

    doc = (REPO / "docs" / "planner.md").read_text()
    (drawn,) = re.findall(r"<!-- mermaid:planner -->\n```mermaid\n(.*?)```\n<!-- /mermaid:planner -->", doc, re.S)
    def strip(t: str) -> str:
        return "\n".join(line.rstrip() for line in re.sub(r"^---\n.*?\n---\n", "", t, flags=re.S).strip().splitlines())

    assert strip(drawn) == strip(planner.graph.get_graph().draw_mermaid()), "docs/planner.md drawing is stale"
