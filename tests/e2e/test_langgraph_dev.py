"""`langgraph dev` serves the graphs; langgraph_sdk creates a thread, runs it and reads its state."""

import json

import pytest

from smart_agent.testing.scripted_server import text, tool_call


async def test_sdk_runs_the_agent_graph_and_reads_state(dev_server):
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset(
        [tool_call("calculator", {"expression": "37*43"}), lambda req: text(f"It is {req['messages'][-1]['content']}.")]
    )
    client = get_client(url=url)
    assistants = await client.assistants.search(graph_id="agent")
    assert assistants, "the agent graph is registered"
    schemas = await client.assistants.get_schemas(assistants[0]["assistant_id"])
    assert "max_tool_calls" in schemas["context_schema"]["properties"]
    assert schemas["context_schema"]["properties"]["model"]["description"]

    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "agent", input={"task": "What is 37*43?"}, context={"model": "openai:scripted-model"}
    )
    assert result["answer"] == "It is 1591."
    state = await client.threads.get_state(thread["thread_id"])
    kinds = [m["type"] for m in state["values"]["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"]
    assert state["values"]["tool_calls_made"] == 1


async def test_each_graph_shows_only_its_own_context_fields(dev_server):
    """Studio renders a graph's context schema from /assistants/<id>/schemas: each graph
    has its own context class, so the agent shows no planner fields and vice versa."""
    from langgraph_sdk import get_client

    url, _ = dev_server
    client = get_client(url=url)
    props = {}
    for graph_id in ("agent", "planner", "dual", "fleet"):
        assistants = await client.assistants.search(graph_id=graph_id)
        assert assistants, f"the {graph_id} graph is registered"
        schemas = await client.assistants.get_schemas(assistants[0]["assistant_id"])
        props[graph_id] = set(schemas["context_schema"]["properties"])
        assert {"model", "max_tool_calls", "workspace", "context_token_limit"} <= props[graph_id], graph_id
    assert "approve_plan" in props["planner"] and "approve_plan" not in props["agent"]
    assert "output_schema" in props["agent"] and "output_schema" not in props["planner"]
    assert {"max_workers", "max_subtasks"} <= props["fleet"] and "max_workers" not in props["agent"] | props["planner"]
    assert "max_iterations" in props["dual"] and "approve_plan" in props["dual"], "the dual graph runs the planner"
    assert "max_iterations" not in props["agent"] | props["planner"] | props["fleet"]


async def test_server_run_with_many_tool_calls_ends_with_answer(dev_server):
    """More supersteps than LangGraph's default recursion limit of 25: still an answer."""
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset([])
    srv.responder = lambda req: (
        tool_call("calculator", {"expression": "1+1"}) if req.get("tools") else text("done after the limit")
    )
    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"],
        "agent",
        input={"task": "loop"},
        # loop_limit 0: loop detection would stop these identical calls after 4
        context={"model": "openai:scripted-model", "max_tool_calls": 15, "loop_limit": 0},
    )
    assert result.get("answer") == "done after the limit", result
    assert result["tool_calls_made"] == 15


@pytest.mark.parametrize("dev_server", ["memory"], indirect=True)
async def test_server_recalls_memory_across_threads_through_its_own_store(dev_server, tmp_path):
    """langgraph.json's store.index (the local embedding function, 384 dims) makes the server's
    own store searchable: memory is written and recalled there, in a thread of the server's event
    loop (which forbids blocking calls), and no FAISS folder is made under SMART_AGENT_HOME."""
    import uuid

    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset(
        [
            text("Noted."),
            lambda req: text("teal" if "favourite colour is teal" in req["messages"][0]["content"] else "unknown"),
        ]
    )
    client = get_client(url=url)
    user = f"u{uuid.uuid4().hex[:8]}"  # the server keeps its store in .langgraph_api/ across runs
    for task in ("Remember that my favourite colour is teal", "What is my favourite colour?"):
        thread = await client.threads.create()
        result = await client.runs.wait(thread["thread_id"], "agent", input={"task": task}, context={"user_id": user})
    assert result["answer"] == "teal"
    assert "User asked to remember: my favourite colour is teal" in srv.requests[-1]["messages"][0]["content"]
    assert result["recalled_memories"], "the second thread recalled the first one's memory"
    found = await client.store.search_items(["memories", user], query="favourite colour")
    texts = {i["key"]: i["value"]["text"] for i in found["items"]}  # one observation per run
    assert len(texts) == 2 and texts[result["recalled_memories"][0]["key"]].startswith("Task: Remember that")
    assert all(i["score"] > 0.3 for i in found["items"]), "searched by meaning, with the project's embedding model"
    assert not (tmp_path / "home" / "memory").exists(), "no FAISS store next to the server's"


async def test_server_runs_archive_large_tool_outputs(dev_server, tmp_path):
    """A large output is archived in the server's own store (every replica can read it back), not
    in a file under SMART_AGENT_HOME, without blocking the server's loop."""
    from langgraph_sdk import get_client

    url, srv = dev_server
    (tmp_path / "big.txt").write_text("line of text\n" * 2000)
    srv.reset([
        tool_call("read_file", {"path": "big.txt"}),
        lambda req: text("archived" if "get_tool_response" in json.dumps(req.get("tools")) else "not archived"),
    ])
    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "agent", input={"task": "read big.txt"}, context={"model": "openai:scripted-model"}
    )
    assert result.get("answer") == "archived", result
    (eid,) = result["archived"]
    item = await client.store.get_item(["smart_agent", "archive"], eid)
    assert item["value"]["text"] == (tmp_path / "big.txt").read_text()
    assert not (tmp_path / "home" / "archive").exists()
