"""Context management over the real langchain-openai client: budget, summarize node,
reversible archive (issue 4). Todo planning and structured output: test_todo_and_output_schema.py."""

from __future__ import annotations

import json
import random
import re
import string

import pytest
from conftest import cli_env, loop_context, openai_model, run_cli, run_graph
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from scripted_support import big_echo_registry

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.history.markers import is_summary
from smart_agent.history.transcript import SUMMARY_SYSTEM_PROMPT
from smart_agent.testing.scripted_server import error, text, tool_call, tool_calls
from smart_agent.tools.registry import ToolRegistry

PAGE_NOTE = re.compile(r"\n\n\[Page: characters \d+-(\d+) of \d+ of ex_[0-9a-f]{16}\. Next page: .*\]$", re.S)


ctx = loop_context
run = run_graph


def is_summary_request(req) -> bool:
    first = (req.get("messages") or [{}])[0]
    return first.get("role") == "system" and str(first.get("content", "")).startswith(SUMMARY_SYSTEM_PROMPT[:40])


def request_pairing_problems(req) -> list[str]:
    """Tool results without their AI tool call right before them, or calls without results."""
    problems, expected = [], set()
    for m in req["messages"]:
        if m["role"] == "tool":
            if m["tool_call_id"] not in expected:
                problems.append(f"orphan tool result {m['tool_call_id']}")
            expected.discard(m["tool_call_id"])
            continue
        if expected:
            problems.append(f"tool calls without results: {sorted(expected)}")
        expected = {tc["id"] for tc in m.get("tool_calls") or []} if m["role"] == "assistant" else set()
    if expected:
        problems.append(f"tool calls without results at the end: {sorted(expected)}")
    return problems


def assert_every_request_bounded(srv, limit):
    assert srv.requests, "no request was sent"
    for i in range(len(srv.requests)):
        assert srv.request_chars(i) / 4 <= limit, f"request {i}: {srv.request_chars(i) / 4:.0f} tokens > {limit}"
        assert request_pairing_problems(srv.requests[i]) == [], f"request {i}"


# --------------------------------------------------------------------------- six 100 KB files
def make_files(workspace, n=6, size=100_000, seed=7):
    rnd = random.Random(seed)
    files = {}
    for i in range(n):
        lines, total = [], 0
        while total < size:
            line = (
                " ".join("".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(2, 9))) for _ in range(12))
                + f' "file {i}"'
            )
            lines.append(line)
            total += len(line) + 1
        body = "\n".join(lines)[:size]
        (workspace / f"data{i}.txt").write_text(body, encoding="utf-8")
        files[f"data{i}.txt"] = body
    return files


class SixFilesModel:
    """Reads six files with read_file, then pages one archived output back in full."""

    def __init__(self, n=6, target=-1):
        self.n, self.target = n, target
        self.reads = 0
        self.eid = None
        self.pages: list[str] = []
        self.offered_get_tool_response = False
        self.summary_requests = 0

    def __call__(self, req):
        if is_summary_request(req):
            self.summary_requests += 1
            return text("The agent read large data files; their outputs are archived.")
        names = [t["function"]["name"] for t in req.get("tools") or []]
        self.offered_get_tool_response |= "get_tool_response" in names
        if self.reads < self.n:
            self.reads += 1
            return tool_call("read_file", {"path": f"data{self.reads - 1}.txt"})
        last = req["messages"][-1]
        if self.eid is None:
            ids = re.findall(r"execution_id: (ex_[0-9a-f]{16})", json.dumps(req["messages"]))
            self.eid = ids[self.target]
            return tool_call("get_tool_response", {"execution_id": self.eid})
        page = last["content"]
        note = PAGE_NOTE.search(page)
        self.pages.append(PAGE_NOTE.sub("", page))
        if note:
            return tool_call("get_tool_response", {"execution_id": self.eid, "offset": int(note.group(1))})
        return text(f"Read {self.n} files and {len(self.pages)} pages.")


async def test_six_large_files_stay_within_budget_in_process(scripted_server, workspace, isolated_home):
    files = make_files(workspace)
    model = SixFilesModel()
    srv = scripted_server(responder=model)
    saver = InMemorySaver()
    graph = build_agent_graph(model=openai_model(srv), checkpointer=saver)
    events = []
    final = await run(
        graph, "Read data0.txt to data5.txt.", ctx(workspace, context_token_limit=4000), thread="six", events=events
    )
    assert_every_request_bounded(srv, 4000)
    assert model.offered_get_tool_response
    assert "".join(model.pages) == files["data5.txt"]  # the archived output comes back in full
    assert len(model.pages) > 1  # ... paged: one page does not fit the budget
    assert final["answer"].startswith("Read 6 files")
    # the raw outputs never rode in the state: views + ids, the text in the archive
    assert len(final["archived"]) == 6 and all(meta["chars"] == 100_000 for meta in final["archived"].values())
    assert max(len(str(m.content)) for m in final["messages"]) < 10_000
    assert len(list((isolated_home / "archive").rglob("ex_*.txt"))) == 6
    # compaction is visible in the state and in the events
    assert any(is_summary(m) for m in final["messages"])
    summ = [e for e in events if e["event"] == "summarization" and e["action"] == "summarize"]
    assert summ and all(e["tokens_after"] < e["tokens_before"] for e in summ)
    assert set(summ[-1]["execution_ids"]) == set(final["archived"])
    # the task is kept verbatim
    assert final["messages"][0].content == "Read data0.txt to data5.txt."
    # get_tool_response does not spend the tool budget; it has its own bound
    assert final["tool_calls_made"] == 6 and final["bookkeeping"]["retrievals_made"] == len(model.pages)


@pytest.mark.e2e
def test_six_large_files_stay_within_budget_cli(scripted_server, workspace):
    files = make_files(workspace)
    model = SixFilesModel(target=0)
    srv = scripted_server(responder=model)
    res = run_cli(
        # only read_file offered: the request size (and so when the first summary comes) does not depend on
        # how many built-in tools there are; data0's output must still be in the context when the model picks it
        ["run", "Read data0.txt to data5.txt.", "--context-tokens", "4000", "--workspace", str(workspace), "--json",
         "--tools", "read_file"],
        env=cli_env(srv),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    assert out["answer"].startswith("Read 6 files")
    assert_every_request_bounded(srv, 4000)
    assert model.offered_get_tool_response
    assert "".join(model.pages) == files["data0.txt"]


# --------------------------------------------------------------------------- pairing + summaries
def parallel_model(turns=8, summary=None):
    state = {"turn": 0}

    def respond(req):
        if is_summary_request(req):
            return summary(req) if callable(summary) else text("Summary: fetched records k0 to k9; all fine.")
        state["turn"] += 1
        if state["turn"] > turns:
            return text("All records fetched.")
        t = state["turn"]
        return tool_calls(
            [("fetch", {"key": f"k{t}a"}), ("fetch", {"key": f"k{t}b"})],
            content=f"Turn {t}: I will now fetch two more records because the analysis needs them. " * 6,
        )

    return respond


async def test_no_request_ever_splits_a_tool_call_from_its_results(scripted_server, workspace):
    srv = scripted_server(responder=parallel_model())
    graph = build_agent_graph(model=openai_model(srv), registry=big_echo_registry())
    events = []
    final = await run(
        graph, "Fetch the records.", ctx(workspace, context_token_limit=2000, archive_threshold_chars=0), events=events
    )
    assert final["answer"] == "All records fetched."
    assert_every_request_bounded(srv, 2000)
    agent_requests = [r for r in srv.requests if not is_summary_request(r)]
    assert len(agent_requests) == 9
    summ = [e for e in events if e["event"] == "summarization" and e["action"] == "summarize"]
    assert summ and summ[0]["strategy"] == "model"  # long texts: a model-written summary
    # the state itself keeps the invariant, and keeps the task first
    msgs = final["messages"]
    assert msgs[0].content == "Fetch the records." and is_summary(msgs[1])
    for i, m in enumerate(msgs):
        if isinstance(m, ToolMessage):
            j = i
            while isinstance(msgs[j], ToolMessage):
                j -= 1
            assert m.tool_call_id in {c["id"] for c in msgs[j].tool_calls}


async def test_failing_summary_model_falls_back_to_a_bounded_digest(scripted_server, workspace):
    srv = scripted_server(responder=parallel_model(summary=lambda req: error(500, "summary backend down")))
    graph = build_agent_graph(model=openai_model(srv), registry=big_echo_registry())
    events = []
    final = await run(
        graph, "Fetch the records.", ctx(workspace, context_token_limit=2000, archive_threshold_chars=0), events=events
    )
    assert final["answer"] == "All records fetched."
    assert_every_request_bounded(srv, 2000)
    assert any(is_summary_request(r) for r in srv.requests)  # the summary call was tried...
    summ = [e for e in events if e["event"] == "summarization" and e["action"] == "summarize"]
    assert summ and all(e["strategy"] == "fallback_digest" for e in summ)  # ... and failed every time
    assert "summary backend down" in summ[0]["error"]
    summary = next(m for m in final["messages"] if is_summary(m))
    # history is kept as a deterministic digest, never replaced by the error text
    assert "summary backend down" not in summary.content and "500" not in summary.content
    assert "- fetch(key=" in summary.content and "record k" in summary.content


async def test_archived_outputs_use_the_graph_store_when_there_is_one(scripted_server, workspace, isolated_home):
    (workspace / "big.txt").write_text("x" * 50_000)
    store = InMemoryStore()
    srv = scripted_server(
        [
            tool_call("read_file", {"path": "big.txt"}),
            lambda req: tool_call(
                "get_tool_response",
                {
                    "execution_id": re.search(r"ex_[0-9a-f]{16}", req["messages"][-1]["content"]).group(0),
                    "offset": 49_990,
                },
            ),
            text("ok"),
        ]
    )
    graph = build_agent_graph(model=openai_model(srv), store=store)
    final = await run(graph, "read big.txt", ctx(workspace))
    (eid,) = final["archived"]
    assert store.get(("smart_agent", "archive"), eid).value["text"] == "x" * 50_000
    assert not (isolated_home / "archive").exists()
    assert srv.requests[2]["messages"][-1]["content"] == "x" * 10  # the last page, raw
    assert "get_tool_response" in srv.offered_tools(1) and "get_tool_response" not in srv.offered_tools(0)


class ArchiveRefusingStore(InMemoryStore):
    """A store whose archive writes fail (a shared store that is down)."""

    async def aput(self, namespace, key, value, index=None, **kw):
        if tuple(namespace) == ("smart_agent", "archive"):
            raise ConnectionError("store down\nsecond line")
        return await super().aput(namespace, key, value, index=index, **kw)


async def test_a_store_that_cannot_archive_gets_no_local_file_but_a_clipped_output_and_an_error(
    scripted_server, workspace, isolated_home
):
    """With a store (a Postgres SMART_AGENT_DB, a LangGraph server's) another process must be able
    to read an archived output back: a failed store write used to go to a file under
    $SMART_AGENT_HOME without a word."""
    (workspace / "big.txt").write_text("x" * 50_000)
    srv = scripted_server([tool_call("read_file", {"path": "big.txt"}), text("ok")])
    graph = build_agent_graph(model=openai_model(srv), store=ArchiveRefusingStore())
    events: list[dict] = []
    final = await run(graph, "read big.txt", ctx(workspace, archive_threshold_chars=4000), events=events)
    assert final["answer"] == "ok" and not final.get("archived")
    assert not (isolated_home / "archive").exists()
    errors = [e for e in events if e["event"] == "error"]
    assert [(e["node"], e["tool"], e["error"]) for e in errors] == [
        ("archive", "read_file", "the store could not keep the tool output (ConnectionError: store down second line)")
    ]
    sent = srv.requests[1]["messages"][-1]["content"]
    assert len(sent) <= 4000 and "cut: the archive is unavailable" in sent and "execution_id" not in sent
    assert "get_tool_response" not in srv.offered_tools(1)


async def test_one_huge_message_is_archived_not_sent(scripted_server, workspace):
    srv = scripted_server(responder=lambda req: text(f"{len(req['messages'])} messages"))
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver())
    huge = "Summarize this document:\n" + ("lorem ipsum dolor sit amet " * 8000)
    events = []
    final = await run(graph, huge, ctx(workspace, context_token_limit=3000), thread="h", events=events)
    assert_every_request_bounded(srv, 3000)
    assert "get_tool_response" in srv.offered_tools(0)  # the task's full text can be read back
    (eid,) = final["archived"]
    assert eid in srv.requests[0]["messages"][1]["content"]
    assert any(e["event"] == "summarization" and e.get("archived_oversized") == [eid] for e in events)


async def test_agent_guard_truncates_when_prediction_is_missing(scripted_server, workspace):
    """A state written without the summarize node (e.g. by update_state) is still cut."""
    srv = scripted_server([text("fine")])
    saver = InMemorySaver()
    graph = build_agent_graph(model=openai_model(srv), checkpointer=saver)
    config = {"configurable": {"thread_id": "g"}}
    call = AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "1"}, "id": "c1"}])
    await graph.aupdate_state(
        config,
        {
            "messages": [
                HumanMessage("q"),
                call,
                ToolMessage("y" * 40_000, tool_call_id="c1", name="calculator"),
                HumanMessage("and now?"),
            ],
            "run_settings": {"context_token_limit": 3000},
        },
        as_node="memory_recall",
    )
    state = await graph.aget_state(config)
    assert state.next == ("agent",)
    events = []
    async for mode, chunk in graph.astream(
        None, config=config, context=ctx(workspace, context_token_limit=3000), stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
    assert_every_request_bounded(srv, 3000)
    assert "cut to fit the context budget" in srv.requests[0]["messages"][3]["content"]
    assert any(e["event"] == "summarization" and e["action"] == "truncate" for e in events)


async def test_custom_token_counter_is_used(scripted_server, workspace):
    calls = {"n": 0}

    def counter(messages, tools=None):
        calls["n"] += 1
        return 10 * sum(len(str(m.content)) for m in messages)  # very pessimistic

    srv = scripted_server([tool_call("calculator", {"expression": "2+2"}), text("4")])
    graph = build_agent_graph(model=openai_model(srv), token_counter=counter)
    events = []
    await run(graph, "What is 2+2? " + "please " * 300, ctx(workspace, context_token_limit=20000), events=events)
    assert calls["n"] > 0
    assert any(e["event"] == "summarization" for e in events)  # the pessimistic count triggered the guard


# --------------------------------------------------------------------------- recalled memories
async def test_recalled_memories_count_in_the_first_budget_decision(scripted_server, workspace, tmp_path):
    """memory_recall adds the recalled memories to the system prompt; the budget decision
    right after it measures them. (The prediction used to be made by the resolver, before
    the recall: the over-budget request went on to the agent guard, which cut it.)"""
    from memory_fakes import TableEmbeddings, unit

    from smart_agent.memory.store import FaissMemoryStore, user_namespace
    from smart_agent.models.tokens import usable_tokens

    store = FaissMemoryStore(tmp_path / "mem", embeddings=TableEmbeddings())
    table = store.embeddings.table
    table["What did we find?"] = unit(1, 0)
    for i in range(10):  # ten distinct memories of ~480 characters, all close to the task
        note = f"Finding {i}: " + " ".join(f"w{i}x{k}" for k in range(70))
        table[note] = unit(1, *([0] * i), 0.6 + 0.02 * i)
        store.remember(user_namespace("default"), note)
    srv = scripted_server(
        responder=lambda req: text("Summary of the first run.") if is_summary_request(req) else text("answer " * 400)
    )
    graph = build_agent_graph(
        model=openai_model(srv), registry=ToolRegistry(), checkpointer=InMemorySaver(), store=store
    )
    limit = 3000
    await run(graph, "Read this report: " + "data " * 800, ctx(workspace, context_token_limit=limit), thread="m")
    assert len(srv.requests) == 1  # the first run fits without its memories
    events: list[dict] = []
    final = await run(
        graph,
        "What did we find?",
        ctx(workspace, context_token_limit=limit, memory=True, memory_k=10),
        thread="m",
        events=events,
    )
    recall = next(e for e in events if e["event"] == "memory_recall")
    assert recall["count"] == 10
    summ = [e for e in events if e["event"] == "summarization" and e["action"] == "summarize"]
    assert len(summ) == 1 and summ[0]["tokens_before"] > usable_tokens(limit)  # the memories were counted
    assert not [e for e in events if e["event"] == "summarization" and e["action"] == "truncate"]
    assert_every_request_bounded(srv, limit)
    request = srv.requests[-1]["messages"]
    assert "Finding 9:" in request[0]["content"]  # the memories reached the model, with the task and the summary
    assert request[1]["content"] == "What did we find?" and request[2]["content"].startswith("[Context summary #1")
    assert final["answer"].startswith("answer")
    store.close()
