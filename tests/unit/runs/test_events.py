"""``events.emit``: events reach a run that streams ``custom``; a run that does not (``ainvoke``,
other stream modes) gets LangGraph's writer that does nothing, and emit builds no event for it."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from smart_agent.runs import events


class State(TypedDict, total=False):
    n: int


def graph(seen: list[bool] | None = None) -> Any:
    def node(state: State) -> State:
        events.emit("usage", turn=1)
        if seen is not None:
            seen.append(events.streaming())
        return {"n": 1}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return builder.compile()


async def test_custom_streams_get_the_event_and_other_runs_build_none(monkeypatch):
    built: list[str] = []
    make = events.make_event

    def counting(event: str, **payload: Any) -> dict[str, Any]:
        built.append(event)
        return make(event, **payload)

    monkeypatch.setattr(events, "make_event", counting)
    g = graph()
    chunks = [c async for c in g.astream({}, stream_mode=["custom", "values"])]
    custom = [c for mode, c in chunks if mode == "custom"]
    assert [e["event"] for e in custom] == ["usage"] and custom[0]["turn"] == 1 and built == ["usage"]
    assert await g.ainvoke({}) == {"n": 1}
    assert [c async for c in g.astream({}, stream_mode="updates")] == [{"node": {"n": 1}}]
    assert built == ["usage"]  # neither run built an event: nobody would have received it
    events.emit("usage", turn=2)  # outside a run: nothing, no error
    assert built == ["usage"]


async def test_streaming_says_whether_an_event_would_go_anywhere():
    seen: list[bool] = []
    g = graph(seen)
    [c async for c in g.astream({}, stream_mode=["custom", "values"])]
    await g.ainvoke({})
    [c async for c in g.astream({}, stream_mode="updates")]
    assert seen == [True, False, False] and not events.streaming()  # (the last: outside a run)


def test_only_writers_that_do_nothing_count_as_quiet():
    from langgraph.config import _no_op_stream_writer

    sent: list[Any] = []
    assert events._quiet(_no_op_stream_writer) and events._quiet(lambda event: None)
    assert not events._quiet(sent.append) and not events._quiet(lambda event: sent.append(event))
    assert not events._quiet(print) and not events._quiet(object())

    def returns_its_argument(event: Any) -> Any:
        return event

    assert not events._quiet(returns_its_argument)
