"""The agent node binds the offered tools to the model once and reuses the binding while the
same model and tool objects are offered; a different offer is bound anew."""

from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.testing.fake_models import ScriptedChatModel
from smart_agent.tools.registry import ToolMeta, ToolRegistry


def lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}"


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(StructuredTool.from_function(lookup), ToolMeta(source="user"))
    return reg


def calls(k: int) -> list[AIMessage]:
    return [AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": i}, "id": f"c{i}"}]) for i in range(k)]


async def test_the_same_offer_is_bound_once_per_graph_and_a_new_offer_anew():
    model = ScriptedChatModel(responses=[*calls(3), AIMessage("done"), *calls(1), AIMessage("done again")])
    graph = build_agent_graph(model=model, registry=registry())
    final = await graph.ainvoke({"task": "Look up three items."}, context=Context(memory=False))
    assert final["answer"] == "done" and final["tool_calls_made"] == 3
    assert model.bind_tools_calls == [["lookup"]]  # 4 model calls, one binding
    assert [c["tools"] for c in model.calls] == [["lookup"]] * 4  # every call was offered the tool
    # A second run of the graph offers the same objects: still bound once. At the tool limit
    # the last turn is offered nothing: no binding, and no tools on that call.
    final = await graph.ainvoke({"task": "One more."}, context=Context(memory=False, max_tool_calls=1))
    assert final["answer"] == "done again"
    assert model.bind_tools_calls == [["lookup"]]
    assert [c["tools"] for c in model.calls[4:]] == [["lookup"], []]
