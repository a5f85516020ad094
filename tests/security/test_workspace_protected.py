"""Attack: a scripted model (real langchain-openai client over HTTP) tries to plant code
where smart-agent or git would run it - the data folder's plugins, .git hooks and config -
and to overwrite the sessions database. The workspace is the current folder and holds
the default data home ``./.smart-agent``, the set-up where those writes used to land."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_env, openai_model, run_cli, run_graph
from tool_support import function_of

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.testing.scripted_server import text, tool_calls
from smart_agent.tools.files import list_files, read_file, write_file
from smart_agent.tools.guards import ToolError

# The functions under the tools, called directly (the tools node injects the runtime the same way).
list_files_fn = function_of(list_files)
read_file_fn = function_of(read_file)
write_file_fn = function_of(write_file)

TARGETS = [".smart-agent/plugins/evil.py", ".git/hooks/pre-commit", ".git/config", ".smart-agent/sessions.sqlite",
           ".GIT/hooks/post-checkout", "sub/.git/config", "sub/.Smart-Agent/plugins/x.py"]
CONFIG = "[core]\n\trepositoryformatversion = 0\n"
SESSIONS = "SQLite format 3\n(pretend sessions)"


def evil_plugin(marker: Path) -> str:
    return (
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('plugin code ran')\n"
        "from langchain_core.tools import tool\n"
        "@tool\ndef evil(x: str) -> str:\n    '''evil'''\n    return x\n"
        "TOOLS = [evil]\n"
    )


@pytest.fixture
def cwd_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace that is also the current folder and holds the default data home."""
    ws = tmp_path / "project"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text(CONFIG)
    (ws / ".smart-agent").mkdir()
    (ws / ".smart-agent" / "sessions.sqlite").write_text(SESSIONS)
    monkeypatch.chdir(ws)
    monkeypatch.delenv("SMART_AGENT_HOME")  # the default: ./.smart-agent
    monkeypatch.delenv("SMART_AGENT_PLUGINS", raising=False)
    monkeypatch.delenv("SMART_AGENT_WORKSPACE", raising=False)
    return ws


def assert_untouched(ws: Path) -> None:
    assert not (ws / ".smart-agent" / "plugins").exists()
    assert sorted(p.name for p in (ws / ".git" / "hooks").iterdir()) == []
    assert (ws / ".git" / "config").read_text() == CONFIG
    assert (ws / ".smart-agent" / "sessions.sqlite").read_text() == SESSIONS
    assert not (ws / ".GIT").exists() and not (ws / "sub").exists()


@pytest.mark.e2e
async def test_model_cannot_plant_plugins_hooks_or_git_config(scripted_server, cwd_workspace: Path) -> None:
    ws = cwd_workspace
    marker = ws.parent / "PLUGIN_RAN"
    payload = {
        ".smart-agent/plugins/evil.py": evil_plugin(marker),
        ".git/config": "[core]\n\tfsmonitor = touch pwned\n",
    }
    calls = [("write_file", {"path": p, "content": payload.get(p, "#!/bin/sh\ntouch pwned\n")}) for p in TARGETS]
    calls += [
        ("read_file", {"path": ".git/config"}),
        ("read_file", {"path": str(ws / ".smart-agent" / "sessions.sqlite")}),
    ]
    srv = scripted_server([tool_calls(calls), text("done")])
    final = await run_graph(build_agent_graph(model=openai_model(srv)), "plant it",
                            Context(workspace=str(ws), memory=False, max_tool_calls=20))

    assert final["answer"] == "done"
    results = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert len(results) == len(calls)
    for result in results:  # every call came back to the model as a refusal
        assert "protected folder" in result["content"], result["content"]
    assert_untouched(ws)

    # the next `smart-agent tools` started in that folder runs no plugin code
    res = run_cli(["tools", "--json"], env={k: v for k, v in cli_env().items() if k != "SMART_AGENT_HOME"}, cwd=ws)
    assert res.returncode == 0, res.stderr
    assert "evil" not in [t["name"] for t in json.loads(res.stdout)] and not marker.exists()


@pytest.mark.e2e
def test_planted_data_home_plugin_is_not_loaded_but_a_configured_folder_is(cwd_workspace: Path, tmp_path: Path) -> None:
    # A plugin file that got into ./.smart-agent/plugins some other way (a cloned repository,
    # an older version) is not executed: folder plugins load only from $SMART_AGENT_PLUGINS.
    ws = cwd_workspace
    marker = tmp_path / "PLANTED_RAN"
    (ws / ".smart-agent" / "plugins").mkdir()
    (ws / ".smart-agent" / "plugins" / "evil.py").write_text(evil_plugin(marker))
    env = {k: v for k, v in cli_env().items() if k not in ("SMART_AGENT_HOME", "SMART_AGENT_PLUGINS")}
    res = run_cli(["tools", "--json"], env=env, cwd=ws)
    assert res.returncode == 0, res.stderr
    assert "evil" not in [t["name"] for t in json.loads(res.stdout)] and not marker.exists()

    chosen = tmp_path / "my-plugins"
    chosen.mkdir()
    (chosen / "evil.py").write_text(evil_plugin(marker))
    res = run_cli(["tools", "--json"], env={**env, "SMART_AGENT_PLUGINS": str(chosen)}, cwd=ws)
    assert res.returncode == 0, res.stderr
    assert "evil" in [t["name"] for t in json.loads(res.stdout)] and marker.exists()


@pytest.mark.unit
def test_configured_plugins_folder_and_custom_data_home_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / "tools-dir").mkdir(parents=True)
    (ws / "state").mkdir()
    (ws / "state" / "sessions.sqlite").write_text(SESSIONS)
    monkeypatch.setenv("SMART_AGENT_PLUGINS", str(ws / "tools-dir"))
    monkeypatch.setenv("SMART_AGENT_HOME", str(ws / "state"))
    rt = Context(workspace=str(ws), memory=False)
    runtime = type("R", (), {"context": rt})()
    for path in ["tools-dir/evil.py", "./tools-dir/sub/evil.py", "state/sessions.sqlite", str(ws / "state" / "x")]:
        with pytest.raises(ToolError, match="protected folder"):
            write_file_fn(path, "x", runtime=runtime)
    with pytest.raises(ToolError, match="protected folder"):
        read_file_fn("state/sessions.sqlite", runtime=runtime)
    with pytest.raises(ToolError, match="protected folder"):
        list_files_fn("tools-dir", runtime=runtime)
    assert [p.name for p in (ws / "tools-dir").iterdir()] == []
    assert (ws / "state" / "sessions.sqlite").read_text() == SESSIONS
    (ws / "notes.txt").write_text("n")
    (ws / ".git").mkdir()
    assert list_files_fn(".", runtime=runtime) == "notes.txt"  # protected folders are hidden
