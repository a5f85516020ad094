"""The agent's edge reads only the keys it decides on (``AGENT_EDGE_READS``): LangGraph hands it
those, so a route that read another key would decide on a state without it."""

from __future__ import annotations

from typing import Any, get_type_hints

from langchain.agents.middleware import after_model, before_model
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.team import build_team_graph
from smart_agent.nodes.routes import AGENT_EDGE_READS, Edge
from smart_agent.nodes.team import AgentSpec
from smart_agent.state import AgentState, only_keys
from smart_agent.tools.calculator import calculator


class Recorder(dict):
    """A state that notes every key a route reads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        self.read.add(key)
        return super().__contains__(key)


CALL = AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "1"}, "id": "c1"}])
HANDOFF = AIMessage("", tool_calls=[{"name": "transfer_to_support", "args": {}, "id": "h1"}])
ANSWERED = [HumanMessage("q"), CALL, ToolMessage("1", tool_call_id="c1")]

STATES: list[dict[str, Any]] = [
    {"messages": [HumanMessage("q"), CALL]},
    {"messages": [HumanMessage("q"), AIMessage("done")]},
    {"messages": [HumanMessage("q"), AIMessage("{}")], "run_settings": {"output_schema": {"type": "object"}}},
    {"messages": ANSWERED, "bookkeeping": {"after_tools": "summarize"}},
    {"messages": ANSWERED, "bookkeeping": {"after_tools": "pending"}},
    {"messages": ANSWERED},  # (a middleware answered the call: the model reads the result)
    {"messages": [HumanMessage("q"), CALL], "bookkeeping": {"stopped": "tool_call_limit"}},
    {"messages": [HumanMessage("q"), CALL], "bookkeeping": {"finalize": True}},
    {"messages": [HumanMessage("q"), CALL], "approve": "all", "ask_user": True},
    {"messages": [HumanMessage("q"), CALL], "jump_to": "end"},
    {"messages": [HumanMessage("q"), CALL], "jump_to": "model"},
    {"messages": [HumanMessage("q"), HANDOFF], "active_agent": "triage", "approve": "all"},
]


@before_model
def noting(state: Any, runtime: Any) -> None:
    return None


@after_model
def looking(state: Any, runtime: Any) -> None:
    return None


def team() -> Any:
    return build_team_graph(agents={
        "triage": AgentSpec("You are triage.", handoffs=["support"]),
        "support": AgentSpec("You are support.", tools=[calculator], handoffs=["triage"]),
    })  # fmt: skip


def test_the_agents_edges_read_only_the_keys_they_decide_on():
    graphs = [build_agent_graph(), build_agent_graph(middleware=[noting, looking]), team()]
    checked = 0
    for graph in graphs:
        for node in ("agent", "after_model"):
            for edge in graph.builder.branches.get(node, {}).values():
                assert isinstance(edge.path, Edge) and edge.path.reads is not None
                assert set(edge.path.reads.__annotations__) <= set(AGENT_EDGE_READS)
                for state in STATES:
                    recorder = Recorder(state)
                    edge.path.func(recorder)
                    assert recorder.read <= set(AGENT_EDGE_READS), (node, state, recorder.read - set(AGENT_EDGE_READS))
                    checked += 1
    assert checked == len(STATES) * 4  # plain, with hooks (agent, after_model), a team


def test_a_graphs_own_keys_only_join_its_edges_reads():
    plain = build_agent_graph().builder.branches["agent"]
    hooked = build_agent_graph(middleware=[noting, looking]).builder.branches["agent"]
    teamed = team().builder.branches["agent"]
    (plain_reads,) = (spec.path.reads.__annotations__ for spec in plain.values())
    (hooked_reads,) = (spec.path.reads.__annotations__ for spec in hooked.values())
    (team_reads,) = (spec.path.reads.__annotations__ for spec in teamed.values())
    assert "jump_to" not in plain_reads and "active_agent" not in plain_reads  # (no key added to the state)
    assert "jump_to" in hooked_reads and "active_agent" in team_reads


class Small(TypedDict, total=False):
    messages: list
    seen: list


async def test_langgraph_gives_an_edge_only_the_keys_it_reads():
    got: list[set[str]] = []

    def decide(state: Any) -> str:
        got.append(set(state))
        return END

    class Wide(TypedDict, total=False):
        messages: list
        seen: list
        other: str
        unset: int

    def node(state: Any) -> dict[str, Any]:
        return {"messages": ["m"], "seen": [1], "other": "x"}

    for reads, expected in ((only_keys(Wide, ("messages", "seen"), "Reads"), {"messages", "seen"}),
                            (None, {"messages", "seen", "other"})):  # fmt: skip
        builder = StateGraph(Wide)
        builder.add_node("node", node)
        builder.add_edge(START, "node")
        builder.add_conditional_edges("node", Edge(decide, reads), [END])
        await builder.compile().ainvoke({"messages": []})
        assert got.pop() == expected


def test_only_keys_keeps_what_the_schema_declares():
    reads = only_keys(AgentState, ("messages", "run_settings", "no_such_key"), "R")
    hints = reads.__annotations__
    assert set(hints) == {"messages", "run_settings"}
    declared = get_type_hints(AgentState, include_extras=True)
    assert hints == {"messages": declared["messages"], "run_settings": declared["run_settings"]}  # (the reducers too)
