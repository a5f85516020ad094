"""Attack: files, flags and variables handed to the real CLI that are not what they claim.

Each case runs ``smart-agent`` in its own process under a 3 GB address-space limit (a memory
bomb that regressed fails with a MemoryError instead of eating the machine) and a generous
timeout (a FIFO that regressed fails instead of hanging the suite). Before the fixes a FIFO
hung the command forever, ``/dev/zero`` ended in an opaque MemoryError, a 458-byte YAML
"billion laughs" eval suite took gigabytes, and the other inputs were silently taken for
something else. Now every one ends fast with exit 2 and one line on stderr naming the flag,
file or variable, and no request reaches the model.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

from smart_agent.testing.scripted_server import text, tool_call

pytestmark = pytest.mark.e2e  # the CLI in separate processes

ADDRESS_SPACE = 3 * 1024**3
HANG_GUARD_S = 60

# 9**9 values once its aliases are followed (gigabytes), 458 bytes as written.
LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def cli(args: list[str], env: dict, *, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("smart-agent")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smart_agent.cli"]
    return subprocess.run(
        [*cmd, *args], env=env, input=b"", capture_output=True,
        timeout=HANG_GUARD_S, preexec_fn=_limit_memory, cwd=cwd, check=False,
    )


def assert_one_line(res: subprocess.CompletedProcess, *needles: str, srv=None) -> str:
    err = res.stderr.decode(errors="replace")
    assert res.returncode == 2, (res.returncode, err)
    assert "Traceback" not in err and "MemoryError" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    if srv is not None:
        assert srv.requests == [], "nothing may reach the model on bad input"
    return lines[0]


# -- a FIFO and a device where a file is expected ----------------------------------------------
def _file_commands(ws: Path) -> dict[str, tuple[str, list[str], str]]:
    """name -> (file name, argv with {} for the file, what the error line names)."""
    run = ["run", "task", "--workspace", str(ws)]
    return {
        "--output-schema": ("schema.json", [*run, "--output-schema", "{}"], "--output-schema"),
        "--agents": ("team.yaml", [*run, "--agents", "{}"], "agents file"),
        "--mcp-config": ("mcp.json", [*run, "--mcp-config", "{}"], "--mcp-config"),
        "execute": ("plan.json", ["execute", "{}", "--workspace", str(ws)], "plan"),
        "memory import": ("memories.jsonl", ["memory", "import", "{}"], "memory import"),
        "eval": ("suite.yaml", ["eval", "{}"], "eval suite"),
        "eval --compare": ("b.yaml", ["eval", "SUITE", "--compare", "CONFIG", "{}"], "A/B config"),
        "agents validate": ("team.yaml", ["agents", "validate", "{}"], "agents file"),
        "tools --mcp-config": ("mcp.json", ["tools", "--mcp-config", "{}"], "--mcp-config"),
    }


COMMANDS = list(_file_commands(Path("ws")))


def _argv(ws: Path, tmp_path: Path, name: str, target: Path) -> list[str]:
    given = {"{}": target, "SUITE": tmp_path / "ok-suite.yaml", "CONFIG": tmp_path / "ok-config.yaml"}
    given["SUITE"].write_text("cases:\n  - id: a\n    task: hi\n")
    given["CONFIG"].write_text("name: a\n")
    return [str(given.get(a, a)) for a in _file_commands(ws)[name][1]]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_fifo_as_an_input_file_is_refused_without_blocking(scripted_server, workspace, tmp_path, name):
    srv = scripted_server([text("ran anyway")])
    fifo = tmp_path / _file_commands(workspace)[name][0]
    os.mkfifo(fifo)  # no writer ever comes: opening it for reading would wait forever
    res = cli(_argv(workspace, tmp_path, name, fifo), cli_env(srv))
    assert_one_line(res, _file_commands(workspace)[name][2], str(fifo), "a FIFO", srv=srv)


@pytest.mark.parametrize("name", COMMANDS)
def test_dev_zero_as_an_input_file_is_refused_before_reading(scripted_server, workspace, tmp_path, name):
    srv = scripted_server([text("ran anyway")])
    link = tmp_path / _file_commands(workspace)[name][0]
    link.symlink_to("/dev/zero")  # endless bytes: read whole, a MemoryError
    res = cli(_argv(workspace, tmp_path, name, link), cli_env(srv))
    assert_one_line(res, _file_commands(workspace)[name][2], "a device, not a regular file", srv=srv)


def test_dev_zero_on_standard_input_is_read_to_a_bound(scripted_server, workspace):
    srv = scripted_server([text("ran anyway")])
    with open("/dev/zero", "rb") as zero:
        for argv in (["execute", "-", "--workspace", str(workspace)], ["memory", "import", "-"]):
            exe = Path(sys.executable).with_name("smart-agent")
            cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smart_agent.cli"]
            res = subprocess.run([*cmd, *argv], env=cli_env(srv), stdin=zero, capture_output=True,
                                 timeout=HANG_GUARD_S, preexec_fn=_limit_memory, check=False)  # fmt: skip
            assert_one_line(res, "standard input", "larger than", srv=srv)


@pytest.mark.parametrize(
    ("variable", "argv", "needle"),
    [
        ("SMART_AGENT_MCP_CONFIG", ["tools"], "SMART_AGENT_MCP_CONFIG"),
        ("SMART_AGENT_PRICES", ["run", "task", "--max-cost", "1"], "SMART_AGENT_PRICES"),
    ],
)
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_variables_naming_a_device_or_fifo_are_refused(scripted_server, workspace, tmp_path, variable, argv, needle,
                                                       kind):  # fmt: skip
    srv = scripted_server([text("ran anyway")])
    target = tmp_path / "file.json"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    res = cli([*argv, "--workspace", str(workspace)] if argv[0] == "run" else argv,
              cli_env(srv, **{variable: str(target)}))  # fmt: skip
    assert_one_line(res, needle, "a FIFO" if kind == "fifo" else "a device", srv=srv)


# -- YAML alias bombs --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "name", "needle"),
    [(["eval"], "suite.yaml", "suite.yaml"), (["agents", "validate"], "team.yaml", "team.yaml")],
)
def test_a_yaml_alias_bomb_is_refused_without_expanding(scripted_server, tmp_path, argv, name, needle):
    srv = scripted_server([text("ran anyway")])
    bomb = tmp_path / name
    bomb.write_text(LAUGHS)
    assert bomb.stat().st_size < 500
    res = cli([*argv, str(bomb)], cli_env(srv))
    assert_one_line(res, needle, "expands to more than", srv=srv)


# -- flags that were silently taken for something else -----------------------------------------
def test_an_empty_tools_list_is_refused_not_all_tools(scripted_server, workspace):
    srv = scripted_server([text("ran anyway")])
    for value in ("", " , "):
        res = cli(["run", "task", "--workspace", str(workspace), "--tools", value], cli_env(srv))
        assert_one_line(res, "--tools", "no tool name given", srv=srv)


def test_an_empty_thread_id_is_refused_not_a_new_thread(scripted_server, workspace, tmp_path):
    srv = scripted_server([text("ran anyway")])
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"id": "s", "tool": "calculator", "args": {"expression": "1+1"}}]}))
    for argv in (["run", "task", "--workspace", str(workspace)], ["chat"], ["demo"], ["execute", str(plan)],
                 ["resume", "--approve"]):  # fmt: skip
        for value in ("", "  "):
            res = cli([*argv, "--thread", value], cli_env(srv))
            assert_one_line(res, "--thread", "the thread id is empty", srv=srv)


def test_a_database_url_of_another_kind_is_refused_not_made_a_folder(scripted_server, workspace, tmp_path):
    srv = scripted_server([text("ran anyway")])
    res = cli(["run", "task", "--workspace", str(workspace), "--db", "mysql://x"], cli_env(srv), cwd=tmp_path)
    assert_one_line(res, "--db", "'mysql' databases are not supported", "SQLite file", "postgresql://", srv=srv)
    assert not (tmp_path / "mysql:").exists()
    res = cli(["threads", "list"], cli_env(srv, SMART_AGENT_DB="sqlite:///x.db"), cwd=tmp_path)
    assert_one_line(res, "SMART_AGENT_DB", "'sqlite' databases are not supported", srv=srv)
    assert not (tmp_path / "sqlite:").exists()


def test_a_database_file_in_a_missing_folder_is_refused_not_created(scripted_server, workspace, tmp_path):
    srv = scripted_server([text("ran anyway")])
    missing = tmp_path / "no" / "such" / "x.sqlite"
    res = cli(["run", "task", "--workspace", str(workspace), "--db", str(missing)], cli_env(srv))
    assert_one_line(res, "--db", "does not exist", srv=srv)
    assert not (tmp_path / "no").exists()
    res = cli(["run", "task", "--workspace", str(workspace), "--db", str(tmp_path)], cli_env(srv))
    assert_one_line(res, "--db", "is a folder", srv=srv)


def test_the_default_data_folder_is_still_created(scripted_server, workspace, tmp_path):
    srv = scripted_server([text("done")])
    home = tmp_path / "new" / "home"
    res = cli(["run", "task", "--workspace", str(workspace)], cli_env(srv, SMART_AGENT_HOME=str(home)))
    assert res.returncode == 0, res.stderr
    assert (home / "sessions.sqlite").is_file()


def test_a_missing_plugins_folder_is_refused_not_ignored(scripted_server, workspace, tmp_path):
    srv = scripted_server([text("ran anyway")])
    for argv in (["tools"], ["run", "task", "--workspace", str(workspace)]):
        res = cli(argv, cli_env(srv, SMART_AGENT_PLUGINS=str(tmp_path / "no-plugins")))
        assert_one_line(res, "SMART_AGENT_PLUGINS", "no-plugins", "no such folder", srv=srv)


def test_a_data_home_that_is_a_file_is_one_line(scripted_server, workspace, tmp_path):
    srv = scripted_server([text("ran anyway")])
    a_file = tmp_path / "home.txt"
    a_file.write_text("x")
    for home in (a_file, a_file / "below"):
        res = cli(["run", "task", "--workspace", str(workspace)], cli_env(srv, SMART_AGENT_HOME=str(home)))
        line = assert_one_line(res, "SMART_AGENT_HOME", str(home), "not a folder", srv=srv)
        assert "NotADirectoryError" not in line


# -- plan --save takes the run flags that bear on planning -------------------------------------
def test_plan_save_accepts_the_run_flags_no_memory_and_workspace(scripted_server, workspace, tmp_path):
    steps = {"steps": [{"id": "s1", "tool": "calculator", "args": {"expression": "2+3"}}]}
    srv = scripted_server([tool_call("submit_plan", steps), tool_call("submit_plan", steps)])
    target = tmp_path / "plan.json"
    env = cli_env(srv, SMART_AGENT_MEMORY="true")
    res = cli(["plan", "add", "--save", str(target), "--no-memory", "--workspace", str(workspace),
               "--allow-private-network", "--model-timeout", "30", "--model-retries", "0"], env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(target.read_text())["steps"][0]["tool"] == "calculator"
    assert "search_memory" not in json.dumps(srv.requests[0]["messages"])  # memory off: not offered to the plan
    res = cli(["plan", "add", "--save", str(target)], env)
    assert res.returncode == 0, res.stderr
    assert "search_memory" in json.dumps(srv.requests[1]["messages"])  # memory on: it is
    res = cli(["plan", "add", "--workspace", str(tmp_path / "nope")], env)
    assert_one_line(res, "--workspace", "does not exist", srv=None)
    assert len(srv.requests) == 2


# -- eval suite texts --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("nul.yaml", 'cases:\n  - id: a\n    task: "hi \\0 there"\n', "case 'a': task: contains a NUL byte"),
        ("surrogate.yaml", 'cases:\n  - id: a\n    task: "hi \\ud800"\n', "case 'a': task: is not valid UTF-8"),
        ("surrogate.jsonl", json.dumps({"id": "a", "task": ["ok", "\ud800"]}) + "\n",
         "case 'a': task[1]: is not valid UTF-8"),
        ("review.jsonl", json.dumps({"id": "a", "task": "ok", "review": {"answer": "x\u0000"}}) + "\n",
         "case 'a': review.answer: contains a NUL byte"),
        ("judge.yaml", 'cases:\n  - id: a\n    task: t\n    expect: {judge: "rate \\0"}\n',
         "case 'a': expect.judge: contains a NUL byte"),
        ("files.jsonl", json.dumps({"id": "a", "task": "t", "files": {"a.txt": "\udcff"}}) + "\n",
         "case 'a': files.a.txt: is not valid UTF-8"),
    ],
)
def test_eval_suite_texts_the_run_would_refuse_are_refused(scripted_server, tmp_path, name, content, needle):
    srv = scripted_server([text("ran anyway")])
    suite = tmp_path / name
    suite.write_text(content, encoding="utf-8", errors="surrogatepass")
    res = cli(["eval", str(suite), "--out", str(tmp_path / "out")], cli_env(srv))
    assert_one_line(res, needle, srv=srv)
    assert not (tmp_path / "out").exists()


# -- agents file: model ------------------------------------------------------------------------
def test_an_agent_model_that_is_not_provider_model_is_refused(tmp_path):
    team = tmp_path / "team.yaml"
    team.write_text("agents:\n  a:\n    description: d\n    prompt: p\n    model: nonsense\n")
    res = cli(["agents", "validate", str(team)], cli_env())
    assert_one_line(res, "team.yaml", "agent 'a': model:", "'provider:model'", "'nonsense'")
    team.write_text("agents:\n  a:\n    description: d\n    prompt: p\n    model: openai:gpt-4o-mini\n")
    assert cli(["agents", "validate", str(team)], cli_env()).returncode == 0
