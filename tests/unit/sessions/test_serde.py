"""What a conversation leaves in the checkpointer: the supersteps each turn checkpoints, the
SQLite sessions database's compressed rows, and the CLI's durability setting."""

from __future__ import annotations

import sqlite3

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from smart_agent.config import settings
from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.sessions.serde import SUFFIX, CompressedSerializer
from smart_agent.sessions.store import open_backends
from smart_agent.testing.fake_models import ScriptedChatModel
from smart_agent.tools.registry import ToolMeta, ToolRegistry


async def _fetch(n: int) -> str:
    """Fetch document n."""
    return f"document {n}: " + "lorem ipsum dolor sit amet " * 200


def conversation_graph(turns: int, checkpointer):
    script = []
    for i in range(turns):
        script += [AIMessage("", tool_calls=[{"name": "fetch", "args": {"n": i}, "id": f"c{i}"}]), f"answer {i}"]
    registry = ToolRegistry()
    registry.register(StructuredTool.from_function(coroutine=_fetch, name="fetch"), ToolMeta(source="user"))
    return build_agent_graph(model=ScriptedChatModel(responses=script), registry=registry, checkpointer=checkpointer)


async def test_a_turn_with_memory_off_checkpoints_no_memory_step():
    saver = InMemorySaver()
    graph = conversation_graph(2, saver)
    config = {"configurable": {"thread_id": "t"}}
    for i in range(2):
        result = await graph.ainvoke({"task": f"doc {i}?"}, config, context=Context(memory=False), durability="sync")
        assert result["answer"] == f"answer {i}"
    history = [s async for s in graph.aget_state_history(config)]
    writers = [node for s in history for node in (s.metadata.get("writes") or {})]
    assert "memory_recall" not in writers and "memory_write" not in writers
    # per turn: the input, the start, resolver, agent, tools, agent (8 with the two memory steps)
    assert len(history) == 2 * 6


def test_compressed_serializer_round_trip_and_small_values():
    serde = CompressedSerializer()
    big = {"messages": [HumanMessage("lorem ipsum " * 500)], "n": 1}
    kind, data = serde.dumps_typed(big)
    plain_kind, plain = JsonPlusSerializer().dumps_typed(big)
    assert kind == plain_kind + SUFFIX and len(data) < len(plain) / 3
    assert serde.loads_typed((kind, data))["messages"][0].content == big["messages"][0].content
    assert serde.dumps_typed({"n": 1}) == JsonPlusSerializer().dumps_typed({"n": 1})  # too small to gain
    assert serde.loads_typed((plain_kind, plain))["n"] == 1  # rows written before: read as they are


async def test_the_sessions_database_stores_compressed_checkpoints_and_reads_older_ones(tmp_path):
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = tmp_path / "sessions.sqlite"
    config = {"configurable": {"thread_id": "t"}}
    async with AsyncSqliteSaver.from_conn_string(str(path)) as plain:  # a database from before
        await conversation_graph(1, plain).ainvoke({"task": "doc 0?"}, config, context=Context(memory=False))
    with sqlite3.connect(path) as conn:
        before = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    async with open_backends(str(path)) as backends:
        graph_model = ScriptedChatModel(responses=["answer 1"])
        graph = build_agent_graph(model=graph_model, registry=ToolRegistry(), checkpointer=backends.checkpointer)
        result = await graph.ainvoke({"task": "and now?"}, config, context=Context(memory=False))
        assert result["answer"] == "answer 1"
        # the new turn's request carried the turn written uncompressed
        sent = [m.content for m in graph_model.calls[0]["messages"][1:]]
        assert sent[0] == "doc 0?" and sent[-1] == "and now?" and len(sent) == 5
    with sqlite3.connect(path) as conn:
        kinds = [k for (k,) in conn.execute("SELECT type FROM checkpoints ORDER BY rowid")]
    assert not any(k.endswith(SUFFIX) for k in kinds[:before])
    assert any(k.endswith(SUFFIX) for k in kinds[before:])


def test_durability_setting(monkeypatch):
    monkeypatch.delenv(settings.DURABILITY_ENV, raising=False)
    assert settings.durability() == "sync"  # the kill-and-resume tests (tests/security) run with it
    monkeypatch.setenv(settings.DURABILITY_ENV, "Exit")
    assert settings.durability() == "exit"
    monkeypatch.setenv(settings.DURABILITY_ENV, "never")
    with pytest.raises(ValueError, match="SMART_AGENT_DURABILITY must be one of sync, async, exit"):
        settings.durability()


def test_durability_flag(monkeypatch, capsys):
    from smart_agent.cli import build_parser
    from smart_agent.cli.backends import use_db_arg

    monkeypatch.delenv(settings.DURABILITY_ENV, raising=False)
    args = build_parser().parse_args(["run", "--durability", "exit", "hi"])
    use_db_arg(args)
    assert settings.durability() == "exit"
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["run", "--durability", "later", "hi"])
    assert exit_.value.code == 2 and "--durability" in capsys.readouterr().err


@pytest.mark.parametrize(("mode", "per_turn"), [("sync", 6), ("exit", 1)])
async def test_cli_runs_checkpoint_as_the_durability_setting_says(monkeypatch, mode, per_turn):
    from smart_agent.cli.review import run_until_paused

    monkeypatch.setenv(settings.DURABILITY_ENV, mode)
    saver = InMemorySaver()
    graph = conversation_graph(2, saver)
    config = {"configurable": {"thread_id": "t"}}
    for i in range(2):
        final = await run_until_paused(
            graph, {"task": f"doc {i}?"}, config=config, context=Context(memory=False), on_event=lambda e: None
        )
        assert final["answer"] == f"answer {i}"
    assert len([s async for s in graph.aget_state_history(config)]) == 2 * per_turn
