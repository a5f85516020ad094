"""The agent loop driven through the real langchain-openai client over HTTP."""

import asyncio
import time

import pytest
from conftest import loop_context, openai_model, run_graph
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.prompts import FINALIZE_NOTICE
from smart_agent.testing.scripted_server import text, tool_call, tool_calls
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.registry import ToolRegistry

ctx = loop_context


run = run_graph


async def test_calculator_answer_over_http(scripted_server, workspace):
    srv = scripted_server(
        [
            tool_call("calculator", {"expression": "37*43"}),
            lambda req: text(f"37*43 = {req['messages'][-1]['content']}"),
        ]
    )
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    final = await run(graph, "What is 37*43?", ctx(workspace), events=events)
    assert final["answer"] == "37*43 = 1591"  # the tool's real result, echoed by the scripted model
    assert final["tool_calls_made"] == 1
    kinds = [e["event"] for e in events]
    assert kinds.count("usage") == 2 and "tool_call" in kinds and "tool_result" in kinds and kinds[-1] == "final_answer"
    assert "calculator" in srv.offered_tools(0)
    assert srv.requests[0]["messages"][0]["role"] == "system"


async def test_tool_limit_stops_a_model_that_calls_tools_forever(scripted_server, workspace):
    def forever(req):
        return tool_call("calculator", {"expression": "2+2"}) if req.get("tools") else text("Best answer so far: 4.")

    srv = scripted_server(responder=forever)
    graph = build_agent_graph(model=openai_model(srv))
    events = []
    # loop_limit=0: loop detection (tests/graph/test_loop_detection.py) would stop this model first
    final = await run(graph, "loop", ctx(workspace, max_tool_calls=5, loop_limit=0), events=events)
    executed = [e for e in events if e["event"] == "tool_result" and e["ok"]]
    assert len(executed) == 5 and final["tool_calls_made"] == 5
    assert final["answer"] == "Best answer so far: 4."
    assert srv.offered_tools(-1) == [] and "tools" not in srv.requests[-1]
    assert FINALIZE_NOTICE.format(limit=5) in srv.requests[-1]["messages"][0]["content"]
    assert any(e["event"] == "tool_limit" for e in events)


async def test_calls_beyond_budget_in_one_turn_are_skipped(scripted_server, workspace):
    many = tool_calls([{"name": "calculator", "arguments": {"expression": f"{i}+1"}} for i in range(6)])
    srv = scripted_server([many, text("done")])
    graph = build_agent_graph(model=openai_model(srv))
    final = await run(graph, "six at once", ctx(workspace, max_tool_calls=4))
    tool_msgs = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_msgs[:4]] == ["1", "2", "3", "4"]
    assert all(m.content.startswith("Skipped: tool-call limit") for m in tool_msgs[4:]) and len(tool_msgs) == 6
    assert final["tool_calls_made"] == 4 and final["answer"] == "done"
    # the finalize turn offered no tools
    assert srv.offered_tools(-1) == []


async def test_parallel_tools_are_bounded(scripted_server, workspace):
    active = {"now": 0, "peak": 0}

    @tool
    async def slow(n: int) -> str:
        """Sleep a little."""
        active["now"] += 1
        active["peak"] = max(active["peak"], active["now"])
        await asyncio.sleep(0.2)
        active["now"] -= 1
        return str(n)

    reg = ToolRegistry()
    reg.register(slow)
    srv = scripted_server([tool_calls([{"name": "slow", "arguments": {"n": i}} for i in range(6)]), text("ok")])
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    final = await run(graph, "go", ctx(workspace, max_parallel_tools=3))
    assert active["peak"] == 3  # three calls in flight at once (concurrent, not sequential), never more
    assert [m.content for m in final["messages"] if isinstance(m, ToolMessage)] == [str(i) for i in range(6)]


async def test_tool_failures_become_error_messages(scripted_server, workspace):
    @tool
    def explode(x: int) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    reg = default_registry()
    reg.register(explode)
    srv = scripted_server([
        tool_calls([
            {"name": "explode", "arguments": {"x": 1}},
            {"name": "no_such_tool", "arguments": {}},
            {"name": "calculator", "arguments": {"wrong_arg": 1}},
            {"name": "read_file", "arguments": {"path": "../../etc/passwd"}},
        ]),
        text("recovered"),
    ])
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    final = await run(graph, "break things", ctx(workspace))
    msgs = {m.name: m for m in final["messages"] if isinstance(m, ToolMessage)}
    assert msgs["explode"].status == "error" and "disk on fire" in msgs["explode"].content
    assert "Unknown tool 'no_such_tool'" in msgs["no_such_tool"].content
    assert "Invalid arguments" in msgs["calculator"].content and "expression" in msgs["calculator"].content
    assert msgs["read_file"].status == "error" and "outside" in msgs["read_file"].content.lower()
    assert final["answer"] == "recovered"
    # the model saw every error as a tool message
    sent = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert len(sent) == 4


async def test_malformed_tool_arguments_are_reported_not_crashed(scripted_server, workspace):
    bad = {"tool_calls": [{"name": "calculator", "arguments": "{not json"}]}
    srv = scripted_server([bad, text("sorry")])
    graph = build_agent_graph(model=openai_model(srv))
    final = await run(graph, "x", ctx(workspace))
    tool_msgs = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_msgs) == 1 and tool_msgs[0].status == "error" and "Invalid tool call" in tool_msgs[0].content
    assert final["answer"] == "sorry" and final["tool_calls_made"] == 1


async def test_thread_history_is_shared_between_runs(scripted_server, workspace):
    srv = scripted_server(
        [text("Nice to meet you, Ada."), lambda req: text(f"I have {len(req['messages'])} messages of context.")]
    )
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    await run(graph, "My name is Ada.", ctx(workspace), thread="t1")
    final = await run(graph, "What is my name?", ctx(workspace), thread="t1")
    contents = [m["content"] for m in srv.requests[1]["messages"]]
    assert "My name is Ada." in contents and "Nice to meet you, Ada." in contents
    assert final["answer"] == "I have 4 messages of context."  # system + 3
    assert final["tool_calls_made"] == 0


async def test_model_ignoring_finalize_still_ends_with_answer(scripted_server, workspace):
    srv = scripted_server(responder=lambda req: tool_call("calculator", {"expression": "1+1"}, content="Partial: 2"))
    graph = build_agent_graph(model=openai_model(srv))
    final = await run(graph, "x", ctx(workspace, max_tool_calls=2))
    last = final["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls  # no dangling calls in the thread
    assert final["answer"] == "Partial: 2" and final["tool_calls_made"] == 2


async def test_zero_tool_budget_offers_no_tools(scripted_server, workspace):
    srv = scripted_server([text("direct")])
    graph = build_agent_graph(model=openai_model(srv))
    final = await run(graph, "x", ctx(workspace, max_tool_calls=0))
    assert final["answer"] == "direct" and srv.offered_tools(0) == []


async def test_interrupted_run_is_repaired_on_next_turn(scripted_server, workspace):
    srv = scripted_server([text("fine")])
    saver = InMemorySaver()
    graph = build_agent_graph(model=openai_model(srv), checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    dangling = AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "1"}, "id": "c9"}])
    await graph.aupdate_state(config, {"messages": [HumanMessage("first"), dangling]}, as_node="agent")
    final = await run(graph, "second", ctx(workspace), thread="t")
    roles = [m["role"] for m in srv.requests[0]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert final["answer"] == "fine"


AGENT_EDGES = {  # (source, target, conditional): what Studio and the README draw
    ("__start__", "resolver", False),
    # memory off: the run skips memory_recall and memory_write
    ("resolver", "memory_recall", True),
    ("resolver", "summarize", True),
    ("resolver", "agent", True),
    ("memory_recall", "agent", True),
    ("memory_recall", "summarize", True),
    ("summarize", "agent", False),
    ("agent", "tools", True),
    ("agent", "human", True),
    ("human", "tools", False),
    ("agent", "structuredOutput", True),
    ("agent", "memory_write", True),
    ("agent", "__end__", True),
    ("agent", "agent", True),  # every call of the reply answered before it runs (a limit): the model reads why
    # a tool turn goes to the agent's step, which decides first (nodes/after_tools.py)
    ("tools", "agent", False),
    ("agent", "summarize", True),
    ("agent", "toolLimitFinalize", True),
    # the handoff node is always wired (only a team routes to it)
    ("agent", "handoff", True),
    ("handoff", "agent", True),
    ("handoff", "summarize", True),
    ("handoff", "toolLimitFinalize", True),
    ("toolLimitFinalize", "agent", True),
    ("toolLimitFinalize", "summarize", True),
    ("structuredOutput", "agent", True),
    ("structuredOutput", "summarize", True),
    ("structuredOutput", "memory_write", True),
    ("structuredOutput", "__end__", True),
    ("memory_write", "__end__", False),
}


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_graph_draws_the_loop():
    drawing = build_agent_graph(registry=ToolRegistry()).get_graph()
    mermaid = drawing.draw_mermaid()
    for node in ("resolver", "agent", "tools", "toolLimitFinalize"):
        assert node in mermaid
    assert {(e.source, e.target, e.conditional) for e in drawing.edges} == AGENT_EDGES


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_memory_tools_are_offered_only_while_memory_is_on(workspace):
    from smart_agent.nodes.agent import offered_tools

    registry = default_registry()
    off = [t.name for t in offered_tools(ctx(workspace, memory=False), registry, {})]
    on = [t.name for t in offered_tools(ctx(workspace, memory=True), registry, {})]
    assert "remember" not in off and "search_memory" not in off and "calculator" in off
    assert "remember" in on and "search_memory" in on


@pytest.mark.unit
def test_the_remembered_offer_follows_the_registry(workspace):
    from smart_agent.nodes.agent import offered_tools
    from smart_agent.tools.registry import ToolMeta

    @tool
    def extra(x: int) -> int:
        """Echo x."""
        return x

    registry, run = default_registry(), ctx(workspace, memory=False)
    first = [t.name for t in offered_tools(run, registry, {})]
    assert "extra" not in first and offered_tools(run, registry, {}) == offered_tools(run, registry, {})
    registry.register(extra)
    assert [t.name for t in offered_tools(run, registry, {})] == [*first, "extra"]
    registry.unregister("extra")
    assert [t.name for t in offered_tools(run, registry, {})] == first
    registry.defer(lambda r: r.register(extra, ToolMeta(tags=("memory",))))  # pending: read afresh
    assert "extra" not in [t.name for t in offered_tools(run, registry, {})]  # (a memory tool: memory is off)
    assert "extra" in [t.name for t in offered_tools(ctx(workspace, memory=True), registry, {})]
    offered = offered_tools(run, registry, {})
    offered.clear()  # a caller's list is its own
    assert offered_tools(run, registry, {}) != []


async def test_tool_timeout_is_the_lower_of_tool_and_run(scripted_server, workspace):
    @tool
    async def sleepy(seconds: float) -> str:
        """Sleep."""
        await asyncio.sleep(seconds)
        return "woke"

    from smart_agent.tools.registry import ToolMeta

    reg = ToolRegistry()
    reg.register(sleepy, ToolMeta(timeout_s=0.2))
    calls = [{"name": "sleepy", "arguments": {"seconds": 2}}]
    srv = scripted_server([tool_calls(calls), text("a"), tool_calls(calls), text("b")])
    graph = build_agent_graph(model=openai_model(srv), registry=reg)

    t0 = time.perf_counter()
    final = await run(graph, "sleep", ctx(workspace, tool_timeout_s=60))  # the tool's own 0.2 s wins
    msg = next(m for m in final["messages"] if isinstance(m, ToolMessage))
    assert msg.status == "error" and "timed out after 0.2 s" in msg.content
    assert time.perf_counter() - t0 < 1.5

    final = await run(graph, "sleep", ctx(workspace, tool_timeout_s=0.1))  # the run's 0.1 s wins
    msg = next(m for m in final["messages"] if isinstance(m, ToolMessage))
    assert "timed out after 0.1 s" in msg.content


def _flaky_registry(exc_factory, failures, **meta):
    from smart_agent.tools.registry import ToolMeta

    attempts = {"n": 0}

    @tool
    def flaky(x: int) -> str:
        """A plugin tool that fails a few times."""
        attempts["n"] += 1
        if attempts["n"] <= failures:
            raise exc_factory()
        return f"ok after {attempts['n']}"

    reg = ToolRegistry()
    reg.register(flaky, ToolMeta(**meta))
    return reg, attempts


@pytest.mark.parametrize("exc_factory", [lambda: ConnectionError("reset"), None])
async def test_flaky_plugin_tool_is_retried_within_one_turn(scripted_server, workspace, exc_factory):
    from smart_agent.tools.retry import RetryableToolError

    exc_factory = exc_factory or (lambda: RetryableToolError("busy"))
    reg, attempts = _flaky_registry(exc_factory, 2, retries=2)
    srv = scripted_server([tool_call("flaky", {"x": 1}), lambda req: text(req["messages"][-1]["content"])])
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    events = []
    final = await run(graph, "go", ctx(workspace), events=events)
    assert attempts["n"] == 3 and len(srv.requests) == 2  # one model turn for the tool, one to answer
    msg = next(m for m in final["messages"] if isinstance(m, ToolMessage))
    assert msg.content == "ok after 3" and msg.status != "error" and final["answer"] == "ok after 3"
    retries = [e for e in events if e["event"] == "tool_retry"]
    assert [e["attempt"] for e in retries] == [2, 3] and all(e["of"] == 3 for e in retries)
    assert final["tool_calls_made"] == 3  # every attempt spends the budget


async def test_run_default_tool_retries_and_budget(scripted_server, workspace):
    reg, attempts = _flaky_registry(lambda: ConnectionError("reset"), 5)
    srv = scripted_server([tool_call("flaky", {"x": 1}), text("gave up")])
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    final = await run(graph, "go", ctx(workspace, tool_retries=3, max_tool_calls=2))
    assert attempts["n"] == 2 and final["tool_calls_made"] == 2  # the budget, not tool_retries, stopped it
    msg = next(m for m in final["messages"] if isinstance(m, ToolMessage))
    assert msg.status == "error" and "not retried: tool budget exhausted" in msg.content


@pytest.mark.parametrize("exc_factory", [lambda: ZeroDivisionError("x"), None])
async def test_deterministic_tool_errors_are_not_retried(scripted_server, workspace, exc_factory):
    from smart_agent.tools.guards import ToolError

    exc_factory = exc_factory or (lambda: ToolError("bad input"))
    reg, attempts = _flaky_registry(exc_factory, 5, retries=2)
    srv = scripted_server([tool_call("flaky", {"x": 1}), text("failed")])
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    events = []
    final = await run(graph, "go", ctx(workspace, tool_retries=2), events=events)
    assert attempts["n"] == 1 and final["tool_calls_made"] == 1
    assert not any(e["event"] == "tool_retry" for e in events)


async def test_validation_errors_are_not_retried(scripted_server, workspace):
    reg, attempts = _flaky_registry(lambda: ConnectionError("reset"), 2, retries=2)
    calls = [{"name": "flaky", "arguments": {"x": "not a number"}}, {"name": "flaky", "arguments": {"x": 1}}]
    srv = scripted_server([tool_calls(calls), text("done")])
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    events = []
    final = await run(graph, "go", ctx(workspace), events=events)
    bad, good = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert bad.status == "error" and good.content == "ok after 3"  # only the valid call ran, and was retried
    retried_ids = {e["id"] for e in events if e["event"] == "tool_retry"}
    assert retried_ids == {good.tool_call_id} and final["tool_calls_made"] == 4
