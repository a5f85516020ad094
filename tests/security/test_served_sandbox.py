"""Attack over the real `langgraph dev` + `langgraph_sdk`: a client widening the server's sandbox.

The server runs with ``SMART_AGENT_WORKSPACE=<tmp_path>`` (tests/langgraph_dev_support.py) and the
private network off. A client sending ``workspace: "/"`` (or ``..``, a folder beside the server's,
a link inside pointing out, the same through ``config.configurable``), ``allow_private_network:
true`` or a larger ``max_write_bytes`` must get a failed run with one line naming the field before
any model request (the scripted server records every request), on every served graph; a folder
inside the server's workspace narrows it and works."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from security.test_context_langgraph_dev import loopback_page  # noqa: F401 (a fixture)
from smart_agent.testing.scripted_server import text, tool_call

if TYPE_CHECKING:
    from langgraph_sdk.schema import Config

pytestmark = pytest.mark.e2e

GRAPHS = ("agent", "planner", "dual", "fleet")
MODEL = "openai:scripted-model"


def echo_tool_result(req) -> dict:
    """The scripted model's answer: the last message it got (a tool result), as its text."""
    return text(str(req["messages"][-1]["content"])[:300])


async def run(url: str, graph: str, task: str, *, context: dict | None = None, config: Config | None = None) -> dict:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], graph, input={"task": task}, context=context, config=config, raise_error=False
    )
    assert isinstance(result, dict), result
    return result


def error_of(result) -> str:
    return str(((result or {}).get("__error__") or {}).get("message") or "")


@pytest.fixture
def outside(tmp_path_factory):
    """A folder outside the server's workspace, with a secret in it."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.txt").write_text("OUTSIDE SECRET")
    return folder


async def test_a_client_cannot_widen_the_workspace_of_any_served_graph(dev_server, tmp_path, outside):
    url, srv = dev_server
    root = os.path.realpath(tmp_path)
    (tmp_path / "link-out").symlink_to(outside)
    srv.reset([
        tool_call("read_file", {"path": "/etc/passwd"}), echo_tool_result,
        tool_call("write_file", {"path": "planted.txt", "content": "x"}), echo_tool_result,
    ] * 40)
    attempts = [
        (graph, {"workspace": workspace}, None)
        for graph in GRAPHS for workspace in ("/", "..", str(outside), "link-out")
    ]
    attempts.append(("agent", None, {"configurable": {"workspace": "/", "model": MODEL}}))  # the other way in
    for graph, context, config in attempts:
        context = context and {**context, "model": MODEL}
        result = await run(url, graph, "Read /etc/passwd and save a file", context=context, config=config)
        got = (context or config["configurable"])["workspace"]
        expected = f"workspace: a client may only narrow the server's workspace {root} (got {got!r})"
        assert error_of(result) == expected, (graph, context, config, result)
    assert srv.requests == [], "a model was called although the context widens the workspace"
    assert not (outside / "planted.txt").exists() and not os.path.exists("/planted.txt")


async def test_a_missing_workspace_is_refused_as_in_the_cli(dev_server, tmp_path):
    url, srv = dev_server
    srv.reset([tool_call("list_files", {"path": "."}), echo_tool_result] * 4)
    root = os.path.realpath(tmp_path)
    result = await run(url, "agent", "List the files", context={"model": MODEL, "workspace": "/nonexistent"})
    assert error_of(result) == f"workspace: a client may only narrow the server's workspace {root} (got '/nonexistent')"
    result = await run(url, "planner", "List the files", context={"model": MODEL, "workspace": "missing"})
    assert error_of(result) == f"workspace: 'missing' does not exist in the server's workspace {root}"
    (tmp_path / "file.txt").write_text("not a folder")
    result = await run(url, "agent", "List the files", context={"model": MODEL, "workspace": "file.txt"})
    assert error_of(result) == "workspace: 'file.txt' is not a folder"
    assert srv.requests == []


async def test_a_client_cannot_open_the_private_network(dev_server, loopback_page):  # noqa: F811
    url, srv = dev_server
    page, hits = loopback_page
    plan = {"steps": [{"id": "s1", "tool": "browse_url", "args": {"url": page}}]}
    for graph in ("agent", "planner"):
        srv.reset([tool_call("submit_plan", plan) if graph == "planner" else tool_call("browse_url", {"url": page}),
                   echo_tool_result])
        result = await run(url, graph, "Read the page", context={"model": MODEL, "allow_private_network": True})
        assert error_of(result) == (
            "allow_private_network: a client may not turn on what the server has off (got True)"
        ), result
    assert hits == [], "the loopback page was fetched"
    assert srv.requests == []


async def test_a_client_cannot_raise_the_write_cap_or_the_budget(dev_server, tmp_path):
    url, srv = dev_server
    srv.reset([tool_call("write_file", {"path": "big.txt", "content": "x" * 20_000_000}), echo_tool_result])
    result = await run(url, "agent", "Write a big file", context={"model": MODEL, "max_write_bytes": 1_000_000_000})
    assert error_of(result) == "max_write_bytes: a client may only lower the server's limit 10000000 (got 1000000000)"
    result = await run(url, "fleet", "Split it up", context={"model": MODEL, "max_tool_calls": 10_000})
    assert error_of(result) == "max_tool_calls: a client may only lower the server's limit 20 (got 10000)"
    assert srv.requests == [] and not (tmp_path / "big.txt").exists()


async def test_a_folder_inside_the_servers_workspace_narrows_it(dev_server, tmp_path):
    url, srv = dev_server
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "note.txt").write_text("THE NOTE")
    (tmp_path / "top.txt").write_text("TOP OF THE SERVER'S WORKSPACE")
    for workspace in ("sub", str(tmp_path / "sub")):
        srv.reset([tool_call("read_file", {"path": "note.txt"}), echo_tool_result])
        result = await run(url, "agent", "Read note.txt", context={"model": MODEL, "workspace": workspace})
        assert result.get("answer") == "THE NOTE", result
        srv.reset([tool_call("read_file", {"path": "../top.txt"}), echo_tool_result])
        result = await run(url, "agent", "Read ../top.txt", context={"model": MODEL, "workspace": workspace})
        assert "Refused" in result.get("answer", "") and "TOP OF" not in result.get("answer", ""), result
    plan = {"steps": [{"id": "s1", "tool": "read_file", "args": {"path": "note.txt"}}]}
    srv.reset([tool_call("submit_plan", plan), lambda req: text("planned: " + str(req["messages"][-1]["content"]))])
    result = await run(url, "planner", "Read note.txt", context={"model": MODEL, "workspace": "sub",
                                                                  "allow_private_network": False, "max_tool_calls": 5})
    assert result.get("status") == "done" and result["step_results"]["s1"]["output"] == "THE NOTE", result
