"""Shared fixtures: an isolated data home, a scripted OpenAI-compatible server,
and the real ``langchain-openai`` client pointed at it."""

from __future__ import annotations

import functools
import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANGSMITH_TRACING", "false")

# Fixtures for every folder: `dev_server` (`langgraph dev` against a scripted model),
# `counting_plugin` (a folder plugin that counts its loads), `local_model` and
# `fake_memory` (memory_fakes.py), `http_mcp` (an MCP server over HTTP, mcp_support.py), `rt` (a
# tool runtime in the test's tmp_path, tool_support.py).
pytest_plugins = ["langgraph_dev_support", "plugin_support", "memory_fakes", "mcp_support", "tool_support"]

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

# The kind of a test is its folder (tests/unit, tests/graph, tests/e2e), unless it carries
# an explicit ``@pytest.mark.unit/graph/e2e`` (or a module ``pytestmark``), which wins: a
# pure-function test kept beside its graph tests, a slow in-process test. tests/security
# marks every test explicitly; an unmarked test outside the three folders counts as e2e,
# so the fast run (``pytest -m "not e2e"``) never picks up a slow test by omission.
KINDS = ("unit", "graph", "e2e")


# A two-agent team (agents file): triage hands arithmetic over to math, which has the calculator.
TRIAGE_MATH_TEAM = """\
default: triage
agents:
  triage:
    description: Routes each question to the right specialist.
    prompt: You are the triage agent.
    tools: []
    handoffs: [math]
  math:
    description: Does arithmetic.
    prompt: You are the math agent.
    tools: [calculator]
"""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto``: one more than the cores (many tests wait on a CLI process or a
    server, not on a core); ``--maxprocesses`` caps it."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(kind) for kind in KINDS):
            continue
        path = Path(str(item.path)).resolve()
        parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
        kind = parts[0] if len(parts) > 1 and parts[0] in KINDS else "e2e"
        item.add_marker(getattr(pytest.mark, kind))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Every test gets its own SMART_AGENT_HOME and no model credentials from outside."""
    home = tmp_path / "home"
    monkeypatch.setenv("SMART_AGENT_HOME", str(home))
    for var in (
        "OPENAI_BASE_URL", "OPENAI_API_KEY", "SMART_AGENT_MODEL", "SMART_AGENT_DB", "SMART_AGENT_AGENTS",
        "SMART_AGENT_DURABILITY",  # the kill-and-resume tests rely on the default ("sync")
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def fresh_openai_http_clients():
    """langchain-openai caches one httpx client per base URL for the whole process. A test
    whose scripted server gets the port an earlier test's server had would reuse that
    client, whose pooled connection belongs to the earlier test's closed event loop
    ("Event loop is closed" while the pool closes it). Each test starts with new clients."""
    yield
    utils = sys.modules.get("langchain_openai.chat_models._client_utils")
    for name in ("_cached_async_httpx_client", "_cached_sync_httpx_client"):
        cached = getattr(utils, name, None)
        if cached is not None:
            cached.cache_clear()


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def scripted_server():
    """Factory: ``scripted_server(script=[...], responder=...)`` -> started server."""
    from smart_agent.testing.scripted_server import ScriptedOpenAIServer

    servers = []

    def make(script=None, **kwargs):
        srv = ScriptedOpenAIServer(script, **kwargs).start()
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.stop()


@pytest.fixture
def openai_server(scripted_server, monkeypatch):
    """Factory like ``scripted_server`` whose server is also this test's OpenAI endpoint
    (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``): what a ``provider:model`` spec such as
    ``openai:scripted-model`` reaches."""

    def make(script=None, **kwargs):
        srv = scripted_server(script, **kwargs)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        return srv

    return make


def openai_model(server, **kwargs):
    """The real OpenAI client over HTTP against a scripted server."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=server.base_url, api_key="test-key", model="scripted-model", stream_usage=True, max_retries=0, **kwargs
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago (for a server the test starts)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli_env(server=None, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SMART_AGENT_MODEL"))}
    # Memory (torch + the embedding model in every process) is tested on its own;
    # tests that need it pop SMART_AGENT_MEMORY or pass SMART_AGENT_MEMORY="true".
    env.update(HF_HUB_OFFLINE="1", LANGSMITH_TRACING="false", PYTHONUNBUFFERED="1", SMART_AGENT_MEMORY="false")
    if server is not None:
        env.update(
            OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test-key", SMART_AGENT_MODEL="openai:scripted-model"
        )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_cli(args, *, env, input_text=None, timeout=120, cwd=None):
    """Run the installed console script in a separate process."""
    exe = Path(sys.executable).with_name("smart-agent")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smart_agent.cli"]
    return subprocess.run(
        cmd + list(args), env=env, input=input_text, capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def loop_context(workspace, **kw):
    """The agent loop's run context for a test: files in ``workspace``, long-term memory off
    unless ``memory`` is given."""
    from smart_agent.config.context import Context

    kw.setdefault("memory", False)
    return Context(workspace=str(workspace), **kw)


async def run_graph(graph, task, context, thread=None, events=None):
    """Stream a graph run: collect custom events into ``events``, return the final state.
    ``task``: a task string, or the graph's input as it is (a ``Command`` resuming the thread)."""
    config = {"configurable": {"thread_id": thread}} if thread else {}
    graph_input = {"task": task} if isinstance(task, str) else task
    final = {}
    async for mode, chunk in graph.astream(
        graph_input, config=config, context=context, stream_mode=["custom", "values"]
    ):
        if mode == "custom" and events is not None:
            events.append(chunk)
        elif mode == "values":
            final = chunk
    return final


async def run_with_events(graph, task, context, thread="t"):
    """``(final state, custom events)`` of a graph run (thread ``None``: no thread)."""
    events: list = []
    final = await run_graph(graph, task, context, thread=thread, events=events)
    return final, events


def offered(request) -> list[str]:
    """Tool names a recorded chat-completions request offered, in order."""
    return [t["function"]["name"] for t in request.get("tools") or []]


@pytest.fixture(scope="session")
def pg_url():
    """One real PostgreSQL 16 (pgserver, from ``.[dev]``) for the test session: its URI.
    Not skipped when it cannot start: the Postgres tests then fail loudly. The folder is
    directly in the temp dir: run as root, pgserver's server runs as another user, which
    cannot enter pytest's private ``pytest-of-root`` folder."""
    import tempfile
    import warnings

    with warnings.catch_warnings():
        # Without XDG_RUNTIME_DIR (CI, containers) platformdirs warns and falls back to
        # /tmp/runtime-<uid>, where pgserver then keeps its lock file: fine for tests.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver

    with tempfile.TemporaryDirectory(prefix="smart-agent-pg-", ignore_cleanup_errors=True) as folder:
        srv = pgserver.get_server(folder, cleanup_mode="stop")
        try:
            yield srv.get_uri()
        finally:
            srv.cleanup()


def fresh_database(pg_url: str, prefix: str = "sa") -> str:
    """A new empty database on the test server (``pg_url``'s): its URL."""
    import uuid

    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = pg_url.replace("/postgres?", f"/{name}?", 1)
    assert url != pg_url
    return url


# Top-level folders of the repository that are not part of the package.
NOT_PACKAGE = frozenset({"tests", "benchmarks", "notebooks", "docs", "build", "dist"})


@functools.cache
def package_files() -> tuple[Path, ...]:
    """The package's Python files, sorted (the repository root is the package ``smart_agent``): the
    root's and those of its package folders (an ``__init__.py`` in each), none from the folders
    outside it (tests/, benchmarks/, hidden folders such as .venv: they are never walked)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(REPO):
        here = Path(folder)
        outside = NOT_PACKAGE if here == REPO else frozenset()
        dirs[:] = [d for d in dirs if d[0] != "." and d not in outside and (here / d / "__init__.py").is_file()]
        found.extend(here / f for f in files if f.endswith(".py"))
    return tuple(sorted(found))


def benchmark_module(name: str) -> ModuleType:
    """A module of benchmarks/ (not part of the package, so not type-checked: its names are ``Any``
    here), imported as the benchmark scripts import each other: by name, benchmarks/ on the path."""
    folder = str(REPO / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def files_under(folder: Path) -> list[str]:
    """The files under ``folder`` (relative paths, sorted; none when it does not exist)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []
