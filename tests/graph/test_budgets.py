"""Run budgets (usage.py) in every graph, through the real langchain-openai client against
the scripted server: model calls, tokens and cost end a run with an answer, and the
state's ``usage`` adds up what the server reported."""

from conftest import openai_model, run_graph

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.usage import BUDGET_NOTICE, OUTPUT_ALLOWANCE
from smart_agent.testing.scripted_server import text, tool_call

USAGE = {"prompt_tokens": 100, "completion_tokens": 10}


def ctx(workspace, **kw):
    return Context(workspace=str(workspace), memory=False, loop_limit=0, **kw)


def loops_forever(req):
    """A calculator call whenever tools are offered (with fixed usage); an answer when none are."""
    if req.get("tools"):
        return {**tool_call("calculator", {"expression": "2+2"}), "usage": USAGE}
    return {**text("It is 4."), "usage": USAGE}


def budget_events(events, action=None):
    return [e for e in events if e["event"] == "budget" and (action is None or e["action"] == action)]


async def test_max_model_calls_makes_exactly_that_many_requests_the_last_without_tools(scripted_server, workspace):
    srv = scripted_server(responder=loops_forever)
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(graph, "loop", ctx(workspace, max_model_calls=4, max_tool_calls=50), events=events)
    assert len(srv.requests) == 4
    assert all(srv.offered_tools(i) for i in range(3)) and "tools" not in srv.requests[-1]
    assert BUDGET_NOTICE in srv.requests[-1]["messages"][0]["content"]
    assert final["answer"] == "It is 4." and final["tool_calls_made"] == 3
    assert final["usage"] == {"model_calls": 4, "input_tokens": 400, "output_tokens": 40,
                              "cost_usd": final["usage"]["cost_usd"], "cache_read_tokens": 0, "cache_write_tokens": 0}
    assert [e["consumed"]["model_calls"] for e in budget_events(events, "ok")] == [1, 2, 3, 4]
    [finalize] = budget_events(events, "finalize")
    assert finalize["reason"] == "model_calls" and finalize["consumed"]["model_calls"] == 3
    assert finalize["limit"] == {"model_calls": 4, "tokens": 0, "cost_usd": 0.0}


async def test_no_budget_no_events_and_usage_still_counted(scripted_server, workspace):
    srv = scripted_server([{**tool_call("calculator", {"expression": "1+1"}), "usage": USAGE},
                           {**text("2"), "usage": USAGE}])
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(graph, "q", ctx(workspace), events=events)
    assert final["usage"]["model_calls"] == 2 and final["usage"]["input_tokens"] == 200
    assert budget_events(events) == []


def small_ctx(workspace, **kw):
    return ctx(workspace, tools=["calculator"], max_tool_calls=100, **kw)


async def test_max_tokens_stops_the_loop_with_an_answer_within_the_budget(scripted_server, workspace):
    srv = scripted_server(responder=loops_forever)
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(graph, "loop", small_ctx(workspace, max_tokens=4000), events=events)
    n = len(srv.requests)
    assert 2 <= n < 30 and all(srv.offered_tools(i) for i in range(n - 1)) and "tools" not in srv.requests[-1]
    assert final["answer"] == "It is 4."
    assert final["usage"]["input_tokens"] == 100 * n and final["usage"]["output_tokens"] == 10 * n
    [finalize] = budget_events(events, "finalize")
    assert finalize["reason"] == "tokens"
    # the last turn was predicted not to leave room for another one of its size
    assert 110 * (n - 1) + 2 * OUTPUT_ALLOWANCE <= 4000


async def test_max_cost_stops_the_loop_priced_through_smart_agent_prices(scripted_server, workspace, monkeypatch):
    monkeypatch.setenv("SMART_AGENT_PRICES", '{"scripted-model": {"input": 100, "output": 1000}}')
    srv = scripted_server(responder=loops_forever)
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run_graph(
        graph, "loop", small_ctx(workspace, model="openai:scripted-model", max_cost_usd=1.0), events=events
    )
    n = len(srv.requests)
    assert 2 <= n < 30 and "tools" not in srv.requests[-1] and all(srv.offered_tools(i) for i in range(n - 1))
    per_call = (100 * 100 + 10 * 1000) / 1_000_000  # $0.02
    assert abs(final["usage"]["cost_usd"] - n * per_call) < 1e-9 and final["usage"]["cost_usd"] <= 1.0
    assert budget_events(events, "finalize")[0]["reason"] == "cost"


async def test_planner_stops_planning_and_synthesizes_at_the_call_budget(scripted_server):
    from planner_support import make_registry

    from smart_agent.graphs.planner import build_planner_graph
    from smart_agent.nodes.planner.prompts import SYNTHESIZE_SYSTEM

    srv = scripted_server(responder=lambda req: text("no plan today") if req.get("tools") else text("Nothing ran."))
    registry, _ = make_registry()
    graph = build_planner_graph(model=openai_model(srv), registry=registry)
    events = []
    final = await run_graph(
        graph, "add 2 and 3", Context(memory=False, max_plan_attempts=5, max_model_calls=3), events=events
    )
    assert len(srv.requests) == 3  # two planning attempts, then the last call synthesizes
    assert srv.requests[-1]["messages"][0]["content"] == SYNTHESIZE_SYSTEM
    assert final["status"] == "over_budget" and final["answer"] == "Nothing ran."
    assert final["usage"]["model_calls"] == 3
    assert [e["reason"] for e in budget_events(events, "finalize")] == ["model_calls"]


async def test_dual_counts_its_planner_and_forces_the_final_decision(scripted_server):
    from planner_support import make_registry

    from smart_agent.graphs.dual import build_dual_graph
    from smart_agent.nodes.dual import DECIDE, LAST_STEP

    plan = {"steps": [{"id": "s1", "tool": "add", "args": {"a": 2, "b": 3}}]}

    def respond(req):
        offered = [t["function"]["name"] for t in req.get("tools") or []]
        if DECIDE in offered:
            if LAST_STEP in req["messages"][-1]["content"]:
                return tool_call(DECIDE, {"action": "final", "answer": "2 + 3 = 5"})
            return tool_call(DECIDE, {"action": "execute", "objective": "Add 2 and 3"})
        if "submit_plan" in offered:
            return tool_call("submit_plan", plan)
        return text("The sum is 5.")

    srv = scripted_server(responder=respond)
    registry, calls = make_registry()
    graph = build_dual_graph(model=openai_model(srv), registry=registry)
    events = []
    final = await run_graph(
        graph, "What is 2 + 3?", Context(memory=False, max_iterations=10, max_model_calls=4), events=events
    )
    # decide (execute) → the planner's plan and synthesis → the last call: the final decision
    assert len(srv.requests) == 4 and calls["add"] == 1
    assert LAST_STEP in srv.requests[-1]["messages"][-1]["content"]
    assert final["answer"] == "2 + 3 = 5" and final["usage"]["model_calls"] == 4


async def test_fleet_workers_share_one_budget(scripted_server):
    from smart_agent.graphs.fleet import build_fleet_graph
    from smart_agent.nodes.fleet import SUBMIT_SUBTASKS

    def respond(req):
        offered = [t["function"]["name"] for t in req.get("tools") or []]
        if SUBMIT_SUBTASKS in offered:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": ["count to 10", "count to 20"]})
        if offered:
            return {**tool_call("calculator", {"expression": "1+1"}), "usage": USAGE}
        return {**text("done"), "usage": USAGE}

    srv = scripted_server(responder=respond)
    graph = build_fleet_graph(model=openai_model(srv))
    events = []
    context = Context(memory=False, loop_limit=0, max_tool_calls=100, tools=["calculator"], max_workers=2,
                      max_model_calls=8)
    final = await run_graph(graph, "count", context, events=events)
    # decompose, at most 6 worker calls between the two, the aggregation: 8 requests in all
    assert len(srv.requests) == 8 and final["usage"]["model_calls"] == 8
    assert final["answer"] == "done" and final["status"] == "done"
    workers = [r for r in final["results"].values()]
    assert sum(r["usage"]["model_calls"] for r in workers) == 6 and all(r["ok"] for r in workers)
    assert all(r["usage"]["model_calls"] >= 2 for r in workers)  # both worked, in parallel


async def test_a_sub_agents_calls_count_in_the_parents_budget(scripted_server, workspace):
    from smart_agent.graphs.sub_agent import sub_agent_tool
    from smart_agent.tools.registry import ToolRegistry

    def respond(req):  # the parent delegates whenever it can; the child (no tools) answers
        offered = [t["function"]["name"] for t in req.get("tools") or []]
        return tool_call("sub_agent", {"task": "look it up"}) if "sub_agent" in offered else text("done")

    srv = scripted_server(responder=respond)
    model = openai_model(srv)
    registry = ToolRegistry()
    registry.register(sub_agent_tool(model=model, registry=ToolRegistry()))
    graph = build_agent_graph(model=model, registry=registry)
    events = []
    final = await run_graph(graph, "delegate", ctx(workspace, max_model_calls=3), events=events)
    # parent (delegates) → the child (one call kept for the parent: it answers without tools) →
    # the parent, whose count includes the child's call: the last one, without tools
    assert len(srv.requests) == 3 and "tools" not in srv.requests[1] and "tools" not in srv.requests[-1]
    assert final["answer"] == "done" and final["usage"]["model_calls"] == 3
