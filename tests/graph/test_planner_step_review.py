"""Approval of planner steps (run setting ``approve``) and steps that ask the user, over the real
``langchain_openai.ChatOpenAI`` client against the scripted server: the planner graph, the
model-free executor graph (``smart-agent execute``) and the dual graph's planner subgraph."""

from __future__ import annotations

import pytest
from conftest import openai_model
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from planner_support import make_registry

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.dual import build_dual_graph
from smart_agent.graphs.planner import build_executor_graph, build_planner_graph
from smart_agent.nodes.dual import DECIDE
from smart_agent.nodes.human import NO_APPROVER
from smart_agent.runs.approval import answer_of, question_request
from smart_agent.testing.scripted_server import text, tool_call
from smart_agent.tools.agents import as_tool
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.registry import ToolMeta


def submit(plan):
    return tool_call("submit_plan", plan)


@pytest.fixture
def tools(tmp_path):
    """The built-in tools (write_file has side effects, calculator none) plus counting test tools."""
    registry = default_registry(plugins_folder=tmp_path / "no-plugins", entry_points=False)
    extra, calls = make_registry()
    for name in ("echo", "upper"):
        registry.register(extra.get(name), extra.meta(name))

    @tool
    async def ask(question: str) -> str:
        """Ask the user (pauses the run); returns the answer."""
        calls["ask"] += 1
        return answer_of(interrupt(question_request(question)))

    registry.register(ask, ToolMeta(retries=2))  # retries must not repeat a pause
    return registry, calls


def ctx(workspace, **kw):
    return Context(model="openai:scripted-model", workspace=str(workspace), memory=False, **kw)


async def stream(graph, value, config, context):
    """One run (or resume) of a thread: (last values, custom events)."""
    events: list[dict] = []
    final: dict = {}
    async for mode, chunk in graph.astream(value, config, context=context, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            final = chunk
    return final, events


async def pending(graph, config):
    (intr,) = (await graph.aget_state(config)).interrupts
    return intr.value


def decisions(*items):
    return {"decisions": list(items)}


APPROVE = {"type": "approve"}
WRITE_AFTER_CALC = {
    "steps": [
        {"id": "s1", "tool": "calculator", "args": {"expression": "6*7"}},
        {"id": "s2", "tool": "write_file", "args": {"path": "answer.txt", "content": "The answer is ${s1}"}},
    ]
}


async def test_step_pauses_with_resolved_args_then_approve_writes(scripted_server, workspace, tools):
    registry, _ = tools
    server = scripted_server([submit(WRITE_AFTER_CALC), text("Saved: the answer is 42.")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "approve"}}
    context = ctx(workspace, approve="write_file")

    values, events = await stream(graph, {"task": "compute and save"}, config, context)
    request = await pending(graph, config)
    assert [(a["name"], a["args"]) for a in request["action_requests"]] == [
        ("write_file", {"path": "answer.txt", "content": "The answer is 42"})  # the reference resolved
    ]
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    assert not (workspace / "answer.txt").exists()
    assert values["step_results"]["s1"]["status"] == "ok" and "s2" not in values["step_results"]
    (asked,) = [e for e in events if e["event"] == "approval_requested"]
    assert asked["requests"] == [{"id": "s2", "name": "write_file", "args": request["action_requests"][0]["args"]}]

    final, events = await stream(graph, Command(resume=decisions(APPROVE)), config, context)
    assert (workspace / "answer.txt").read_text() == "The answer is 42"
    assert final["answer"] == "Saved: the answer is 42." and final["status"] == "done"
    assert [{k: e[k] for k in ("id", "name", "decision")} for e in events if e["event"] == "approval"] == [
        {"id": "s2", "name": "write_file", "decision": "approve"}
    ]
    assert not [e for e in events if e["event"] == "approval_requested"]  # the resume does not ask again
    assert (await graph.aget_state(config)).values["step_reviews"] == {"s2": APPROVE}
    assert "The answer is 42" in server.requests[-1]["messages"][-1]["content"]


async def test_reject_fails_the_step_and_replanning_and_synthesis_see_the_message(scripted_server, workspace, tools):
    registry, calls = tools
    revised = {"steps": [{"id": "r1", "tool": "echo", "args": {"text": "told the user instead"}}]}
    server = scripted_server([submit(WRITE_AFTER_CALC), submit(revised), text("Not saved, as you asked.")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "reject"}}
    context = ctx(workspace, approve="write_file")
    await stream(graph, {"task": "compute and save"}, config, context)

    final, events = await stream(
        graph, Command(resume=decisions({"type": "reject", "message": "no, do not touch my disk"})), config, context
    )
    assert not (workspace / "answer.txt").exists()
    s2 = final["step_results"]["s2"]
    assert s2["status"] == "failed" and s2["kind"] == "rejected" and s2["attempts"] == 0
    assert "rejected" in s2["error"] and "no, do not touch my disk" in s2["error"]
    # the halt (on_fail "halt") made the planner revise the plan, with the message in front of the model
    replan, synthesis = server.requests[1], server.requests[2]
    assert "no, do not touch my disk" in str(replan["messages"])
    assert "no, do not touch my disk" in synthesis["messages"][-1]["content"]
    assert calls["echo:told the user instead"] == 1 and final["answer"] == "Not saved, as you asked."
    (decided,) = [e for e in events if e["event"] == "approval"]
    assert decided["decision"] == "reject" and decided["message"] == "no, do not touch my disk"


async def test_edit_runs_the_edited_args_and_an_invalid_edit_fails_the_step(scripted_server, workspace, tools):
    registry, _ = tools
    plan = {
        "steps": [
            {"id": "a", "tool": "write_file", "args": {"path": "a.txt", "content": "planned"}, "on_fail": "continue"},
            {"id": "b", "tool": "write_file", "args": {"path": "b.txt", "content": "planned"}, "on_fail": "continue"},
        ]
    }
    server = scripted_server([submit(plan), text("a edited, b refused.")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "edit"}}
    context = ctx(workspace, approve="write_file")
    await stream(graph, {"task": "write two files"}, config, context)
    request = await pending(graph, config)
    assert [a["args"]["path"] for a in request["action_requests"]] == ["a.txt", "b.txt"]  # ONE interrupt, two steps

    edit_a = {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "a.txt", "content": "edited"}}}
    edit_b = {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "b.txt", "text": "typo"}}}
    final, _ = await stream(graph, Command(resume=decisions(edit_a, edit_b)), config, context)
    assert (workspace / "a.txt").read_text() == "edited"
    assert final["step_results"]["a"]["args"] == {"path": "a.txt", "content": "edited"}
    b = final["step_results"]["b"]
    assert not (workspace / "b.txt").exists() and b["status"] == "failed" and b["kind"] == "invalid_args"
    assert "unknown argument 'text'" in b["error"] and "missing required argument 'content'" in b["error"]
    assert final["status"] == "done" and "unknown argument 'text'" in server.requests[-1]["messages"][-1]["content"]


async def test_side_effects_setting_holds_only_those_tools_and_the_wave_waits(scripted_server, workspace, tools):
    registry, calls = tools
    plan = {
        "steps": [
            {"id": "e", "tool": "echo", "args": {"text": "free"}},
            {"id": "w1", "tool": "write_file", "args": {"path": "one.txt", "content": "1"}},
            {"id": "w2", "tool": "write_file", "args": {"path": "two.txt", "content": "2"}, "on_fail": "continue"},
        ]
    }
    server = scripted_server([submit(plan), text("one written, two not.")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "side-effects"}}
    context = ctx(workspace, approve="side-effects")
    await stream(graph, {"task": "t"}, config, context)
    request = await pending(graph, config)
    assert [a["name"] for a in request["action_requests"]] == ["write_file", "write_file"]
    assert calls["echo"] == 0  # the wave (echo included) waits for the review

    final, events = await stream(
        graph, Command(resume=decisions(APPROVE, {"type": "reject", "message": ""})), config, context
    )
    assert calls["echo:free"] == 1 and final["step_results"]["e"]["status"] == "ok"
    assert (workspace / "one.txt").read_text() == "1" and not (workspace / "two.txt").exists()
    assert final["step_results"]["w2"]["kind"] == "rejected" and final["status"] == "done"
    assert [e["decision"] for e in events if e["event"] == "approval"] == ["approve", "reject"]
    assert sorted(e["step"] for e in events if e["event"] == "step_start") == ["e", "w1"]


async def test_a_resume_with_another_context_keeps_the_runs_approve_setting(scripted_server, workspace, tools):
    registry, _ = tools
    plan = {
        "steps": [
            {"id": "a", "tool": "write_file", "args": {"path": "a.txt", "content": "A"}},
            {"id": "b", "tool": "write_file", "args": {"path": "b.txt", "content": "B"}, "depends_on": ["a"]},
        ]
    }
    server = scripted_server([submit(plan), text("both written")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "context"}}
    await stream(graph, {"task": "t"}, config, ctx(workspace, approve="write_file"))
    assert (await pending(graph, config))["action_requests"][0]["args"]["path"] == "a.txt"

    await stream(graph, Command(resume=decisions(APPROVE)), config, ctx(workspace))  # a context without approve
    assert (workspace / "a.txt").read_text() == "A" and not (workspace / "b.txt").exists()
    assert (await pending(graph, config))["action_requests"][0]["args"]["path"] == "b.txt"  # still asked
    final, _ = await stream(graph, Command(resume=decisions(APPROVE)), config, ctx(workspace))
    assert (workspace / "b.txt").read_text() == "B" and final["answer"] == "both written"


async def test_approve_none_runs_side_effect_steps_without_asking(scripted_server, workspace, tools):
    registry, _ = tools
    server = scripted_server([submit(WRITE_AFTER_CALC), text("done")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "none"}}
    final, events = await stream(graph, {"task": "t"}, config, ctx(workspace))
    assert final["answer"] == "done" and (workspace / "answer.txt").read_text() == "The answer is 42"
    assert (await graph.aget_state(config)).interrupts == ()
    assert not [e for e in events if e["event"].startswith("approval")]


async def test_a_bad_resume_value_asks_again_and_a_good_one_then_works(scripted_server, workspace, tools):
    registry, _ = tools
    server = scripted_server([submit(WRITE_AFTER_CALC), text("done")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bad"}}
    context = ctx(workspace, approve="write_file")
    await stream(graph, {"task": "t"}, config, context)
    _, events = await stream(graph, Command(resume=decisions(APPROVE, APPROVE)), config, context)
    again = await pending(graph, config)  # the same request again
    assert again["action_requests"][0]["args"] == {"path": "answer.txt", "content": "The answer is 42"}
    review_events = [e for e in events if e["event"] in ("error", "approval_requested", "approval")]
    assert [(e["event"], e.get("node"), e.get("error")) for e in review_events] == [
        ("error", "review_steps", "1 tool call(s) wait for review but 2 decision(s) were given"),
        ("approval_requested", None, None),
    ]
    assert not (workspace / "answer.txt").exists()

    final, _ = await stream(graph, Command(resume=decisions(APPROVE)), config, context)
    assert final["answer"] == "done" and (workspace / "answer.txt").read_text() == "The answer is 42"


async def test_executor_graph_pauses_before_the_step(workspace, tools):
    registry, _ = tools
    graph = build_executor_graph(registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "execute"}}
    context = ctx(workspace, approve="write_file")
    values, _ = await stream(graph, {"plan": WRITE_AFTER_CALC}, config, context)
    request = await pending(graph, config)
    assert request["action_requests"][0]["args"] == {"path": "answer.txt", "content": "The answer is 42"}
    assert not (workspace / "answer.txt").exists()

    final, _ = await stream(graph, Command(resume=decisions(APPROVE)), config, context)
    assert (workspace / "answer.txt").read_text() == "The answer is 42"
    assert final["status"] == "done" and final["answer"].startswith("Execution done: 2 ok, 0 failed")


async def test_dual_surfaces_the_planner_steps_review_and_resumes(scripted_server, workspace, tools):
    registry, _ = tools
    plan = {"steps": [{"id": "s1", "tool": "write_file", "args": {"path": "note.txt", "content": "hello"}}]}
    server = scripted_server([
        tool_call(DECIDE, {"action": "execute", "objective": "Write hello to note.txt"}),
        submit(plan),
        text("note.txt now says hello."),
        tool_call(DECIDE, {"action": "final", "answer": "Done: note.txt says hello."}),
    ])
    graph = build_dual_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "dual"}}
    context = ctx(workspace, approve="write_file")
    await stream(graph, {"task": "leave a note"}, config, context)
    request = await pending(graph, config)  # the planner subgraph's interrupt, on the dual thread
    assert request["action_requests"][0]["args"] == {"path": "note.txt", "content": "hello"}
    assert not (workspace / "note.txt").exists()

    final, _ = await stream(graph, Command(resume=decisions(APPROVE)), config, context)
    assert (workspace / "note.txt").read_text() == "hello"
    assert final["answer"] == "Done: note.txt says hello."
    assert final["assets"]["a1"]["answer"] == "note.txt now says hello." and final["assets"]["a1"]["status"] == "ok"
    assert server.remaining == 0


async def test_a_step_that_asks_the_user_pauses_and_is_not_retried(scripted_server, workspace, tools):
    registry, calls = tools
    plan = {
        "steps": [
            {"id": "q", "tool": "ask", "args": {"question": "Which file?"}},
            {"id": "w", "tool": "write_file", "args": {"path": "${q}", "content": "x"}},
        ]
    }
    server = scripted_server([submit(plan), text("Wrote x to chosen.txt.")])
    graph = build_planner_graph(
        model=openai_model(server), registry=registry, checkpointer=InMemorySaver(), backoff_base_s=0.01
    )
    config = {"configurable": {"thread_id": "ask"}}
    context = ctx(workspace)
    values, _ = await stream(graph, {"task": "ask, then write"}, config, context)
    assert await pending(graph, config) == {"question": "Which file?"}
    assert calls["ask"] == 1  # one call: the pause is neither a failure nor retried (the tool has retries=2)
    assert "q" not in (values.get("step_results") or {})

    final, _ = await stream(graph, Command(resume="chosen.txt"), config, context)
    assert calls["ask"] == 2  # the step re-ran once on resume and got the answer
    assert final["step_results"]["q"]["output"] == "chosen.txt" and final["step_results"]["q"]["attempts"] == 1
    assert (workspace / "chosen.txt").read_text() == "x" and final["answer"] == "Wrote x to chosen.txt."


async def test_the_builtin_ask_user_is_a_plan_step_only_while_ask_user_is_on(scripted_server, workspace, tools):
    registry, _ = tools
    plan = {
        "steps": [
            {"id": "q", "tool": "ask_user", "args": {"question": "Which name?"}},
            {"id": "w", "tool": "write_file", "args": {"path": "${q}.txt", "content": "named"}},
        ]
    }
    server = scripted_server([submit(plan), submit(plan), text("Wrote notes.txt.")])
    graph = build_planner_graph(model=openai_model(server), registry=registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ask_user"}}
    # ask_user off (the default): not described to the planner, and a plan using it is invalid
    off, _ = await stream(graph, {"task": "t"}, config, ctx(workspace, max_plan_attempts=1))
    assert "ask_user" not in server.requests[0]["messages"][0]["content"]
    assert off["status"] == "planning_failed" and "ask_user" in " ".join(off["plan_errors"])

    context = ctx(workspace, ask_user=True)
    await stream(graph, {"task": "t"}, {"configurable": {"thread_id": "ask_user_on"}}, context)
    assert "ask_user" in server.requests[1]["messages"][0]["content"]
    on = {"configurable": {"thread_id": "ask_user_on"}}
    assert await pending(graph, on) == {"question": "Which name?"}
    final, _ = await stream(graph, Command(resume={"answer": "notes"}), on, context)
    assert (workspace / "notes.txt").read_text() == "named" and final["answer"] == "Wrote notes.txt."


async def test_a_planner_run_as_a_sub_agent_refuses_steps_needing_approval(scripted_server, workspace, tools):
    registry, _ = tools
    write = {"path": "out.txt", "content": "hello"}
    plan = {"steps": [{"id": "s1", "tool": "write_file", "args": write, "on_fail": "continue"}]}
    server = scripted_server([
        tool_call("planner", {"task": "write hello to out.txt"}),  # the parent agent delegates
        submit(plan),  # the child planner plans
        text("Not written: it needs approval."),  # the child synthesizes
        text("The file needs your approval; I did not write it."),  # the parent answers
    ])
    model = openai_model(server)
    parent_tools = default_registry(plugins_folder=workspace / "no-plugins", entry_points=False)
    parent_tools.register(as_tool(build_planner_graph(model=model, registry=registry), "planner", "Plan and run."))
    graph = build_agent_graph(model=model, registry=parent_tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "parent"}}
    final, _ = await stream(graph, {"task": "write hello"}, config, ctx(workspace, approve="write_file"))

    assert final["answer"] == "The file needs your approval; I did not write it."
    assert not (workspace / "out.txt").exists() and (await graph.aget_state(config)).interrupts == ()
    refusal = NO_APPROVER.format(name="write_file", approve="write_file")
    assert refusal in server.requests[2]["messages"][-1]["content"]  # the child's synthesis saw why
