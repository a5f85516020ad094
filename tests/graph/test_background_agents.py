"""Background sub-agents (start_sub_agent / check_sub_agent / cancel_sub_agent) over the real OpenAI client
against the scripted server: the agent goes on while the child works and gets its answer when it checks
(once); cancel stops it; a run's end ends its tasks; the depth limit, max_sub_agents, the run's shared
budgets (model calls, tool calls) and refused approvals apply to them as to blocking sub-agents."""

from __future__ import annotations

import asyncio
import json
import re
import time

from conftest import loop_context, offered, openai_model, run_with_events
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.nodes.human import NO_APPROVER
from smart_agent.runs.background import run_scope
from smart_agent.testing.scripted_server import text, tool_call, tool_calls

BACKGROUND = ["sub_agent", "start_sub_agent", "check_sub_agent", "cancel_sub_agent"]


def task_of(req) -> str:
    """The first user message of a request: the root's task, or a child's."""
    return next(m["content"] for m in req["messages"] if m["role"] == "user")


def is_child(req) -> bool:
    return task_of(req).startswith("CHILD")


def task_id(content: str) -> str:
    found = re.search(r"task-[0-9a-f]{8}", content)
    assert found, content
    return found.group(0)


def tool_results(req) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


def root_then(child, *root_steps):
    """A responder: a child request gets ``child(req)``; the root's turn n gets ``root_steps[n](last content)``."""

    def respond(req):
        if is_child(req):
            return child(req)
        turn = sum(1 for m in req["messages"] if m["role"] == "assistant")
        last = req["messages"][-1]["content"]
        return root_steps[min(turn, len(root_steps) - 1)](last)

    return respond


async def run_in_scope(graph, task, context):
    async with run_scope():
        return await run_with_events(graph, task, context)


def agent(srv):
    return build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())


def ctx(workspace, **kw):
    return loop_context(workspace, sub_agent_tools=True, **kw)


async def test_the_agent_goes_on_and_gets_the_answer_when_it_checks_once(scripted_server, workspace):
    srv = scripted_server(responder=root_then(
        lambda req: text("CHILD ANSWER 42"),
        lambda _: tool_call("start_sub_agent", {"task": "CHILD: find the answer"}),
        lambda last: tool_call("calculator", {"expression": "1+1"}),  # its own work meanwhile
        lambda last: tool_call("check_sub_agent", {"task_id": task_id(tool_results(srv.requests[-1])[0]),
                                                   "wait_s": 20}),
        lambda last: tool_call("check_sub_agent", {"task_id": task_id(last)}),  # a second check
        lambda last: text(f"done: {last}"),
    ))
    final, events = await run_in_scope(agent(srv), "go", ctx(workspace))
    root = [r for r in srv.requests if not is_child(r)]
    assert offered(root[0])[-4:] == BACKGROUND
    started = tool_results(root[1])[0]
    assert started.startswith("Started background task task-") and "check_sub_agent" in started
    checked = tool_results(root[3])[-1]
    assert checked.startswith(f"Task {task_id(started)} finished") and "CHILD ANSWER 42" in checked
    assert "was already checked or cancelled" in final["answer"]  # the answer was given once
    assert [e["phase"] for e in events if e["event"] == "sub_agent"] == ["start", "end"]
    assert next(e for e in events if e["event"] == "sub_agent")["background"] is True
    # the child's request was made while the root went on: its first request came before the root's check
    child = next(i for i, r in enumerate(srv.requests) if is_child(r))
    assert child < srv.requests.index(root[3])


async def test_cancel_stops_the_child_and_the_run_end_ends_the_rest(scripted_server, workspace):
    srv = scripted_server(responder=root_then(
        lambda req: text("too late", delay_s=30),
        lambda _: tool_calls([("start_sub_agent", {"task": "CHILD: slow one"}),
                              ("start_sub_agent", {"task": "CHILD: slow two"})]),
        lambda last: tool_call("cancel_sub_agent", {"task_id": task_id(tool_results(srv.requests[-1])[0])}),
        lambda last: text(f"answered: {last}"),  # the second task is still running when the run ends
    ))
    began = time.monotonic()
    final, events = await run_in_scope(agent(srv), "go", ctx(workspace))
    assert time.monotonic() - began < 15  # neither child's 30 s reply was waited for
    assert final["answer"].startswith("answered: Cancelled task task-")
    ends = [e for e in events if e["event"] == "sub_agent" and e["phase"] == "end"]
    assert len(ends) >= 1 and all(e["error"] == "cancelled" and not e["ok"] for e in ends)
    await asyncio.sleep(0)
    assert not [t for t in asyncio.all_tasks() if "run_child" in repr(t.get_coro())]


async def test_without_a_run_scope_start_is_refused_and_off_by_default(scripted_server, workspace):
    srv = scripted_server(responder=root_then(
        lambda req: text("never"),
        lambda _: tool_call("start_sub_agent", {"task": "CHILD: x"}),
        lambda last: text(last),
    ))
    final, _ = await run_with_events(agent(srv), "go", ctx(workspace))  # no run scope
    assert "Refused: background sub-agents need a run scope" in final["answer"]
    assert not any(is_child(r) for r in srv.requests)
    srv.reset([tool_call("start_sub_agent", {"task": "CHILD: x"}), lambda req: text(req["messages"][-1]["content"])])
    final, _ = await run_in_scope(agent(srv), "go", loop_context(workspace))  # the setting is off
    assert not set(BACKGROUND) & set(offered(srv.requests[0]))
    assert "Sub-agents are off in this run" in final["answer"]


async def test_the_children_share_the_runs_model_call_budget(scripted_server, workspace):
    def child(req):  # a child that would go on calling tools for ever
        return tool_call("calculator", {"expression": f"{len(req['messages'])}*2"})

    srv = scripted_server(responder=root_then(
        child,
        lambda _: tool_call("start_sub_agent", {"task": "CHILD: keep computing"}),
        lambda last: tool_call("calculator", {"expression": "2+2"}),
        lambda last: tool_call("calculator", {"expression": "3+3"}),
        lambda last: tool_call("calculator", {"expression": "4+4"}),
        lambda last: text("root done"),
    ))
    final, events = await run_in_scope(agent(srv), "go", ctx(workspace, max_model_calls=6))
    # every request of the run - the root's and its background child's - counted on one budget;
    # a child's call is counted as it begins, so one the run's end cancelled on its way to the
    # server (a busy machine) is counted and never received
    assert len(srv.requests) <= final["usage"]["model_calls"] <= 6
    assert any(is_child(r) for r in srv.requests)


async def test_the_children_share_the_runs_tool_budget(scripted_server, workspace):
    srv = scripted_server(responder=root_then(
        lambda req: (text("child stops") if len(tool_results(req)) >= 6  # (slow: the root checks first)
                     else tool_call("calculator", {"expression": f"{len(req['messages'])}+1"}, delay_s=0.3)),
        lambda _: tool_call("start_sub_agent", {"task": "CHILD: compute a lot"}),
        lambda last: tool_call("check_sub_agent", {"task_id": task_id(last), "wait_s": 20}),
        lambda last: text(f"root: {last}"),
    ))
    final, events = await run_in_scope(agent(srv), "go", ctx(workspace, max_tool_calls=4))
    ran = [e for e in events if e["event"] == "tool_result" and e.get("ok") and e.get("name") == "calculator"]
    # start and check are two of the run's 4 tool calls: the child had 2 left, not its own 4
    assert len(ran) == 2, [(e.get("agent"), e.get("name")) for e in events if e["event"] == "tool_result"]
    skipped = [m for r in srv.requests if is_child(r) for m in tool_results(r) if "tool-call limit reached" in m]
    assert skipped or any(is_child(r) and not r.get("tools") for r in srv.requests)


async def test_depth_limit_and_max_sub_agents(scripted_server, workspace):
    srv = scripted_server(responder=root_then(
        lambda req: text("child " + ",".join(offered(req)) if offered(req) else "child has no tools"),
        lambda _: tool_calls([("start_sub_agent", {"task": "CHILD: one"}),
                              ("start_sub_agent", {"task": "CHILD: two"})]),
        lambda last: tool_call("check_sub_agent", {"task_id": task_id(tool_results(srv.requests[-1])[0]),
                                                   "wait_s": 20}),
        lambda last: text(f"root: {last}"),
    ))
    final, _ = await run_in_scope(agent(srv), "go", ctx(workspace, max_agent_depth=1, max_sub_agents=1))
    first, second = tool_results([r for r in srv.requests if not is_child(r)][1])
    assert first.startswith("Started background task")
    assert "1 background sub-agents of yours are running (max_sub_agents=1)" in second
    children = [r for r in srv.requests if is_child(r)]
    assert len(children) == 1 and not set(BACKGROUND) & set(offered(children[0]))  # at the depth limit
    assert "calculator" in final["answer"]


async def test_a_background_childs_call_needing_approval_is_refused(scripted_server, workspace):
    srv = scripted_server(responder=root_then(
        lambda req: (text("child: " + tool_results(req)[-1]) if tool_results(req)
                     else tool_call("write_file", {"path": "out.txt", "content": "hi"})),
        lambda _: tool_call("start_sub_agent", {"task": "CHILD: write out.txt"}),
        lambda last: tool_call("check_sub_agent", {"task_id": task_id(last), "wait_s": 20}),
        lambda last: text(f"root: {last}"),
    ))
    graph = agent(srv)
    final, events = await run_in_scope(graph, "go", ctx(workspace, approve="write_file"))
    assert not (workspace / "out.txt").exists()
    assert NO_APPROVER.format(name="write_file", approve="write_file") in final["answer"]
    assert not any(e["event"] == "approval_requested" for e in events)
    snapshot = await graph.aget_state({"configurable": {"thread_id": "t"}})
    assert snapshot.next == ()


async def test_a_task_of_another_agent_is_unknown(scripted_server, workspace):
    ids: list[str] = []

    def child(req):
        results = tool_results(req)
        if results:
            return text("child saw: " + results[-1])
        deadline = time.monotonic() + 10
        while not ids and time.monotonic() < deadline:  # (the server answers each request on its own thread)
            time.sleep(0.05)
        return tool_call("check_sub_agent", {"task_id": ids[0]})  # the root's own task id

    def start(_):
        return tool_call("start_sub_agent", {"task": "CHILD: peek"})

    def check(last):
        ids.append(task_id(last))
        return tool_call("check_sub_agent", {"task_id": ids[0], "wait_s": 20})

    srv = scripted_server(responder=root_then(child, start, check, lambda last: text(json.dumps(last))))
    final, _ = await run_in_scope(agent(srv), "go", ctx(workspace))
    assert "child saw: " in final["answer"] and "Unknown task id" in final["answer"]
