"""Attack on the rule a served graph applies to its client's context (``context_client.py``):
a client may narrow the server's sandbox, never widen it - workspace escapes through ``..``,
absolute paths and links, the private-network switch, the write cap and the budgets. The
served graph objects themselves (``graphs.<name>.graph``) refuse before anything runs, while
``build_*_graph()`` and the CLI's context stay the operator's."""

from __future__ import annotations

import os

import pytest

from smart_agent.config.context import AgentContext
from smart_agent.config.served import ClientContextError, client_context, narrowed_workspace

pytestmark = pytest.mark.unit


@pytest.fixture
def server(tmp_path, monkeypatch):
    """The server's workspace (``$SMART_AGENT_WORKSPACE``) with a folder ``sub``, a file, a link
    inside pointing outside, and a folder beside it that is outside."""
    root = tmp_path / "server"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "note.txt").write_text("inside")
    (root / "file.txt").write_text("a file")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out-link").symlink_to(outside)
    (root / "sub" / "in-link").symlink_to(root / "sub" / "deeper")
    (root / "root-link").symlink_to("/")
    monkeypatch.setenv("SMART_AGENT_WORKSPACE", str(root))
    for name in ("ALLOW_PRIVATE_NETWORK", "MEMORY", "MAX_WRITE_BYTES", "MAX_TOOL_CALLS", "MAX_MODEL_CALLS",
                 "MAX_COST_USD"):
        monkeypatch.delenv("SMART_AGENT_" + name, raising=False)
    return os.path.realpath(root)


def refused(context) -> str:
    with pytest.raises(ClientContextError) as exc:
        client_context(context)
    message = str(exc.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "value",
    ["/", "..", "../outside", "sub/../..", "sub/../../outside", "./../server/../outside", "out-link", "out-link/.",
     "root-link", "root-link/etc", "/etc", "//", "/nonexistent"],
)
def test_a_workspace_outside_the_servers_is_refused(server, value):
    message = refused({"workspace": value})
    assert message == f"workspace: a client may only narrow the server's workspace {server} (got {value!r})"


def test_an_outside_path_says_the_same_whether_it_exists_or_not(server, tmp_path):
    """No probing: the server's files outside its workspace are not told apart."""
    assert refused({"workspace": str(tmp_path / "outside")}).endswith(f"(got {str(tmp_path / 'outside')!r})")
    assert refused({"workspace": str(tmp_path / "missing")}).endswith(f"(got {str(tmp_path / 'missing')!r})")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("sub", "sub"), ("./sub", "sub"), ("sub/deeper/..", "sub"), ("sub/in-link", "sub/deeper"), (".", ""),
     ("sub/", "sub")],
)
def test_a_folder_inside_is_resolved_from_the_servers_workspace(server, value, expected):
    got = client_context({"workspace": value, "model": "openai:x"})
    assert got == {"workspace": os.path.join(server, expected).rstrip("/"), "model": "openai:x"}


def test_an_absolute_folder_inside_is_kept_resolved(server):
    assert client_context({"workspace": os.path.join(server, "sub")})["workspace"] == os.path.join(server, "sub")
    assert narrowed_workspace(server, server) == server


def test_a_missing_or_non_folder_workspace_inside_is_one_line(server):
    missing = f"workspace: 'missing' does not exist in the server's workspace {server}"
    assert refused({"workspace": "missing"}) == missing
    assert refused({"workspace": "file.txt"}) == "workspace: 'file.txt' is not a folder"


def test_no_workspace_or_an_empty_one_is_the_servers(server):
    assert client_context(None) is None
    assert client_context({}) == {}
    assert client_context({"workspace": ""}) == {"workspace": ""}


def test_the_private_network_and_memory_may_be_turned_off_not_on(server, monkeypatch):
    assert refused({"allow_private_network": True}) == (
        "allow_private_network: a client may not turn on what the server has off (got True)"
    )
    assert client_context({"allow_private_network": False}) == {"allow_private_network": False}
    monkeypatch.setenv("SMART_AGENT_MEMORY", "false")
    assert refused({"memory": True}).startswith("memory: a client may not turn on")
    monkeypatch.setenv("SMART_AGENT_ALLOW_PRIVATE_NETWORK", "true")
    monkeypatch.setenv("SMART_AGENT_MEMORY", "true")
    assert client_context({"allow_private_network": True, "memory": False}) == {
        "allow_private_network": True, "memory": False,
    }


def test_limits_may_be_lowered_not_raised(server, monkeypatch):
    monkeypatch.setenv("SMART_AGENT_MAX_WRITE_BYTES", "1000")
    assert refused({"max_write_bytes": 1001}) == (
        "max_write_bytes: a client may only lower the server's limit 1000 (got 1001)"
    )
    assert client_context({"max_write_bytes": 10}) == {"max_write_bytes": 10}
    assert refused({"max_tool_calls": 21}) == "max_tool_calls: a client may only lower the server's limit 20 (got 21)"
    assert client_context({"max_tool_calls": 20, "loop_limit": 0}) == {"max_tool_calls": 20, "loop_limit": 0}


def test_no_limit_is_a_widening_where_the_server_has_one(server, monkeypatch):
    assert client_context({"max_model_calls": 0, "max_cost_usd": 0.0}) == {"max_model_calls": 0, "max_cost_usd": 0.0}
    monkeypatch.setenv("SMART_AGENT_MAX_MODEL_CALLS", "5")
    assert refused({"max_model_calls": 0}) == "max_model_calls: a client may only lower the server's limit 5 (got 0)"
    assert refused({"max_model_calls": 6}).startswith("max_model_calls:")
    assert client_context({"max_model_calls": 3}) == {"max_model_calls": 3}


def test_every_widening_field_is_named_on_one_line(server):
    message = refused({"workspace": "/", "allow_private_network": True, "max_tool_calls": 10_000})
    assert message.count("; ") == 2 and all(
        name in message for name in ("workspace:", "allow_private_network:", "max_tool_calls:")
    )


def test_a_value_of_the_wrong_type_is_left_to_the_contexts_validation(server):
    """The schema's own check refuses it with its message (tests/security/test_context_langgraph_dev.py)."""
    assert client_context({"allow_private_network": "false", "max_tool_calls": True}) == {
        "allow_private_network": "false", "max_tool_calls": True,
    }


def test_a_context_object_is_checked_the_same_way(server):
    with pytest.raises(ClientContextError, match="^workspace: a client may only narrow"):
        client_context(AgentContext(workspace="/"))
    assert client_context(AgentContext(workspace="sub")).workspace == os.path.join(server, "sub")
    with pytest.raises(ClientContextError, match="^context must be a JSON object"):
        client_context(["workspace", "/"])


@pytest.mark.parametrize("module", ["agent", "planner", "dual", "fleet"])
async def test_the_served_graphs_refuse_before_any_node_runs(server, module):
    """The factory ``langgraph.json`` names is entered for a run with the server's runtime (here
    the shape of it the factory reads: the run's context); a widening context never yields a graph."""
    from types import SimpleNamespace

    from smart_agent.graphs import served

    factory = getattr(served, module)
    run = SimpleNamespace(execution_runtime=SimpleNamespace(context={"workspace": "/", "model": "openai:nowhere"}))
    with pytest.raises(ClientContextError, match="^workspace: a client may only narrow"):
        async with factory({}, run):
            raise AssertionError("a graph was handed out for a widening context")
    through_config = {"configurable": {"workspace": "/"}}
    with pytest.raises(ClientContextError, match="^workspace: a client may only narrow"):
        async with factory(through_config, SimpleNamespace(execution_runtime=SimpleNamespace(context=None))):
            raise AssertionError("a graph was handed out for a widening configurable")
    async with factory({}, SimpleNamespace(execution_runtime=None)) as graph:  # (schema reads: no run)
        assert graph.get_graph().nodes


def test_the_operators_graphs_and_contexts_keep_full_control(server, tmp_path):
    """``build_*_graph()`` is not a served graph: the CLI and Python callers set any workspace."""
    from smart_agent.graphs.agent import build_agent_graph

    assert getattr(build_agent_graph(), "served", False) is False
    assert AgentContext(workspace="/", allow_private_network=True).workspace == "/"


def test_a_client_may_add_tool_call_limits_but_not_drop_the_servers(monkeypatch):
    monkeypatch.setenv("SMART_AGENT_TOOL_CALL_LIMITS", "fetch_url:run=2")
    more = ["fetch_url:run=2", "calculator:run=1"]
    assert client_context({"tool_call_limits": more}) == {"tool_call_limits": more}
    for dropped in ([], ["calculator:run=1"], ["fetch_url:run=20"]):
        with pytest.raises(ClientContextError, match="tool_call_limits: a client may add to the server's"):
            client_context({"tool_call_limits": dropped})
