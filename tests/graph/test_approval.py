"""Human review of tool calls in the agent loop (the human node, nodes/human.py): approve,
reject and edit cycles through interrupts and Command(resume=...), over the real
langchain-openai client against the scripted server."""

from __future__ import annotations

from conftest import loop_context, openai_model, run_graph
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.runs.approval import rejection_text
from smart_agent.testing.scripted_server import last_tool_message, text, tool_call, tool_calls, tool_messages
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.registry import ToolMeta

WRITE = {"name": "write_file", "arguments": {"path": "out.txt", "content": "hello"}, "id": "w1"}
CALC = {"name": "calculator", "arguments": {"expression": "6*7"}, "id": "c1"}


ctx = loop_context


def graph_for(srv, **kw):
    return build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), registry=default_registry(), **kw)


async def run(graph, value, context, thread="t", events=None):
    """Stream one run (a task, or a Command to resume) on ``thread``: the final values."""
    return await run_graph(graph, value, context, thread=thread, events=events)


async def pending(graph, thread="t"):
    """The interrupt values the thread waits on."""
    snapshot = await graph.aget_state({"configurable": {"thread_id": thread}})
    return [i.value for task in snapshot.tasks for i in task.interrupts], snapshot.next


async def test_approve_runs_the_held_call_and_the_other_call_of_the_turn_waits_with_it(scripted_server, workspace):
    srv = scripted_server([tool_calls([WRITE, CALC]), text("written")])
    graph = graph_for(srv)
    context = ctx(workspace, approve="write_file")
    events: list = []
    await run(graph, "write hello", context, events=events)
    (value,), next_nodes = await pending(graph)
    assert next_nodes == ("human",)
    assert [a["name"] for a in value["action_requests"]] == ["write_file"]
    assert value["action_requests"][0]["args"] == {"path": "out.txt", "content": "hello"}
    decisions = ["approve", "edit", "reject"]
    assert value["review_configs"] == [{"action_name": "write_file", "allowed_decisions": decisions}]
    assert not (workspace / "out.txt").exists() and len(srv.requests) == 1
    assert [e["calls"][0]["name"] for e in events if e["event"] == "approval_requested"] == ["write_file"]
    assert not any(e["event"] == "tool_call" for e in events)

    events.clear()
    final = await run(graph, Command(resume={"decisions": [{"type": "approve"}]}), context, events=events)
    assert (workspace / "out.txt").read_text() == "hello"
    assert final["answer"] == "written" and final["tool_calls_made"] == 2 and final["reviews"] == {}
    assert [m["content"] for m in tool_messages(srv.requests[1])] == ["Wrote 5 characters to out.txt", "42"]
    assert [(e["name"], e["decision"]) for e in events if e["event"] == "approval"] == [("write_file", "approve")]
    assert not any(e["event"] == "approval_requested" for e in events)  # not again on resume


async def test_reject_does_not_run_the_call_and_the_model_reads_the_message(scripted_server, workspace):
    srv = scripted_server([tool_calls([WRITE, CALC]), text("ok, not written")])
    graph = graph_for(srv)
    context = ctx(workspace, approve="write_file")
    await run(graph, "write hello", context)
    final = await run(graph, Command(resume={"decisions": [{"type": "reject", "message": "not allowed"}]}), context)
    assert not (workspace / "out.txt").exists()
    assert final["answer"] == "ok, not written"
    assert final["tool_calls_made"] == 1  # the calculator only: a rejected call spends no budget
    results = tool_messages(srv.requests[1])
    assert results[0]["content"] == rejection_text("write_file", "w1", "not allowed")
    assert "not allowed" in results[0]["content"] and results[1]["content"] == "42"


async def test_edit_runs_the_call_with_the_edited_arguments(scripted_server, workspace):
    srv = scripted_server([tool_call("write_file", {"path": "out.txt", "content": "hello"}), text("done")])
    graph = graph_for(srv)
    context = ctx(workspace, approve="side-effects")
    await run(graph, "write", context)
    edit = {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "other.txt", "content": "bye"}}}
    final = await run(graph, Command(resume={"decisions": [edit]}), context)
    assert (workspace / "other.txt").read_text() == "bye" and not (workspace / "out.txt").exists()
    assert final["answer"] == "done"
    assistant = [m for m in srv.requests[1]["messages"] if m["role"] == "assistant"][-1]
    assert '"other.txt"' in assistant["tool_calls"][0]["function"]["arguments"]  # the history shows what ran
    ais = [m for m in final["messages"] if m.type == "ai"]
    assert len(ais) == 2 and ais[0].tool_calls[0]["args"] == {"path": "other.txt", "content": "bye"}


async def test_an_invalid_edit_gives_the_usual_invalid_arguments_result(scripted_server, workspace):
    srv = scripted_server([tool_call("write_file", {"path": "out.txt", "content": "hello"}), text("done")])
    graph = graph_for(srv)
    context = ctx(workspace, approve="write_file")
    await run(graph, "write", context)
    edit = {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "x.txt"}}}
    await run(graph, Command(resume={"decisions": [edit]}), context)
    assert not any(workspace.iterdir())
    result = last_tool_message(srv.requests[1])
    assert result.startswith("Invalid arguments for tool 'write_file'") and "content" in result


async def test_side_effects_holds_write_file_and_a_flagged_plugin_tool_but_not_read_file(scripted_server, workspace):
    (workspace / "in.txt").write_text("data")

    @tool
    def send_mail(to: str) -> str:
        """Send a mail."""
        sent.append(to)
        return "sent"

    sent: list[str] = []
    registry = default_registry()
    registry.register(send_mail, ToolMeta(side_effects=True, source="plugin:mail.py"), replace=True)
    srv = scripted_server([
        tool_call("read_file", {"path": "in.txt"}),
        tool_calls([WRITE, {"name": "send_mail", "arguments": {"to": "a@b.c"}, "id": "m1"}]),
        text("done"),
    ])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), registry=registry)
    context = ctx(workspace, approve="side-effects")
    await run(graph, "go", context)
    (value,), _ = await pending(graph)
    assert [a["name"] for a in value["action_requests"]] == ["write_file", "send_mail"]
    assert last_tool_message(srv.requests[1]) == "data"  # read_file ran without a pause
    assert sent == []
    decisions = [{"type": "approve"}, {"type": "reject", "message": "no mail"}]
    final = await run(graph, Command(resume={"decisions": decisions}), context)
    assert final["answer"] == "done" and sent == [] and (workspace / "out.txt").exists()


async def test_no_approve_setting_means_no_pause(scripted_server, workspace):
    srv = scripted_server([tool_call("write_file", {"path": "out.txt", "content": "hi"}), text("done")])
    graph = graph_for(srv)
    final = await run(graph, "write", ctx(workspace))
    assert final["answer"] == "done" and (workspace / "out.txt").read_text() == "hi"
    assert (await pending(graph)) == ([], ())


async def test_a_resume_value_that_does_not_answer_asks_again_with_a_one_line_error(scripted_server, workspace):
    """LangGraph replays a task's resume values on every later resume, so failing the run on a
    bad one would leave the thread stuck; the node asks the same again instead."""
    srv = scripted_server([tool_call("write_file", {"path": "out.txt", "content": "hi"}), text("done")])
    graph = graph_for(srv)
    context = ctx(workspace, approve="write_file")
    await run(graph, "write", context)
    (first,), _ = await pending(graph)
    events: list = []
    await run(graph, Command(resume={"decisions": [{"type": "approve"}, {"type": "approve"}]}), context, events=events)
    errors = [e["error"] for e in events if e["event"] == "error"]
    assert errors == ["1 tool call(s) wait for review but 2 decision(s) were given"]
    (value,), next_nodes = await pending(graph)
    assert value == first and next_nodes == ("human",)
    events.clear()
    await run(graph, Command(resume={"decisions": [{"type": "maybe"}]}), context, events=events)
    errors = [e["error"] for e in events if e["event"] == "error"]
    # (the old one stays quiet)
    assert errors == ["decision 1: type must be one of approve, edit, reject for 'write_file' (got 'maybe')"]
    assert not (workspace / "out.txt").exists() and len(srv.requests) == 1
    final = await run(graph, Command(resume=[{"type": "approve"}]), context)
    assert final["answer"] == "done" and (workspace / "out.txt").read_text() == "hi"


async def test_a_team_member_call_waits_for_approval_under_its_own_registry(scripted_server, workspace):
    from smart_agent.graphs.team import build_team_graph
    from smart_agent.nodes.team import AgentSpec
    from smart_agent.tools.calculator import calculator
    from smart_agent.tools.files import write_file

    srv = scripted_server([
        tool_call("transfer_to_writer", {"reason": "a file"}),
        tool_calls([WRITE, CALC]),
        text("not written, as you wish"),
    ])
    graph = build_team_graph(
        agents={
            "triage": AgentSpec("You are triage."),
            "writer": AgentSpec("You are the writer.", tools=[write_file, calculator], handoffs=[]),
        },
        model=openai_model(srv),
        checkpointer=InMemorySaver(),
    )
    context = ctx(workspace, approve="side-effects")  # the built-in keeps its side_effects in a member's tools
    events: list = []
    await run(graph, "write hello", context, events=events)
    (value,), next_nodes = await pending(graph)
    assert next_nodes == ("human",) and [a["name"] for a in value["action_requests"]] == ["write_file"]
    assert [e["to"] for e in events if e["event"] == "handoff"] == ["writer"]  # the transfer itself did not wait
    final = await run(graph, Command(resume={"decisions": [{"type": "reject", "message": "no files"}]}), context)
    assert final["answer"] == "not written, as you wish" and final["active_agent"] == "writer"
    assert not (workspace / "out.txt").exists()
    results = tool_messages(srv.requests[2])
    assert [m["content"] for m in results[-2:]] == [rejection_text("write_file", "w1", "no files"), "42"]
    assert srv.requests[2]["messages"][0]["content"].startswith("You are the writer.")


async def test_a_resume_under_another_context_still_reviews_the_calls_of_the_paused_run(scripted_server, workspace):
    """A client may resume with a context of its own (or none): the decision must still apply."""
    srv = scripted_server([tool_calls([WRITE, CALC]), text("not written")])
    graph = graph_for(srv)
    await run(graph, "write hello", ctx(workspace, approve="write_file"))
    reject = Command(resume={"decisions": [{"type": "reject", "message": "no"}]})
    final = await run(graph, reject, ctx(workspace))  # approve: none in the resuming run's context
    assert not (workspace / "out.txt").exists() and final["answer"] == "not written"
    assert [m["content"] for m in tool_messages(srv.requests[1])] == [rejection_text("write_file", "w1", "no"), "42"]


async def test_a_new_task_on_a_paused_thread_drops_the_held_call(scripted_server, workspace):
    """Not resuming but asking something else: the held call never runs and is answered."""
    from smart_agent.nodes.resolver import INTERRUPTED_RESULT

    srv = scripted_server([tool_call("write_file", WRITE["arguments"]), text("ok, something else")])
    graph = graph_for(srv)
    context = ctx(workspace, approve="write_file")
    await run(graph, "write hello", context)
    final = await run(graph, "never mind", context)
    assert final["answer"] == "ok, something else" and (await pending(graph)) == ([], ())
    assert not (workspace / "out.txt").exists() and final["reviews"] == {}
    assert last_tool_message(srv.requests[1]) == INTERRUPTED_RESULT
