"""memory_recall / memory_write in the agent graph over the real client (the nodes and tools
alone: tests/unit/memory/test_service.py; the ``smart-agent memory`` CLI: tests/e2e/test_memory_cli.py)."""

from __future__ import annotations

from conftest import openai_model, run_graph
from langgraph.checkpoint.memory import InMemorySaver
from memory_fakes import TableEmbeddings, unit

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.memory import background
from smart_agent.memory.store import FaissMemoryStore, user_namespace
from smart_agent.testing.scripted_server import text, tool_call
from smart_agent.tools.memory_tools import MEMORY_TOOLS
from smart_agent.tools.registry import ToolRegistry


def ctx(workspace, **kw):
    return Context(workspace=str(workspace), model="openai:scripted-model", **kw)


async def run(graph, task, context, thread="t1", events=None):
    return await run_graph(graph, task, context, thread=thread, events=events)


def system_prompt(srv, i=-1) -> str:
    msg = srv.requests[i]["messages"][0]
    assert msg["role"] == "system"
    return msg["content"]


# -- graph: recall at start, write at the end ----------------------------------------------
async def test_two_threads_share_long_term_memory_with_the_real_model(
    scripted_server, workspace, local_model, isolated_home
):
    srv = scripted_server([text("Noted: teal."), text("Your favourite colour is teal.")])
    graph = build_agent_graph(
        model=openai_model(srv), checkpointer=InMemorySaver()
    )  # default store under SMART_AGENT_HOME
    background.drain()  # results of earlier tests' writes
    events: list[dict] = []
    first = await run(graph, "Remember that my favourite colour is teal", ctx(workspace), thread="a", events=events)
    assert first["answer"] == "Noted: teal." and first["memory_context"] == ""
    (queued,) = [e for e in events if e["event"] == "memory_write"]
    assert queued["deferred"] is True and queued["importance"] == 0.8  # written after the answer
    (written,) = background.drain()
    assert written["action"] == "created" and written["importance"] == 0.8
    assert "Long-term memory" not in system_prompt(srv, 0)

    events.clear()
    second = await run(graph, "What is my favourite colour?", ctx(workspace), thread="b", events=events)
    prompt = system_prompt(srv, 1)
    assert "Long-term memory" in prompt and "(just now) Task: Remember that my favourite colour is teal" in prompt
    assert "my favourite colour is teal" in prompt
    recall = [e for e in events if e["event"] == "memory_recall"][0]
    assert recall["count"] >= 1 and recall["memories"][0]["similarity"] > 0.4
    assert second["recalled_memories"][0]["text"].startswith("Task: Remember that my favourite colour is teal")
    assert (isolated_home / "memory" / "memory.sqlite3").exists()
    kinds = [e["event"] for e in events]
    assert kinds[0] == "memory_recall" and kinds[-1] == "memory_write"


async def test_runtime_store_is_used_and_users_are_separate(scripted_server, workspace, fake_memory, isolated_home):
    srv = scripted_server(responder=lambda req: text("ok"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=fake_memory)
    await run(graph, "alpha fact", ctx(workspace, user_id="alice"), thread="1")
    assert fake_memory.count(user_namespace("alice")) == 1
    assert not (isolated_home / "memory").exists()  # the runtime store was used
    # Same text from another user: alice's memory must not be recalled for bob. (A run's memory is
    # indexed on its task.)
    fake_memory.embeddings.table["bob asks"] = fake_memory.embeddings.embed_query("alpha fact")
    await run(graph, "bob asks", ctx(workspace, user_id="bob"), thread="2")
    assert "Long-term memory" not in system_prompt(srv)
    await run(graph, "bob asks", ctx(workspace, user_id="alice"), thread="3")
    assert "Task: alpha fact | Answer: ok" in system_prompt(srv)


async def test_memory_off_is_a_no_op(scripted_server, workspace, fake_memory):
    srv = scripted_server(responder=lambda req: text("ok"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=fake_memory)
    events: list[dict] = []
    final = await run(graph, "hello", ctx(workspace, memory=False), events=events)
    assert final["answer"] == "ok"
    assert not [e for e in events if e["event"].startswith("memory_")]
    assert fake_memory.count() == 0 and final["memory_context"] == "" and final["recalled_memories"] == []


async def test_stale_memory_block_is_cleared_when_memory_is_turned_off(scripted_server, workspace, fake_memory):
    srv = scripted_server(responder=lambda req: text("ok"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=fake_memory)
    fake_memory.remember(user_namespace("default"), "Task: same")
    fake_memory.embeddings.table["same"] = fake_memory.embeddings.embed_query("Task: same")
    first = await run(graph, "same", ctx(workspace), thread="x")
    assert "Task: same" in first["memory_context"]
    second = await run(graph, "same", ctx(workspace, memory=False), thread="x")
    assert second["memory_context"] == "" and second["recalled_memories"] == []
    assert "Long-term memory" not in system_prompt(srv)


async def test_memory_k_limits_the_block(scripted_server, workspace, fake_memory):
    srv = scripted_server(responder=lambda req: text("ok"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=fake_memory)
    table = fake_memory.embeddings.table
    table["q"] = unit(1, 0)
    for i in range(4):
        table[f"m{i}"] = unit(1, *([0] * i), 0.5 + 0.1 * i)  # cos to q falls with i; to each other < 0.8
        fake_memory.remember(user_namespace("default"), f"m{i}")
    final = await run(graph, "q", ctx(workspace, memory_k=2))
    assert [m["text"] for m in final["recalled_memories"]] == ["m0", "m1"]
    assert final["memory_context"].count("\n- (") == 2


class BrokenStore(FaissMemoryStore):
    def recall(self, *a, **kw):
        raise RuntimeError("disk on fire")

    def remember(self, *a, **kw):
        raise RuntimeError("disk on fire")


async def test_memory_failures_never_break_a_run(scripted_server, workspace, tmp_path):
    srv = scripted_server(responder=lambda req: text("fine"))
    store = BrokenStore(tmp_path / "b", embeddings=TableEmbeddings())
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), store=store)
    background.drain()  # results of earlier tests' writes
    events: list[dict] = []
    final = await run(graph, "hello", ctx(workspace), events=events)
    assert final["answer"] == "fine"
    errs = {e["event"]: e["error"] for e in events if e.get("error")}
    assert "disk on fire" in errs["memory_recall"]
    (written,) = background.drain()  # the write failed after the run, on the memory thread
    assert written["event"] == "memory_write" and "disk on fire" in written["error"]
    store.close()


# -- observation text ------------------------------------------------------------------------------


# -- tools --------------------------------------------------------------------------------------------


async def test_the_model_can_call_remember_in_the_graph(scripted_server, workspace, fake_memory):
    srv = scripted_server(
        [tool_call("remember", {"text": "The user's cat is called Miso."}), text("I'll remember that.")]
    )
    graph = build_agent_graph(
        model=openai_model(srv), registry=ToolRegistry(), tools=[t for t, _ in MEMORY_TOOLS], store=fake_memory
    )
    final = await run(graph, "My cat is called Miso.", ctx(workspace, user_id="u"))
    assert final["answer"] == "I'll remember that."
    texts = sorted(i.value["text"] for i in fake_memory.items(user_namespace("u")))
    assert texts[0].startswith("Task: My cat is called Miso.")  # the run's observation (no tool fact for memory tools)
    assert "remember(" not in texts[0]
    assert texts[1] == "The user's cat is called Miso."
    assert "remember" in srv.offered_tools(0) and "search_memory" in srv.offered_tools(0)


# -- context -------------------------------------------------------------------------------------------


# -- CLI ------------------------------------------------------------------------------------------------
