"""A team from an agents file (graphs/team_file.py) over the real OpenAI client: a transfer gives
the next request the other agent's prompt and tools; a named sub-agent runs with its own prompt
and tools and only its answer returns to the caller; depth limit and tagged events."""

from __future__ import annotations

from conftest import offered, openai_model, run_with_events
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.testing.scripted_server import text, tool_call

TEAM = """\
default: triage
agents:
  triage:
    description: Routes each question to the right specialist.
    prompt: You are the triage agent.
    tools: []
    handoffs: [math]
    sub_agents: [checker]
  math:
    description: Does arithmetic.
    prompt: You are the math agent.
    tools: [calculator]
  checker:
    description: Checks a sum and answers yes or no.
    prompt: You are the checker.
    tools: [calc*]
    sub_agents: [math]
"""


def ctx(**kw):
    return Context(model="openai:scripted-model", memory=False, **kw)


def team(tmp_path, srv):
    path = tmp_path / "agents.yaml"
    path.write_text(TEAM)
    return build_agent_graph(agents_file=str(path), model=openai_model(srv), checkpointer=InMemorySaver())


def system(req):
    return req["messages"][0]["content"]


async def test_transfer_gives_the_next_request_the_other_agents_prompt_and_tools(tmp_path, scripted_server):
    srv = scripted_server([
        tool_call("transfer_to_math", {"reason": "arithmetic"}),
        tool_call("calculator", {"expression": "6*7"}),
        text("42"),
    ])
    final, events = await run_with_events(team(tmp_path, srv), "what is 6*7?", ctx())

    first, second, third = srv.requests
    assert system(first).startswith("You are the triage agent.")
    assert offered(first) == ["checker", "transfer_to_math"]
    assert system(second).startswith("You are the math agent.")
    assert offered(second) == ["calculator"]
    assert third["messages"][-1]["content"] == "42"
    assert final["answer"] == "42" and final["active_agent"] == "math"
    assert [(e["from"], e["to"]) for e in events if e["event"] == "handoff"] == [("triage", "math")]


async def test_named_sub_agent_returns_only_its_answer(tmp_path, scripted_server):
    def respond(req):
        prompt, last = system(req), req["messages"][-1]
        if prompt.startswith("You are the triage agent."):
            if last["role"] == "tool":
                return text(f"checked: {last['content']}")
            return tool_call("checker", {"task": "Is 2+2 equal to 4?"})
        if prompt.startswith("You are the checker."):
            if last["role"] == "tool":
                return text("yes")
            return tool_call("calculator", {"expression": "2+2"})
        return text("unexpected")

    srv = scripted_server(responder=respond)
    final, events = await run_with_events(team(tmp_path, srv), "check 2+2=4", ctx(max_agent_depth=1))

    root, child, child_after, root_after = srv.requests
    assert system(child).startswith("You are the checker.")
    # at depth 1 = max_agent_depth the checker is not given its own sub-agent `math`
    assert offered(child) == ["calculator"] and child["messages"][-1]["content"] == "Is 2+2 equal to 4?"
    assert child_after["messages"][-1]["content"] == "4"
    # the parent's next request holds only the child's final answer, none of its conversation
    tool_messages = [m for m in root_after["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["yes"]
    assert len(root_after["messages"]) == len(root["messages"]) + 2
    assert final["answer"] == "checked: yes"
    starts = [e for e in events if e["event"] == "sub_agent" and e["phase"] == "start"]
    assert [(e["tool"], e["depth"]) for e in starts] == [("checker", 1)]
    child_calls = [e for e in events if e["event"] == "tool_call" and e.get("agent")]
    assert child_calls and all(e["agent"] == starts[0]["child"] for e in child_calls)
    assert starts[0]["child"].startswith("checker-")


async def test_named_sub_agents_run_at_most_max_sub_agents_at_once(tmp_path, scripted_server):
    import threading
    import time

    from smart_agent.testing.scripted_server import tool_calls

    lock, active = threading.Lock(), {"now": 0, "peak": 0}

    def respond(req):
        last = req["messages"][-1]
        if system(req).startswith("You are the triage agent."):
            if last["role"] == "tool":
                return text(" + ".join(m["content"] for m in req["messages"] if m["role"] == "tool"))
            return tool_calls([("checker", {"task": f"part {i}"}) for i in range(4)])
        with lock:  # a checker's model turn: count how many run at once
            active["now"] += 1
            active["peak"] = max(active["peak"], active["now"])
        time.sleep(0.3)
        with lock:
            active["now"] -= 1
        return text(f"ok {last['content']}")

    srv = scripted_server(responder=respond)
    final, events = await run_with_events(
        team(tmp_path, srv), "four parts", ctx(max_sub_agents=2, max_parallel_tools=4, max_agent_depth=1)
    )
    assert active["peak"] == 2
    assert final["answer"] == " + ".join(f"ok part {i}" for i in range(4))
    assert len([e for e in events if e["event"] == "sub_agent" and e["phase"] == "end" and e["ok"]]) == 4


async def test_a_named_sub_agents_call_needing_approval_is_refused(tmp_path, scripted_server):
    from smart_agent.nodes.human import NO_APPROVER
    from smart_agent.testing.scripted_server import last_tool_message

    srv = scripted_server([
        tool_call("checker", {"task": "Is 2+2 equal to 4?"}),  # triage delegates
        tool_call("calculator", {"expression": "2+2"}),  # the checker's call needs approval: nobody can give it
        text("cannot check"),
        text("The checker could not check."),
    ])
    graph = team(tmp_path, srv)
    final, events = await run_with_events(graph, "check", ctx(approve="calculator", max_agent_depth=1))
    assert final["answer"] == "The checker could not check."
    assert last_tool_message(srv.requests[2]) == NO_APPROVER.format(name="calculator", approve="calculator")
    snapshot = await graph.aget_state({"configurable": {"thread_id": "t"}})
    assert snapshot.next == () and not any(e["event"] == "approval_requested" for e in events)


async def test_the_callers_output_schema_does_not_bind_a_named_sub_agent(tmp_path, scripted_server):
    """The run's output_schema is the caller's: the checker answers in plain text, the caller in JSON."""
    srv = scripted_server([
        tool_call("checker", {"task": "Is 2+2 equal to 4?"}),
        text("yes"),  # the checker: plain text, no schema of its own
        text('{"verdict": "yes"}'),
    ])
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}
    final, _events = await run_with_events(team(tmp_path, srv), "check", ctx(output_schema=schema))
    assert len(srv.requests) == 3 and srv.requests[2]["messages"][-1]["content"] == "yes"
    assert final["structured_response"] == {"verdict": "yes"}


async def test_the_runs_tools_setting_does_not_break_a_team_turn(tmp_path, scripted_server):
    # Members offer the tools the file lists; the run's `tools` (served context, Python) is
    # ignored by them and by the context budget, which counted it against every member's tools.
    srv = scripted_server([text("hello")])
    final, _events = await run_with_events(team(tmp_path, srv), "hi", ctx(tools=["web_search"]))
    assert final["messages"][-1].content == "hello"
    assert offered(srv.requests[0]) == ["checker", "transfer_to_math"]
