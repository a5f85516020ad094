"""The agent loop graph ("Smart Agent"): wiring only — the work lives in nodes/.

    resolver → memory_recall → agent ⇄ [human →] tools → toolLimitFinalize → agent → memory_write → END

(``memory_recall`` and ``memory_write`` only while the run's memory is on.)

The ``handoff`` node is always wired after ``tools``; only a team routes to it. With
``agents`` (a team, or ``agents_file``: an agents file, ``docs/agents.md``) each member has
its own prompt, tools and settings, ``transfer_to_<name>`` tools hand the thread over, and
the active member's turn runs the same agent, human and tools nodes. The served ``graph``
runs the team of ``$SMART_AGENT_AGENTS`` when it is set.

MCP servers (the agents file's ``mcp_servers``, ``mcp_config``; for the served ``graph``
``$SMART_AGENT_MCP_CONFIG``) are opened around each async run and closed at its end
(``graphs/run_scope.py``); their tools are the run's.

``human`` (nodes/human.py) pauses the run (a LangGraph interrupt) for the tool calls the
run's ``approve`` setting names and for ``ask_user`` questions.

Before every agent turn ``route_before_agent`` inserts ``summarize`` when the next
request would exceed the context budget; with an output schema the final answer
passes ``structuredOutput`` (valid: end; invalid: back to the agent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph

from ..config.context import AgentContext
from ..history.budget import ContextBudget
from ..nodes.after_tools import FORWARDS, forwarded_first, gate_after_tools, mark_tool_turn
from ..nodes.agent import make_after_model_node, make_agent_node, offered_tools
from ..nodes.human import make_human_node, needs_human
from ..nodes.limit import tool_limit_finalize
from ..nodes.memory import memory_recall, memory_write, prefetch_recall
from ..nodes.reasoning import make_two_phase_node
from ..nodes.resolver import make_resolver
from ..nodes.routes import (
    AGENT_EDGE_READS,
    after_model_first,
    measured,
    reading,
    remembered,
    reviewed,
    route_after_agent,
    route_after_handoff,
    route_after_resolver,
    route_after_structured_output,
    route_before_agent,
)
from ..nodes.structured import make_structured_output_node
from ..nodes.summarize import make_summarize_node
from ..nodes.team import no_handoff
from ..nodes.tools import make_tools_node
from ..policies import tool_policies
from ..policies.hooks import Hooks, check_middleware, middleware_state, reducers_of
from ..policies.middleware import served_middleware
from ..state import TEAM_KEYS, AgentOutputState, AgentState, InputState, only_keys, without_keys
from ..tools.assembly import resolve_registry
from ..tools.registry import ToolRegistry
from ..tools.skills import project_start
from .delegation import with_sub_agents
from .run_scope import mcp_servers_of, served_graph, served_mcp_config, with_mcp_servers
from .team_file import served_agents_file, team_from_file

if TYPE_CHECKING:
    from ..nodes.team import AgentSpec

# Enough supersteps for any bounded run: the loop itself ends through the tool limit.
DEFAULT_RECURSION_LIMIT = 1000


def build_agent_graph(
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    tools: Iterable[BaseTool] | None = None,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "agent",
    token_counter: Any = None,
    output_schema: Any = None,
    agents: dict[str, AgentSpec] | None = None,
    default_agent: str | None = None,
    agents_file: Any = None,
    mcp_config: Any = None,
    middleware: Sequence[AgentMiddleware] = (),
    sub_agents: bool = True,
):
    """Compile the agent loop.

    ``model`` overrides the context's ``model`` string (useful in notebooks and
    tests); ``tools`` are added to the registry (default: the built-in tools and
    discovered plugins). ``token_counter`` counts request tokens for the context budget
    (default: 4 characters per token; a chat model or any
    ``(messages, tools) -> int`` callable, see tokens.py). ``output_schema`` (a pydantic
    model class or JSON Schema dict) is the default schema of the final answer; a
    run's ``output_schema`` context field overrides it.

    ``agents`` (name -> ``AgentSpec(prompt, tools, handoffs)``) makes a team: members
    replace ``registry``/``tools``, ``default_agent`` (the first member when None) holds a
    new thread, and the ``handoff`` node switches the active member. ``agents_file`` (a path)
    gives both from an agents file, the members' tools taken from ``registry``/``tools``.

    ``mcp_config`` (a ``{"mcpServers": ...}`` file, or ``McpServer``s) and the agents file's
    ``mcp_servers``: MCP servers whose sessions each async run opens and closes
    (``graphs/run_scope.py``); their tools are the run's (every one for a single agent, those
    its ``tools`` name for a member of the file).

    ``middleware``: LangChain ``AgentMiddleware`` (instances, or functions decorated with
    ``@before_model``, ``@wrap_tool_call``...) run in the loop's own nodes with ``create_agent``'s
    semantics (``policies/hooks.py``): ``before_agent`` in ``resolver``; ``before_model``,
    ``wrap_model_call`` and ``after_model`` in ``agent``; ``wrap_tool_call`` in ``tools``;
    ``after_agent`` where the run ends. Their ``tools`` are offered; their ``state_schema`` keys
    join the state; a hook's declared ``jump_to`` is honoured.

    ``sub_agents``: a single agent's registry gets the sub-agent tools (``graphs/delegation.py``),
    offered to runs whose ``sub_agent_tools`` setting is on. Skills, AGENTS.md: ``tools/skills.py``.
    """
    start_hooks = []
    middleware = check_middleware(middleware)
    tools = [*(tools or []), *Hooks(middleware).tools]
    servers = mcp_servers_of(mcp_config)
    if agents_file is not None:
        agents, default_agent, own_servers = team_from_file(
            agents_file, registry=resolve_registry(registry, tools), build=build_agent_graph, model=model,
            mcp_servers=servers, middleware=middleware,
        )
        servers = [*servers, *own_servers]
    # The state: the loop's, and the keys every middleware (a team member's too) adds to it.
    everyone_mw = [*middleware, *(m for spec in (agents or {}).values() for m in spec.middleware)]
    # (a team's own keys only in a team's state: every key of the state costs each step)
    state, output = (AgentState, AgentOutputState) if agents else (
        without_keys(AgentState, TEAM_KEYS), without_keys(AgentOutputState, TEAM_KEYS)
    )
    schema = middleware_state(state, everyone_mw) if everyone_mw else state
    reducers = reducers_of(schema)
    hooks = Hooks(middleware, reducers=reducers)
    if agents:
        from ..nodes.team import (
            active_agent,
            make_handoff_node,
            make_team_node,
            make_team_start_hook,
            team_budget_tools,
            team_registries,
            union_registry,
        )

        default_agent = default_agent or next(iter(agents))
        if default_agent not in agents:
            raise ValueError(f"default agent {default_agent!r} is not one of {', '.join(agents)}")
        registries = team_registries(agents)
        everyone = union_registry(registries)  # the budget's worst case: every member's tools
        budget = ContextBudget(team_budget_tools(everyone), token_counter, output_schema)
        start_hooks.append(make_team_start_hook(agents, default_agent))
        own = {n: Hooks([*middleware, *agents[n].middleware], reducers=reducers) for n in registries}
        turns = {
            n: make_two_phase_node(make_agent_node(r, model, budget, own[n]), r, model, budget, own[n])
            for n, r in registries.items()
        }
        agent_node = make_team_node(agents, default_agent, turns)
        policies = tool_policies(budget=budget)
        tools_node = make_team_node(
            agents, default_agent, {n: make_tools_node(r, policies, own[n]) for n, r in registries.items()}
        )
        human_node = make_team_node(agents, default_agent, {n: make_human_node(r) for n, r in registries.items()})
        after_model_node = make_team_node(agents, default_agent, {n: make_after_model_node(own[n]) for n in registries})
        after_model = any(h.after_model for h in own.values())
        member = default_agent  # (a str here; the lambda below must not see the Optional)
        human_check = needs_human(lambda state: registries[active_agent(state, agents, member)])
        handoff_node = make_handoff_node(agents, default_agent, registries)
        preload = [everyone, *registries.values()]
    else:
        registry = resolve_registry(registry, tools)
        if sub_agents:
            registry = with_sub_agents(registry, build_agent_graph, model)
        budget = ContextBudget(lambda ctx, state: offered_tools(ctx, registry, state), token_counter, output_schema)
        # reasoning="two_phase" (nodes/reasoning.py) wraps the turn; "direct" is the plain node.
        agent_node = make_two_phase_node(
            make_agent_node(registry, model, budget, hooks, budget_offers=True), registry, model, budget, hooks
        )
        tools_node = make_tools_node(registry, tool_policies(budget=budget), hooks)
        human_node = make_human_node(registry)
        after_model_node, after_model = make_after_model_node(hooks), bool(hooks.after_model)
        human_check = needs_human(registry)
        handoff_node = no_handoff  # wired, never routed to: one agent has no active_agent
        preload = [registry]

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(
        schema, context_schema=AgentContext, input_schema=InputState, output_schema=output
    )
    # Each route below is a conditional edge: it decides on the state after its node's update
    # (and a state written with update_state, as Studio writes one). The budget routes measure
    # the next request where they decide (state + the run's context).
    before_agent = measured(route_before_agent, budget)
    routes = {
        # With memory off the run skips memory_recall and memory_write (fewer checkpointed steps).
        "resolver": measured(route_after_resolver, budget),
        "memory_recall": before_agent,
        # Calls that wait for a person (approval, ask_user) pass the human node on their way to tools.
        "agent": remembered(reviewed(route_after_agent, human_check)),
        "after_model": remembered(reviewed(route_after_agent, human_check)),
        "handoff": measured(route_after_handoff, budget),
        "toolLimitFinalize": before_agent,
        "structuredOutput": remembered(measured(route_after_structured_output, budget)),
    }
    # name -> (node, where it may go: None for a node with a plain edge below), in drawing order.
    nodes: dict[str, tuple[Callable[..., Any], tuple[str, ...] | None]] = {
        # prefetch_recall first: the recall query is embedded while the rest of the run starts.
        "resolver": (
            make_resolver(
                prefetch_recall, project_start(agents), budget.on_run_start, *start_hooks, preload=preload,
                middleware=hooks,
            ),
            # (a middleware's before_agent hook may jump to tools or to the end)
            ("memory_recall", "summarize", "agent", *(("tools", END) if hooks.before_agent else ())),
        ),
        "summarize": (make_summarize_node(budget, model), None),
        # After a tool turn the agent's step may send the run on instead (nodes/after_tools.py).
        "agent": (
            gate_after_tools(agent_node, budget),
            ("human", "tools", "structuredOutput", "agent", "memory_write", END, *FORWARDS),
        ),
        # The middleware's after_model hooks, when it has any: the reply is checkpointed before them.
        "after_model": (after_model_node, ("human", "tools", "structuredOutput", "agent", "memory_write", END)),
        "human": (human_node, None),
        "tools": (mark_tool_turn(tools_node), None),
        "structuredOutput": (make_structured_output_node(budget), ("summarize", "agent", "memory_write", END)),
        "toolLimitFinalize": (tool_limit_finalize, ("summarize", "agent")),
        "memory_recall": (memory_recall, ("summarize", "agent")),
        "memory_write": (memory_write, None),
        "handoff": (handoff_node, ("toolLimitFinalize", "summarize", "agent")),
    }
    if after_model:
        # The agent's turn goes through after_model, unless a before_model hook jumped past it.
        routes["agent"] = after_model_first(routes["agent"])
        nodes["agent"] = (nodes["agent"][0], ("after_model", *(nodes["agent"][1] or ())))
    else:
        del nodes["after_model"], routes["after_model"]
    routes["agent"] = forwarded_first(routes["agent"])
    # The agent's edge (decided after every model turn) reads only the keys it decides on.
    edge_reads = only_keys(schema, AGENT_EDGE_READS, "AgentEdgeState")
    for name in ("agent", "after_model"):
        if name in routes:
            routes[name] = reading(routes[name], edge_reads)
    for name, (node, destinations) in nodes.items():
        builder.add_node(name, node, input_schema=schema)  # (every node sees the middleware's keys too)
        if destinations is not None:
            builder.add_conditional_edges(name, routes[name], list(destinations))
    builder.add_edge(START, "resolver")
    builder.add_edge("summarize", "agent")
    builder.add_edge("tools", "agent")  # (a conditional edge here would copy the state every turn)
    builder.add_edge("human", "tools")
    builder.add_edge("memory_write", END)
    compiled = builder.compile(checkpointer=checkpointer, store=store, name=name)
    return with_mcp_servers(compiled, servers).with_config(recursion_limit=DEFAULT_RECURSION_LIMIT)


# What `langgraph dev` serves: no checkpointer of its own (the server provides one); the
# team of $SMART_AGENT_AGENTS when set (a bad file: the AgentsFileError line, naming it),
# with the MCP servers of $SMART_AGENT_MCP_CONFIG and of that file opened for each run.
# Built on first access (run_scope.served_graph), not at import.
def __getattr__(name: str) -> Any:
    return served_graph(
        __name__, name, lambda: build_agent_graph(
            agents_file=served_agents_file(), mcp_config=served_mcp_config(), middleware=served_middleware()
        ),
    )
