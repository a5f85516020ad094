"""Memory without a model server: the nodes called directly, observations, explicit requests,
the memory block, the memory tools, the context fields and the CLI flags."""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from memory_fakes import TableEmbeddings
from tool_support import make_runtime

from smart_agent.config.context import Context, validate_context
from smart_agent.memory.open_stores import open_store
from smart_agent.memory.service import (
    build_observation,
    explicit_memory_request,
    format_memory_context,
    run_task_and_facts,
)
from smart_agent.memory.store import user_namespace
from smart_agent.nodes.memory import memory_recall, memory_write
from smart_agent.tools.invoke import run_tool
from smart_agent.tools.memory_tools import MEMORY_TOOLS, remember, search_memory

DAY = 86_400.0


async def test_nodes_directly_with_a_runtime_object(fake_memory):
    runtime = SimpleNamespace(context=Context(user_id="u"), store=fake_memory)
    state = {"messages": [HumanMessage("What is 2+2?"), AIMessage("4")], "answer": "4"}
    assert await memory_write(state, runtime) == {}
    (item,) = fake_memory.items(user_namespace("u"))
    assert item.value["text"] == "Task: What is 2+2?\nAnswer: 4" and item.value["kind"] == "observation"
    fake_memory.embeddings.table["What is 2+2?"] = fake_memory.embeddings.embed_query(item.value["text"])
    out = await memory_recall({"messages": [HumanMessage("What is 2+2?")]}, runtime)
    assert out["recalled_memories"][0]["key"] == item.key
    assert out["memory_context"].splitlines()[1] == "- (just now) Task: What is 2+2? | Answer: 4"
    # No answer: nothing is written. Dict contexts (SDK / Studio) work too.
    runtime2 = SimpleNamespace(context={"user_id": "u", "memory": True}, store=fake_memory)
    assert await memory_write({"messages": [HumanMessage("x")]}, runtime2) == {}
    assert fake_memory.count() == 1


def test_observation_is_deterministic_and_includes_tool_facts():
    messages = [
        HumanMessage("old task"),
        AIMessage("old answer"),
        HumanMessage("What is 37*43? Please note that I like short answers."),
        AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "37*43"}, "id": "c1"}]),
        ToolMessage("1591", tool_call_id="c1", name="calculator"),
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "x"}, "id": "c2"}]),
        ToolMessage("Not found", tool_call_id="c2", name="read_file", status="error"),
        AIMessage("1591"),
    ]
    task, answer, facts = run_task_and_facts({"messages": messages, "answer": "1591"})
    assert task == "What is 37*43? Please note that I like short answers." and answer == "1591"
    assert facts == ["calculator(expression='37*43') -> 1591", "read_file(path='x') failed Not found"]
    text_, importance = build_observation(task, answer, tool_facts=facts)
    assert text_ == (
        "Task: What is 37*43? Please note that I like short answers.\n"
        "User asked to remember: I like short answers\n"
        "Answer: 1591\n"
        "Tools: calculator(expression='37*43') -> 1591; read_file(path='x') failed Not found"
    )
    assert importance == 0.8
    assert build_observation(task, answer, tool_facts=facts) == (text_, importance)
    assert build_observation("plain question", "plain answer")[1] == 0.5
    assert build_observation("plain question", "")[1] == 0.3


@pytest.mark.parametrize(
    "task, fact",
    [
        ("Remember that my favourite colour is teal", "my favourite colour is teal"),
        ("please remember: I am vegan.", "I am vegan"),
        ("Hi. Could you note that the deploy is on Friday!", "the deploy is on Friday"),
        ("Can you remember when we met?", None),
        ("What do you remember about me?", None),
    ],
)
def test_explicit_memory_requests(task, fact):
    assert explicit_memory_request(task) == fact


def test_memory_context_lists_ages(fake_memory):
    clock_t = [1_700_000_000.0]
    fake_memory.clock = lambda: clock_t[0]
    fake_memory.remember(("m",), "an old fact")
    clock_t[0] += 3 * DAY
    recalled = fake_memory.recall(("m",), "an old fact")
    block = format_memory_context(recalled, now=clock_t[0])
    assert block.splitlines()[1] == "- (3 days ago) an old fact"
    assert format_memory_context([]) == ""


def tool_runtime(store, **context):
    return make_runtime(store=store, **context)


def test_memory_tool_schemas_hide_the_runtime():
    for tool_, meta in MEMORY_TOOLS:
        schema = tool_.tool_call_schema.model_json_schema()
        assert "runtime" not in schema["properties"]
        assert all(p.get("description") for p in schema["properties"].values())
        assert "memory" in meta.tags
    assert [t.name for t, _ in MEMORY_TOOLS] == ["remember", "search_memory"]
    assert MEMORY_TOOLS[0][1].side_effects and not MEMORY_TOOLS[1][1].side_effects


async def test_memory_tools_through_run_tool(fake_memory):
    ctx_ = Context(user_id="alice")
    out = await run_tool(
        remember, {"text": "Alice likes green tea.", "importance": 0.9}, call_id="c1", context=ctx_, store=fake_memory
    )
    assert out.ok and out.content.startswith("Remembered (id ")
    (item,) = fake_memory.items(user_namespace("alice"))
    assert item.value["importance"] == 0.9 and item.value["source"] == "remember_tool"
    again = await run_tool(remember, {"text": "Alice likes green tea."}, call_id="c2", context=ctx_, store=fake_memory)
    assert again.content.startswith("Updated an existing memory")
    found = await run_tool(
        search_memory, {"query": "Alice likes green tea.", "k": 3}, call_id="c3", context=ctx_, store=fake_memory
    )
    rows = json.loads(found.content)
    assert rows[0]["text"] == "Alice likes green tea." and rows[0]["id"] == item.key
    other = await run_tool(
        search_memory,
        {"query": "Alice likes green tea."},
        call_id="c4",
        context=Context(user_id="bob"),
        store=fake_memory,
    )
    assert other.content == "No memories found."
    bad = await run_tool(remember, {"text": "x", "importance": 3}, call_id="c5", context=ctx_, store=fake_memory)
    assert not bad.ok and "importance" in bad.content


def test_memory_tools_without_a_runtime_store_use_the_default_store(isolated_home):
    emb = TableEmbeddings()
    store = open_store(embeddings=emb)  # what store_for() opens for this folder and model
    rt = tool_runtime(None, user_id="u", embedding_model="local")
    # Point the default "local" entry of this folder at the same fake store.
    from smart_agent.memory import open_stores as store_mod

    key = (str((isolated_home / "memory").resolve()), "local")
    store_mod._stores[key] = store
    msg = remember.invoke(
        {"type": "tool_call", "id": "c1", "name": "remember", "args": {"text": "hello there", "runtime": rt}}
    )
    assert isinstance(msg, ToolMessage) and "Remembered" in msg.content
    assert store.count(user_namespace("u")) == 1
    del store_mod._stores[key]


def test_context_fields_defaults_env_and_validation(monkeypatch):
    c = Context()
    assert (c.memory, c.memory_k, c.user_id, c.embedding_model) == (True, 5, "default", "local")
    monkeypatch.setenv("SMART_AGENT_MEMORY", "0")
    monkeypatch.setenv("SMART_AGENT_MEMORY_K", "3")
    monkeypatch.setenv("SMART_AGENT_USER_ID", "ada")
    assert (Context().memory, Context().memory_k, Context().user_id) == (False, 3, "ada")
    for bad in (
        {"memory_k": -1},
        {"memory_k": 1000},
        {"user_id": " "},
        {"embedding_model": "nonsense"},
        {"memory": "yes"},
    ):
        with pytest.raises(ValueError):
            Context(**bad)
    assert validate_context(Context(embedding_model="openai:text-embedding-3-small")) == []
    from dataclasses import fields

    for f in fields(Context):
        if f.name in {"memory", "memory_k", "user_id", "embedding_model"}:
            assert f.metadata["description"]


def test_run_flags_map_onto_the_context():
    from smart_agent.cli import build_parser, context_from_args

    args = build_parser().parse_args(
        ["run", "x", "--user", "ada", "--no-memory", "--memory-k", "7", "--embedding-model", "openai:e"]
    )
    c = context_from_args(args)
    assert (c.user_id, c.memory, c.memory_k, c.embedding_model) == ("ada", False, 7, "openai:e")
    c2 = context_from_args(build_parser().parse_args(["run", "x"]))
    assert (c2.memory, c2.user_id) == (True, "default")


def test_register_cli_adds_the_memory_command():
    from smart_agent.cli.memory import register_cli

    parser = argparse.ArgumentParser()
    register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["memory", "search", "q", "--user", "u", "--k", "3", "--json"])
    assert (args.memory_command, args.query, args.user, args.k, args.json) == ("search", "q", "u", 3, True)


def test_langgraph_json_store_index_is_the_local_model(local_model):
    """langgraph.json's store.index.embed names a file and a function: loaded on its own by path
    (as the server loads it; the server itself: tests/e2e/test_langgraph_dev.py) and wrapped by
    LangGraph's ensure_embeddings, it gives the local model's vectors, 384 of them."""
    import importlib.util

    from conftest import REPO
    from langgraph.store.base import ensure_embeddings

    from smart_agent.memory.embeddings import LOCAL_DIM, embed_local, local_embeddings

    index = json.loads((REPO / "langgraph.json").read_text())["store"]["index"]
    assert (index["dims"], index["fields"]) == (LOCAL_DIM, ["text"])
    path, function = index["embed"].rsplit(":", 1)
    spec = importlib.util.spec_from_file_location("langgraph_embed_by_path", REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (vec,) = ensure_embeddings(getattr(module, function)).embed_documents(["The user likes teal."])
    assert len(vec) == LOCAL_DIM and vec == pytest.approx(local_model.embed_query("The user likes teal."), abs=1e-6)
    assert embed_local(["The user likes teal."]) == [pytest.approx(vec, abs=1e-6)]
    assert local_embeddings() is local_model  # one model per process


async def test_memory_tools_invoked_synchronously_inside_a_running_loop(fake_memory):
    """``tool.invoke`` from a thread that runs an event loop (a notebook cell) still works."""
    rt = tool_runtime(fake_memory, user_id="u")
    msg = remember.invoke({"type": "tool_call", "id": "c1", "name": "remember", "args": {"text": "hi", "runtime": rt}})
    assert isinstance(msg, ToolMessage) and msg.content.startswith("Remembered"), msg.content
    assert fake_memory.count(user_namespace("u")) == 1
