"""The agent loop routes with conditional edges (LangGraph's public API), and a plain edge from
tools to the agent's step, which decides after a tool turn: a state written with update_state -
how Studio edits a thread - goes where the edge sends it."""

from conftest import openai_model
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.testing.scripted_server import text, tool_call


def ctx(workspace, **kw):
    kw.setdefault("memory", False)
    return Context(workspace=str(workspace), **kw)


CALL = AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}, "id": "c1"}])


def test_the_loops_routes_are_conditional_edges():
    graph = build_agent_graph()
    routed = {"agent", "resolver", "memory_recall", "handoff", "toolLimitFinalize", "structuredOutput"}
    assert set(graph.builder.branches) == routed
    drawn = graph.get_graph().edges
    pairs = {(e.source, e.target) for e in drawn}
    assert {("agent", "tools"), ("tools", "agent"), ("agent", "toolLimitFinalize")} <= pairs
    # tools -> agent is a plain edge: a state written as tools goes on to the agent's step
    assert ("tools", "agent") in graph.builder.edges


async def test_update_state_as_agent_goes_to_tools_then_on(scripted_server, workspace):
    srv = scripted_server([lambda req: text(f"It is {req['messages'][-1]['content']}.")])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "edit"}}
    await graph.aupdate_state(config, {"messages": [HumanMessage("6*7?"), CALL]}, as_node="agent")
    assert (await graph.aget_state(config)).next == ("tools",)
    final = await graph.ainvoke(None, config=config, context=ctx(workspace))
    assert final["answer"] == "It is 42."  # the calculator ran on the written call, then the model answered
    assert len(srv.requests) == 1


async def test_update_state_without_as_node_routes_as_the_last_node(scripted_server, workspace):
    srv = scripted_server([text("first"), lambda req: text(f"got {req['messages'][-1]['content']}")])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "last"}}
    await graph.ainvoke({"task": "hi"}, config=config, context=ctx(workspace))
    # The run ended at the agent node: an edited state is applied as the agent's, and its
    # route sends a written tool call to the tools node.
    await graph.aupdate_state(config, {"messages": [CALL]})
    assert (await graph.aget_state(config)).next == ("tools",)
    final = await graph.ainvoke(None, config=config, context=ctx(workspace))
    assert final["answer"] == "got 42"


def test_sync_update_state_routes_too(workspace, monkeypatch):
    graph = build_agent_graph(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "sync"}}
    # No run context: the environment's memory setting decides, as it did for the edge.
    monkeypatch.setenv("SMART_AGENT_MEMORY", "1")
    graph.update_state(config, {"messages": [HumanMessage("q"), AIMessage("done")]}, as_node="agent")
    assert graph.get_state(config).next == ("memory_write",)  # a final answer ends the run
    monkeypatch.setenv("SMART_AGENT_MEMORY", "0")
    graph.update_state(config, {"messages": [AIMessage("done again")]}, as_node="agent")
    assert graph.get_state(config).next == ()
    graph.update_state(config, {"messages": [CALL]}, as_node="agent")
    assert graph.get_state(config).next == ("tools",)


async def test_a_tool_result_edited_at_a_breakpoint_after_tools_goes_on_to_the_agent(scripted_server, workspace):
    """Studio's debugging step: stop after the tools node (interrupt_after), edit the tool's result
    (written as tools, the node that ran last), carry on. The edit follows the tools node's plain
    edge to the agent's step, so the model reads the edited result. (A tools node routing itself
    with a Command would leave the edited thread with nothing next.)"""
    from langchain_core.messages import ToolMessage

    srv = scripted_server([
        tool_call("calculator", {"expression": "6*7"}), lambda req: text(f"got {req['messages'][-1]['content']}")
    ])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "breakpoint"}}
    await graph.ainvoke({"task": "6*7?"}, config=config, context=ctx(workspace), interrupt_after=["tools"])
    state = await graph.aget_state(config)
    result = state.values["messages"][-1]
    assert state.next == ("agent",) and result.content == "42"
    await graph.aupdate_state(config, {"messages": [ToolMessage("41", tool_call_id=result.tool_call_id, id=result.id)]})
    assert (await graph.aget_state(config)).next == ("agent",)
    final = await graph.ainvoke(None, config=config, context=ctx(workspace))
    assert final["answer"] == "got 41" and len(srv.requests) == 2


async def test_a_tool_result_edited_at_the_tool_limit_still_finalizes(scripted_server, workspace):
    """The same step on the turn that spends the tool budget: the agent's step takes the decision
    after tools on the edited state, sends the run to toolLimitFinalize without a model call, and
    the one request after it offers no tools and carries the edited result."""
    from langchain_core.messages import ToolMessage

    srv = scripted_server([
        tool_call("calculator", {"expression": "6*7"}), lambda req: text(f"got {req['messages'][-2]['content']}")
    ])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "limit"}}
    run = ctx(workspace, max_tool_calls=1)
    await graph.ainvoke({"task": "6*7?"}, config=config, context=run, interrupt_after=["tools"])
    result = (await graph.aget_state(config)).values["messages"][-1]
    await graph.aupdate_state(config, {"messages": [ToolMessage("41", tool_call_id=result.tool_call_id, id=result.id)]})
    assert (await graph.aget_state(config)).next == ("agent",)
    final = await graph.ainvoke(None, config=config, context=run)
    assert len(srv.requests) == 2 and not srv.requests[1].get("tools")
    assert any(m.get("content") == "41" for m in srv.requests[1]["messages"])
    assert final["answer"].startswith("got") and final["tool_calls_made"] == 1
    steps = [s.next for s in [s async for s in graph.aget_state_history(config)]][::-1]
    assert ("toolLimitFinalize",) in steps


async def test_a_run_setting_edited_at_a_breakpoint_keeps_the_runs_other_settings(scripted_server, workspace):
    """Studio edits one entry of ``run_settings`` (the tool budget) while the run waits before
    ``tools``: the budget applies, and the run's output schema, written in the same key at its
    start, still shapes the answer."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    srv = scripted_server([tool_call("calculator", {"expression": "6*7"}), text('{"n": 41}')])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "budget"}}
    run_ctx = ctx(workspace, output_schema=schema)
    await graph.ainvoke({"task": "6*7?"}, config=config, context=run_ctx, interrupt_before=["tools"])
    before = (await graph.aget_state(config)).values["run_settings"]
    assert before["output_schema"] == schema and before["max_tool_calls"] == run_ctx.max_tool_calls
    await graph.aupdate_state(config, {"run_settings": {"max_tool_calls": 0}})
    after = (await graph.aget_state(config)).values["run_settings"]
    assert after == {**before, "max_tool_calls": 0}
    final = await graph.ainvoke(None, config=config, context=run_ctx)
    assert final["structured_response"] == {"n": 41}
    result = srv.requests[1]["messages"][-1]  # the call was not run: the edited budget was spent
    assert result["role"] == "tool" and "42" not in result["content"]
    assert "tools" not in srv.requests[1]  # the tool limit's final turn offers none
