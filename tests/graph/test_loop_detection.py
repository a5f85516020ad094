"""Loop detection in the agent loop (loop_limit), through the real langchain-openai client."""

from conftest import openai_model, run_graph

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.prompts import LOOP_FINALIZE_NOTICE, LOOP_NOTICE
from smart_agent.testing.scripted_server import text, tool_call, tool_calls


def ctx(workspace, **kw):
    return Context(workspace=str(workspace), memory=False, **kw)


def repeats_forever(req):
    """The same calculator call whenever tools are offered; an answer when none are."""
    return tool_call("calculator", {"expression": "2+2"}) if req.get("tools") else text("It is 4.")


def system_prompt(req) -> str:
    return req["messages"][0]["content"]


async def test_a_model_repeating_one_call_is_told_then_finalized(scripted_server, workspace):
    srv = scripted_server(responder=repeats_forever)
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(graph, "loop", ctx(workspace, loop_limit=3, max_tool_calls=50), events=events)
    executed = [e for e in events if e["event"] == "tool_result" and e["ok"]]
    assert len(executed) == 4 and final["tool_calls_made"] == 4  # loop_limit + 1, far below max_tool_calls
    assert final["answer"] == "It is 4."
    notice = LOOP_NOTICE.format(tool="calculator", count=3)
    assert [notice in system_prompt(r) for r in srv.requests] == [False, False, False, True, False]
    assert srv.offered_tools(3) and srv.offered_tools(-1) == [] and "tools" not in srv.requests[-1]
    assert LOOP_FINALIZE_NOTICE.format(tool="calculator", count=4) in system_prompt(srv.requests[-1])
    loops = [e for e in events if e["event"] == "loop_detected"]
    assert [(e["action"], e["repeats"], e["tool"]) for e in loops] == [
        ("notice", 3, "calculator"),
        ("finalize", 4, "calculator"),
    ]
    assert not any(e["event"] == "tool_limit" for e in events)


async def test_identical_calls_in_one_turn_count_and_other_arguments_reset(scripted_server, workspace):
    same = {"name": "calculator", "arguments": {"expression": "1+1"}}
    srv = scripted_server(
        [
            tool_calls([same, same]),  # 2 in a row
            tool_call("calculator", {"expression": "1 + 1"}),  # other arguments: starts over
            tool_calls([same, same, same]),  # 3 in a row: the limit, a notice
            tool_call("calculator", {"expression": "3*3"}),  # something else: the notice goes
            text("done"),
        ]
    )
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(graph, "q", ctx(workspace, loop_limit=3), events=events)
    assert final["answer"] == "done" and final["tool_calls_made"] == 7
    notice = LOOP_NOTICE.format(tool="calculator", count=3)
    assert [notice in system_prompt(r) for r in srv.requests] == [False, False, False, True, False]
    assert all(srv.offered_tools(i) for i in range(5))
    assert [e["action"] for e in events if e["event"] == "loop_detected"] == ["notice"]


async def test_loop_limit_zero_turns_detection_off(scripted_server, workspace):
    srv = scripted_server(responder=repeats_forever)
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(graph, "loop", ctx(workspace, loop_limit=0, max_tool_calls=6), events=events)
    assert final["tool_calls_made"] == 6 and final["answer"] == "It is 4."  # only the tool budget stopped it
    assert not any(e["event"] == "loop_detected" for e in events)


async def test_one_turn_repeating_a_call_runs_it_at_most_loop_limit_plus_one_times(scripted_server, workspace):
    same = {"name": "calculator", "arguments": {"expression": "2+2"}}
    srv = scripted_server(responder=lambda req: tool_calls([same] * 8) if req.get("tools") else text("It is 4."))
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(graph, "loop", ctx(workspace, loop_limit=3, max_tool_calls=50), events=events)
    results = [e for e in events if e["event"] == "tool_result"]
    assert [e["ok"] for e in results] == [True] * 4 + [False] * 4 and final["tool_calls_made"] == 4
    assert {e["error"] for e in results[4:]} == {"skipped_loop"}
    tool_messages = [m for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 8 and "Not run: the same calculator call" in tool_messages[-1]["content"]
    assert len(srv.requests) == 2 and "tools" not in srv.requests[-1] and final["answer"] == "It is 4."
