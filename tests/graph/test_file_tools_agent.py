"""The agent loop uses glob, grep, read_file's line windows and edit_file: the model (the real
langchain-openai client over HTTP against the scripted server) is offered them, their results
come back as tool messages, and edit_file, a tool with side effects, waits for approval."""

from __future__ import annotations

from conftest import openai_model, run_graph
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.testing.scripted_server import text, tool_call, tool_calls, tool_messages
from smart_agent.tools.builtins import default_registry

SOURCE = "import os\n\n\ndef main():\n    # TODO: say hello\n    return 0\n"


def graph_for(srv):
    return build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), registry=default_registry())


async def run(graph, task, context, thread="t"):
    return await run_graph(graph, task, context, thread=thread)


async def test_agent_finds_reads_and_edits_a_file(scripted_server, workspace):
    (workspace / "app").mkdir()
    (workspace / "app" / "main.py").write_text(SOURCE)
    (workspace / "README.md").write_text("# app\n")
    srv = scripted_server([
        tool_calls([
            {"name": "glob", "arguments": {"pattern": "**/*.py"}, "id": "g1"},
            {"name": "grep", "arguments": {"pattern": "TODO", "glob": "*.py"}, "id": "g2"},
        ]),
        tool_call("read_file", {"path": "app/main.py", "offset": 4, "limit": 2, "line_numbers": True}, id="r1"),
        tool_call("edit_file", {"path": "app/main.py", "old": "    # TODO: say hello\n", "new": "    print('hello')\n"},
                  id="e1"),
        text("done"),
    ])
    final = await run(graph_for(srv), "say hello in main", Context(workspace=str(workspace), memory=False))
    assert final["messages"][-1].content == "done"
    offered = {t["function"]["name"] for t in srv.requests[0]["tools"]}
    assert {"glob", "grep", "edit_file", "read_file"} <= offered
    results = [m["content"] for m in tool_messages(srv.requests[-1])]
    assert results == [
        "app/main.py",
        "app/main.py:5:     # TODO: say hello",
        "     4\tdef main():\n     5\t    # TODO: say hello\n\n"
        "[Lines 4-5 of 6 in app/main.py. Call read_file with offset=6 to read more.]",
        "Replaced 1 occurrence in app/main.py at line 5 (1 line(s) replaced by 1).",
    ]
    assert (workspace / "app" / "main.py").read_text() == SOURCE.replace("# TODO: say hello", "print('hello')")


async def test_edit_file_waits_for_approval_of_side_effects_and_searches_do_not(scripted_server, workspace):
    (workspace / "notes.md").write_text("draft\n")
    srv = scripted_server([
        tool_calls([
            {"name": "grep", "arguments": {"pattern": "draft"}, "id": "g1"},
            {"name": "edit_file", "arguments": {"path": "notes.md", "old": "draft", "new": "final"}, "id": "e1"},
        ]),
        text("done"),
    ])
    graph = graph_for(srv)
    await run(graph, "finalize the notes", Context(workspace=str(workspace), memory=False, approve="side-effects"))
    snapshot = await graph.aget_state({"configurable": {"thread_id": "t"}})
    (value,) = [i.value for task in snapshot.tasks for i in task.interrupts]
    assert [a["name"] for a in value["action_requests"]] == ["edit_file"]
    assert (workspace / "notes.md").read_text() == "draft\n"  # nothing edited while it waits
