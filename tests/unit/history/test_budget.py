"""The agent loop's per-step work: request sizes measured from per-message sizes (equal to a
full serialization), one measurement per model turn, routes run on the event loop."""

from __future__ import annotations

import asyncio
import gc
import random
import weakref
from concurrent.futures import ThreadPoolExecutor

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.history.budget import ContextBudget
from smart_agent.history.groups import drop_orphan_results
from smart_agent.models.tokens import approx_counter, request_json, request_json_chars, tool_schemas
from smart_agent.testing.fake_models import ScriptedChatModel
from smart_agent.tools.registry import ToolMeta, ToolRegistry


async def _lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}"


def lookup_tool() -> StructuredTool:
    return StructuredTool.from_function(coroutine=_lookup, name="lookup", description="Look up item n.")


def conversation_pieces() -> list:
    call = {"name": "lookup", "args": {"n": 1, "note": "é ☃"}, "id": "c1"}
    return [
        SystemMessage("You are helpful. ünïcode"),
        HumanMessage("Find item 1 \u2603"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("item 1: " + "x" * 300, tool_call_id="c1", name="lookup"),
        AIMessage([{"type": "text", "text": "Done."}]),
        HumanMessage([{"type": "text", "text": "and this"}, {"type": "image_url", "image_url": {"url": "data:x"}}]),
        # Built without convert_to_openai_messages when plain (tokens._message_parts): names,
        # a refusal, several calls with non-ASCII arguments, a system message with another role.
        HumanMessage("from bob", name="bob"),
        AIMessage("Let me look. ☃", name="helper", tool_calls=[call, {**call, "id": "c3", "args": {"q": "ß\n\"x\""}}]),
        ToolMessage("", tool_call_id="c3", name="lookup"),
        AIMessage("", additional_kwargs={"refusal": "I can't help with that ☃"}),
        SystemMessage("developer rules", additional_kwargs={"__openai_role__": "developer"}),
        AIMessage("", invalid_tool_calls=[{"name": "lookup", "args": "{bad", "id": "c2", "error": "json"}]),
        ToolMessage("error", tool_call_id="c2", name="lookup", status="error"),
    ]


def test_request_size_from_cached_parts_equals_the_serialized_request():
    pieces, tool = conversation_pieces(), lookup_tool()
    rnd = random.Random(7)
    for i in range(400):  # growing prefixes (what a conversation does) and arbitrary subsets
        messages = pieces[: rnd.randint(0, len(pieces))] if i % 2 else rnd.sample(pieces, rnd.randint(0, len(pieces)))
        tools = rnd.choice([[tool], None, [], tool_schemas([tool])])
        assert request_json_chars(messages, tools) == len(request_json(messages, tools))


def test_a_message_replaced_by_a_changed_copy_is_measured_again():
    ai = AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": 1}, "id": "c1"}], id="m1")
    before = request_json_chars([HumanMessage("q"), ai])
    shrunk = ai.model_copy(update={"tool_calls": [{"name": "lookup", "args": {"n": 1234567}, "id": "c1"}]})
    assert request_json_chars([HumanMessage("q"), shrunk]) == len(request_json([HumanMessage("q"), shrunk])) > before


def test_the_size_cache_keeps_no_message_alive():
    import gc
    import weakref

    message = ToolMessage("x" * 1000, tool_call_id="c9", name="lookup")
    assert request_json_chars([message]) == len(request_json([message]))
    gone = weakref.ref(message)
    del message
    gc.collect()
    assert gone() is None  # a server's finished threads are not kept by the cache


def test_tool_schemas_are_converted_once_per_tool():
    tool = lookup_tool()
    first, again = tool_schemas([tool]), tool_schemas([tool])
    assert first[0] is again[0] and first[0]["function"]["name"] == "lookup"


def test_the_budget_measures_one_request_once():
    calls = []

    def counter(messages, tools=None):
        calls.append(len(messages))
        return approx_counter(messages, tools)

    budget = ContextBudget(lambda ctx, state: [lookup_tool()], counter)
    request = [SystemMessage("s"), *conversation_pieces()[1:4]]
    tools = [lookup_tool()]
    assert budget.count(request, tools) == budget.count([SystemMessage("s"), *request[1:]], tools)
    assert len(calls) == 1
    budget.count([SystemMessage("other prompt"), *request[1:]], tools)  # another system prompt: measured
    assert len(calls) == 2


def test_the_budget_assembles_one_turns_request_once():
    offers = []
    tool = lookup_tool()

    def offered(ctx, state):
        offers.append(state)
        return [tool]

    budget = ContextBudget(offered)
    ctx, state = Context(memory=False), {"messages": [HumanMessage("q")], "bookkeeping": {"notice": "Answer now."}}
    first = budget.assemble(ctx, state)
    again = budget.assemble(ctx, state)  # the same state and context: the route's, then the turn's
    assert again == first and "Answer now." in first[0] and first[1] == [tool] and len(offers) == 1
    again[1].append(lookup_tool())  # (a caller's list is its own)
    assert budget.assemble(ctx, state)[1] == [tool]
    other = {**state, "bookkeeping": {"notice": ""}}  # another state (equal or not) is assembled anew
    assert "Answer now." not in budget.assemble(ctx, other)[0] and len(offers) == 2
    assert budget.assemble(Context(memory=False), other) and len(offers) == 3  # another context too


def test_the_turn_takes_the_assembly_and_the_budget_keeps_no_state():
    assembled = []
    budget = ContextBudget(lambda ctx, state: assembled.append(weakref.ref(state)) or [lookup_tool()])
    class State(dict):  # (a dict that can be referenced weakly)
        pass

    ctx, state = Context(memory=False), State(messages=[HumanMessage("q")])
    route = budget.assemble(ctx, state)  # the route after a tool turn measures the request
    turn = budget.assemble(ctx, state, take=True)  # the turn sends it: assembled once
    assert turn[0] == route[0] and len(assembled) == 1
    del state
    gc.collect()
    assert assembled[0]() is None  # nothing keeps the run's state alive once its turn took the request
    fresh = State(messages=[HumanMessage("r")])
    budget.assemble(ctx, fresh, take=True)  # a turn with no route before it keeps nothing either:
    budget.assemble(ctx, fresh, take=True)
    assert len(assembled) == 3  # each such turn assembles its own


def test_drop_orphan_results_keeps_pairs_and_drops_strays():
    pieces = conversation_pieces()[1:]
    stray = ToolMessage("late", tool_call_id="c1", name="lookup")
    kept = drop_orphan_results([*pieces[:3], HumanMessage("x"), stray, *pieces[3:]])
    assert stray not in kept and kept[:3] == pieces[:3] and pieces[-1] in kept


def test_drop_orphan_results_checks_what_a_grown_conversation_added():
    pieces = conversation_pieces()[1:4]  # human, AI call, its result
    assert drop_orphan_results(pieces) == pieces
    stray = ToolMessage("late", tool_call_id="c1", name="lookup")
    grown = [*pieces, HumanMessage("more"), stray]  # starts with the run checked above
    assert drop_orphan_results(grown) == grown[:-1]
    second = ToolMessage("again", tool_call_id="c1", name="lookup")  # still right after its call: kept
    assert drop_orphan_results([*pieces, second]) == [*pieces, second]


def test_the_orphan_check_finds_the_conversation_the_request_size_folded(monkeypatch):
    """The route measures the next request and the agent node then checks the same messages for
    stray tool results: one pass over the messages answers both (tokens._message_runs)."""
    from smart_agent.models import tokens

    steps: list[object] = []
    step = tokens._message_runs.step

    def counting(total, message):
        steps.append(message)
        return step(total, message)

    monkeypatch.setattr(tokens._message_runs, "step", counting)
    pieces = [HumanMessage("fresh question"), *conversation_pieces()[2:]]  # objects no fold has seen
    request_json_chars([SystemMessage("You help."), *pieces])
    assert steps == pieces
    assert not tokens.has_orphan_results(list(pieces)) and steps == pieces  # (another list, the same messages)
    stray = ToolMessage("late", tool_call_id="c1", name="lookup")
    assert tokens.has_orphan_results([*pieces, HumanMessage("more"), stray]) and len(steps) == len(pieces) + 2


def looping_graph(turns: int, counter=None):
    script = [AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": i}, "id": f"c{i}"}]) for i in range(turns)]
    model = ScriptedChatModel(responses=[*script, "done"])
    registry = ToolRegistry()
    registry.register(lookup_tool(), ToolMeta(source="user"))
    return build_agent_graph(model=model, registry=registry, token_counter=counter), model


async def test_each_model_turn_measures_its_request_once():
    sizes = []

    def counter(messages, tools=None):
        sizes.append(len(messages))
        return approx_counter(messages, tools)

    graph, model = looping_graph(6, counter)
    result = await graph.ainvoke({"task": "go"}, context=Context(memory=False, max_tool_calls=10))
    assert result["answer"] == "done" and len(model.calls) == 7
    # The route before each turn measures the request; the agent's guard finds that size.
    assert len(sizes) == len(model.calls)


class _AsyncScripted(ScriptedChatModel):
    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        return self._generate(messages, stop, None, **kwargs)


class _CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


async def test_the_loop_routes_on_the_event_loop():
    """With an async model and an async tool nothing needs a thread: the routes between the
    nodes (plain functions) must not be sent to the default executor either."""
    executor = _CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    script = [AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": i}, "id": f"c{i}"}]) for i in range(3)]
    registry = ToolRegistry()
    registry.register(lookup_tool(), ToolMeta(source="user"))
    model = _AsyncScripted(responses=[*script, "done"])
    graph = build_agent_graph(model=model, registry=registry)
    result = await graph.ainvoke({"task": "go"}, context=Context(memory=False))
    assert result["answer"] == "done" and len(model.calls) == 4
    assert executor.submitted == 0



def test_a_responses_api_reply_is_measured_with_its_calls_once():
    """A reply of the Responses API holds each tool call twice: as a ``function_call`` block of its
    content and in ``tool_calls``; the request sends it once (docs/cost.md)."""
    call = {"name": "read_file", "args": {"path": "part03.txt"}, "id": "call_4_0"}
    block = {"type": "function_call", "name": "read_file", "arguments": '{"path": "part03.txt"}',
             "call_id": "call_4_0", "id": "fc_1", "status": "completed"}
    text = {"type": "text", "text": "Reading part 3.", "annotations": [], "id": "msg_1"}
    responses = AIMessage([text, block], tool_calls=[call], response_metadata={"id": "resp_1"})
    chat = AIMessage([text], tool_calls=[call])
    assert approx_counter([responses]) == approx_counter([chat])
    assert request_json_chars([HumanMessage("hi"), responses]) == len(request_json([HumanMessage("hi"), responses]))
    assert "function_call" not in request_json([responses]) and responses.content[1] == block  # (left as it is)
