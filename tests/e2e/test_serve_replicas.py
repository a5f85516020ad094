"""Two ``smart-agent serve`` replicas on one PostgreSQL (pgserver) and one Redis (Debian's
``redis-server``), driven through ``langgraph_sdk``: threads, memory, interrupts and background
runs are shared, and a run whose replica is killed (``kill -9``) or stopped (SIGTERM) finishes on
the other one, once; ``serve`` without them is the in-memory server, which runs graph factories.

Each replica has its own scripted model server (both answer alike), so a test sees which
replica ran a model step. The replicas are started once for the module, at the same time (their
table set-up runs under one advisory lock), with a 3 s run heartbeat so a dead replica's run is
taken over within seconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import cli_env, free_port, fresh_database, run_cli

from smart_agent.testing.scripted_server import ScriptedOpenAIServer, last_tool_message, text, tool_call

# The cluster (Redis, two replicas) is module-scoped: the module runs on one worker (--dist loadfile).
pytestmark = pytest.mark.e2e


def wait_until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory) -> Iterator[str]:
    """A real Redis (Debian's redis-server, which .ci/run installs) on a free port, in a temp folder."""
    exe = shutil.which("redis-server")
    assert exe, "redis-server is not installed (apt-get install -y redis-server; .ci/run does it)"
    folder = tmp_path_factory.mktemp("redis")
    port = free_port()
    with open(folder / "redis.log", "w") as log:
        proc = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(folder), "--daemonize", "no"],
            stdout=log, stderr=subprocess.STDOUT,
        )

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    try:
        wait_until(answers, 20, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@dataclass
class Replica:
    name: str
    env: dict[str, str]
    log: Path
    model: ScriptedOpenAIServer | None
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    @property
    def scripted(self) -> ScriptedOpenAIServer:
        assert self.model is not None
        return self.model

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        exe = Path(sys.executable).with_name("smart-agent")
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                [str(exe), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--jobs", "4"],
                env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout_s: float = 120) -> None:
        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"replica {self.name} exited:\n" + self.log.read_text()[-4000:])
            try:
                return httpx.get(f"{self.url}/ok", params={"check_db": 1}, timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout_s, f"replica {self.name}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def client(self) -> Any:
        from langgraph_sdk import get_client

        return get_client(url=self.url, timeout=120)


@dataclass
class Cluster:
    a: Replica
    b: Replica
    workspace: Path
    home: Path
    database: str
    respond: Callable[[dict[str, Any]], dict[str, Any]] = lambda req: text("no script")

    def reset(self, respond: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.respond = respond
        for replica in (self.a, self.b):
            replica.scripted.reset([])

    def model_requests(self) -> list[dict[str, Any]]:
        return self.a.scripted.requests + self.b.scripted.requests


@pytest.fixture(scope="module")
def cluster(pg_url, redis_url, tmp_path_factory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("serve")
    workspace, home = root / "ws", root / "home"
    workspace.mkdir()
    database = fresh_database(pg_url, "serve")
    replicas = []
    box: dict[str, Cluster] = {}
    for name in ("a", "b"):
        model = ScriptedOpenAIServer(responder=lambda req: box["cluster"].respond(req)).start()
        env = cli_env(
            model,
            SMART_AGENT_DB=database,
            REDIS_URI=redis_url,
            SMART_AGENT_MEMORY="true",
            SMART_AGENT_WORKSPACE=str(workspace),
            SMART_AGENT_HOME=str(home),
            LANGGRAPH_CLI_NO_ANALYTICS="1",
            LANGGRAPH_NO_VERSION_CHECK="1",
            LG_BG_JOB_HEARTBEAT="3",  # a dead replica's runs are swept within ~6-12 s
        )
        replicas.append(Replica(name, env, root / f"replica-{name}.log", model))
    box["cluster"] = cluster = Cluster(replicas[0], replicas[1], workspace, home, database)
    try:
        for replica in replicas:  # both at once: their table set-up must not race
            replica.start()
        for replica in replicas:
            replica.wait_ready()
        yield cluster
    finally:
        for replica in replicas:
            replica.stop()
            replica.scripted.stop()


def roles(request: dict[str, Any]) -> list[str]:
    return [m["role"] for m in request["messages"]]


def user_lines(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


# -- the check of the issue: history and memory cross replicas -------------------------------------
async def test_thread_started_on_a_continues_on_b_with_its_history(cluster):
    """A thread made and run through replica A is continued through replica B, which streams the
    turn: B's model request carries the first turn, and both replicas read the same state."""

    def respond(req):
        if "What is my name?" in user_lines(req)[-1]:
            return text("You are Ada." if any("My name is Ada" in u for u in user_lines(req)) else "I do not know.")
        return text("Hello Ada.")

    cluster.reset(respond)
    a, b = cluster.a.client(), cluster.b.client()
    context = {"memory": False}  # only the thread's history can carry the name over
    thread = await a.threads.create()
    first = await a.runs.wait(thread["thread_id"], "agent", input={"task": "My name is Ada"}, context=context)
    assert first["answer"] == "Hello Ada."

    chunks = [
        chunk async for chunk in b.runs.stream(
            thread["thread_id"], "agent", input={"task": "What is my name?"}, context=context, stream_mode="values"
        )
    ]
    values = [c.data for c in chunks if c.event == "values"]
    assert values and values[-1]["answer"] == "You are Ada.", [c.event for c in chunks]
    second = [r for r in cluster.model_requests() if "What is my name?" in user_lines(r)[-1]]
    assert len(second) == 1 and roles(second[0]) == ["system", "user", "assistant", "user"]
    for client in (a, b):
        state = await client.threads.get_state(thread["thread_id"])
        assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "human", "ai"]
        assert len(await client.runs.list(thread["thread_id"])) == 2


async def test_fact_remembered_through_a_is_recalled_in_a_new_thread_through_b(cluster):
    """Memory lives in the replicas' shared store (pgvector in Postgres): a fact stored by a run
    through A is recalled by a run in a new thread through B, searched by meaning."""

    def respond(req):
        system = req["messages"][0]["content"]
        return text("teal" if "favourite colour is teal" in system else "Noted.")

    cluster.reset(respond)
    a, b = cluster.a.client(), cluster.b.client()
    user = f"u{uuid.uuid4().hex[:8]}"
    thread = await a.threads.create()
    stored = await a.runs.wait(
        thread["thread_id"], "agent", input={"task": "Remember that my favourite colour is teal"},
        context={"user_id": user},
    )
    assert stored["answer"] == "Noted."
    other = await b.threads.create()
    recalled = await b.runs.wait(
        other["thread_id"], "agent", input={"task": "What is my favourite colour?"}, context={"user_id": user}
    )
    assert recalled["answer"] == "teal"
    assert recalled["recalled_memories"], "the new thread recalled the first thread's memory"
    (last,) = [r for r in cluster.model_requests() if "What is my favourite colour?" in user_lines(r)[-1]]
    assert roles(last) == ["system", "user"], "a new thread: only memory carried the fact over"
    found = await b.store.search_items(["memories", user], query="favourite colour")
    assert found["items"] and all(i["score"] > 0.3 for i in found["items"]), "pgvector search by meaning"
    assert any("teal" in i["value"]["text"] for i in found["items"])
    assert not (cluster.home / "memory").exists(), "no FAISS store beside the server's"


async def test_interrupt_raised_on_a_is_resumed_through_b(cluster):
    """A human-approval interrupt raised by a run through A is answered through B."""

    def respond(req):
        if req["messages"][-1]["role"] == "tool":
            return text("result: " + last_tool_message(req))
        return tool_call("write_file", {"path": "approved.txt", "content": "hello"})

    cluster.reset(respond)
    a, b = cluster.a.client(), cluster.b.client()
    context = {"approve": "write_file", "memory": False}
    thread = await a.threads.create()
    await a.runs.wait(thread["thread_id"], "agent", input={"task": "save hello"}, context=context)
    state = await b.threads.get_state(thread["thread_id"])
    (interrupt,) = state["interrupts"]
    (action,) = interrupt["value"]["action_requests"]
    assert action["name"] == "write_file" and not (cluster.workspace / "approved.txt").exists()
    result = await b.runs.wait(
        thread["thread_id"], "agent", command={"resume": {"decisions": [{"type": "approve"}]}}, context=context
    )
    assert (cluster.workspace / "approved.txt").read_text() == "hello"
    assert result["answer"] == "result: Wrote 5 characters to approved.txt"
    assert (await a.threads.get_state(thread["thread_id"]))["interrupts"] == []


# -- faults ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
async def test_background_run_of_a_stopped_replica_finishes_on_the_other_once(cluster, stop):
    """The replica running a background run dies (``kill -9``: its heartbeat lapses) or is stopped
    (SIGTERM, a deploy: it cancels the run after 5 s and puts it back in the queue) while its model
    call is in flight: the other replica takes the run over and resumes it from its last checkpoint.
    The first model step and the tool ran once, the run is one run, and it ends with the answer."""
    reached = threading.Event()

    def respond(req):
        if req["messages"][-1]["role"] != "tool":
            return tool_call("calculator", {"expression": "37*43"})
        if not reached.is_set():
            reached.set()
            return {"content": "never delivered", "delay_s": 30}  # the replica dies while it waits
        return text("It is " + last_tool_message(req) + ".")

    cluster.reset(respond)
    a = cluster.a.client()
    thread = await a.threads.create()
    # durability "sync": each step is saved before the next starts (the server's default, "async",
    # saves while the next step runs, so a kill may lose the last steps and they run again).
    run = await a.runs.create(
        thread["thread_id"], "agent", input={"task": "What is 37*43?"}, context={"memory": False},
        durability="sync",
    )
    assert reached.wait(60), "the run reached its second model call"
    victim, survivor = (
        (cluster.a, cluster.b) if any(roles(r)[-1] == "tool" for r in cluster.a.scripted.requests)
        else (cluster.b, cluster.a)
    )
    assert victim.proc is not None
    os.kill(victim.proc.pid, stop)
    victim.proc.wait(30)
    try:
        client = survivor.client()
        await client.runs.join(thread["thread_id"], run["run_id"])
        done = await client.runs.get(thread["thread_id"], run["run_id"])
        assert done["status"] == "success", done
        state = await client.threads.get_state(thread["thread_id"])
        assert state["values"]["answer"] == "It is 1591."
        assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "tool", "ai"]
        assert state["values"]["tool_calls_made"] == 1
        assert len(await client.runs.list(thread["thread_id"])) == 1, "one run, not a second one"
        firsts = [r for r in cluster.model_requests() if roles(r)[-1] != "tool"]
        assert len(firsts) == 1, "the first step was not run again: resumed from the checkpoint"
        assert any(roles(r)[-1] == "tool" for r in survivor.scripted.requests), "the survivor finished the run"
        attempts = [h["metadata"]["run_attempt"] for h in await client.threads.get_history(thread["thread_id"])]
        assert attempts[0] == 2 and attempts[-1] == 1, attempts  # the second attempt went on from the first's
    finally:
        victim.start()  # the module's later tests (and its teardown) find two replicas again
        victim.wait_ready()


def test_unreachable_redis_or_database_is_one_line_and_exit_2(cluster, redis_url, tmp_path):
    """``serve`` checks its backends before it starts: a Redis or a database that does not answer
    is one line naming it, exit 2, and no server (nor the password of the database's URL)."""
    closed = free_port()
    base = {**cluster.a.env, "SMART_AGENT_HOME": str(tmp_path / "home")}
    no_redis = run_cli(
        ["serve", "--port", str(free_port())], env={**base, "REDIS_URI": f"redis://:hunter2@127.0.0.1:{closed}"}
    )
    assert no_redis.returncode == 2 and no_redis.stdout == "", no_redis
    (line,) = no_redis.stderr.splitlines()
    assert line.startswith("smart-agent: REDIS_URI: Redis does not answer") and "hunter2" not in line
    no_db = run_cli(
        ["serve", "--port", str(free_port())],
        env={**base, "SMART_AGENT_DB": f"postgresql://postgres:secret@127.0.0.1:{closed}/x"},
    )
    assert no_db.returncode == 2, no_db
    (line,) = no_db.stderr.splitlines()
    assert "cannot connect to the Postgres database of SMART_AGENT_DB" in line and "secret" not in line


FACTORY = '''
import contextlib

from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph_sdk.runtime import ServerRuntime
from typing_extensions import TypedDict


class State(TypedDict):
    seen: str


@contextlib.asynccontextmanager
async def make_graph(config: RunnableConfig, runtime: ServerRuntime):
    """A graph factory entered per run: it sees the run's client context."""
    run = runtime.execution_runtime
    tag = (config.get("configurable") or {}).get("tag") if run is not None else "no run"

    def node(state: State) -> State:
        return {"seen": f"factory saw tag={tag}"}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    yield builder.compile()
'''


async def test_in_memory_serve_runs_a_graph_factory_of_another_folder(tmp_path):
    """Without Postgres and Redis, ``serve`` is the in-memory server of ``langgraph dev``; the engine
    loads ``langgraph.json``'s graphs itself, a graph factory too, from a config in another folder
    (its ``./`` paths read from there)."""
    from langgraph_sdk import get_client

    project = tmp_path / "project"
    project.mkdir()
    (project / "factory.py").write_text(FACTORY)
    (project / "langgraph.json").write_text('{"dependencies": ["."], "graphs": {"mine": "./factory.py:make_graph"}}')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = free_port()
    env = cli_env(None, SMART_AGENT_HOME=str(tmp_path / "home"), LANGGRAPH_CLI_NO_ANALYTICS="1",
                  LANGGRAPH_NO_VERSION_CHECK="1")
    exe = Path(sys.executable).with_name("smart-agent")
    with open(tmp_path / "serve.log", "w") as log:
        proc = subprocess.Popen(
            [str(exe), "serve", "--port", str(port), "--config", str(project / "langgraph.json")],
            cwd=elsewhere, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    replica = Replica("memory", env, tmp_path / "serve.log", model=None, port=port, proc=proc)
    try:
        replica.wait_ready(60)
        client = get_client(url=replica.url)
        thread = await client.threads.create()
        result = await client.runs.wait(thread["thread_id"], "mine", input={"seen": ""}, context={"tag": "blue"})
        assert result == {"seen": "factory saw tag=blue"}
        assert "in memory: one process" in (tmp_path / "serve.log").read_text()
    finally:
        replica.stop()
