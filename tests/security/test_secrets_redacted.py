"""Attack: credentials written to files and lines. ``OPENAI_BASE_URL=http://user:password@host/v1``
put the password into every cassette file of ``--record DIR``, and into the error lines
("Could not reach the model service at http://user:password@...") that the CLI prints, that
eval results, reports and trajectories keep, and that ``doctor`` prints; a URL with a password
in a thread (a task, a tool call's arguments, a tool's error) went out whole with ``threads
export``. Now every one of them goes through redact.py: ``user:***@``, key parameters,
credential headers and fields, and the API key's value wherever it appears.

Real CLI processes against the scripted server (``tests/scripted_support``); each check greps
every file the command wrote, as ``grep -r`` would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_env, run_cli

from smart_agent.runs.redact import environment_secrets, redact_headers, redact_text, redact_url, redact_value
from smart_agent.testing.scripted_server import message_text, text, tool_call

PASSWORD = "password"
API_KEY = "sk-test-5ecret-api-key-0123456789"
LEAKS = (PASSWORD, API_KEY, "hunter2pw", "abcdef123456")  # the base URL's password, the key, the task's URL's
TASK_URL = "http://bob:hunter2pw@files.example/report?api_key=abcdef123456&page=2"


def with_password(base_url: str) -> str:
    return base_url.replace("http://", f"http://user:{PASSWORD}@", 1)


def secret_env(base_url: str, **extra: str) -> dict:
    return cli_env(
        OPENAI_BASE_URL=with_password(base_url), OPENAI_API_KEY=API_KEY, SMART_AGENT_MODEL="openai:scripted-model",
        **extra,
    )


def leaks_in(folder: Path) -> list[str]:
    """``grep -r`` for every secret: ``file: secret`` of each hit."""
    hits = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits += [f"{path}: {s}" for s in LEAKS if s.encode() in data]
    return hits


def leaks_of(output: str) -> list[str]:
    return [s for s in LEAKS if s in output]


def model(req):
    """Calls the calculator, then answers; quotes the task's URL back (it is in the request)."""
    results = [m for m in req["messages"] if m["role"] == "tool"]
    user = [message_text(m.get("content")) for m in req["messages"] if m["role"] == "user"][-1]
    if "37*43" not in user:
        return text("ok")
    if not results:
        return tool_call("calculator", {"expression": "37*43"})
    return text(f"37*43 = {message_text(results[-1]['content'])}, and the report is at {TASK_URL}")


# -- the helper ---------------------------------------------------------------------------------
@pytest.mark.unit
def test_urls_headers_and_fields_are_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    assert redact_url("http://user:password@127.0.0.1:8000/v1") == "http://user:***@127.0.0.1:8000/v1"
    assert redact_url("https://ghp_tok3n@github.com/o/r.git") == "https://***@github.com/o/r.git"
    assert redact_url("postgresql://u:p@ss@db:5432/x") == "postgresql://u:***@db:5432/x"  # an unescaped "@"
    assert redact_url("https://h/x?api_key=k1&page=2&sig=abc&X-Amz-Signature=f#access_token=t") == (
        "https://h/x?api_key=***&page=2&sig=***&X-Amz-Signature=***#access_token=***"
    )
    assert redact_url("http://host:8000/v1") == "http://host:8000/v1"  # nothing to hide: unchanged
    said = redact_text(f'cannot reach http://user:password@h/v1 (Authorization: Bearer {API_KEY}; key {API_KEY})')
    assert PASSWORD not in said and API_KEY not in said and "http://user:***@h/v1" in said
    # a URL inside JSON text (a tool call's arguments) and a header written out
    args = json.dumps({"url": "http://u:hunter2pw@x/y"})
    assert "hunter2pw" not in redact_text(json.dumps({"arguments": args}))
    assert redact_text("x-api-key: abc123def") == "x-api-key: ***"
    headers = redact_headers({"Authorization": "Bearer x", "api-key": "k", "Cookie": "s=1", "content-type": "a/b"})
    assert headers == {"Authorization": "***", "api-key": "***", "Cookie": "***", "content-type": "a/b"}
    value = redact_value({"args": {"url": TASK_URL, "password": "pw", "api_key": "k"}, "n": [1, (2, "x")]})
    assert value == {
        "args": {"url": "http://bob:***@files.example/report?api_key=***&page=2", "password": "***", "api_key": "***"},
        "n": [1, [2, "x"]],
    }
    assert API_KEY in environment_secrets()


@pytest.mark.unit
def test_redact_value_walks_any_depth_without_recursion():
    deep: object = "http://u:pw@h"
    for _ in range(100_000):
        deep = [deep]
    out = redact_value(deep)
    for _ in range(100_000):
        out = out[0]
    assert out == "http://u:***@h"


# -- cassettes ------------------------------------------------------------------------------------
@pytest.mark.e2e
def test_a_cassette_recorded_through_a_url_with_a_password_holds_no_secret_and_replays(
    scripted_server, workspace, tmp_path
):
    srv = scripted_server(responder=model)
    cassette = tmp_path / "cassette"
    task = f"What is 37*43? Then fetch {TASK_URL}"
    recorded = run_cli(["run", task, "--json", "--workspace", str(workspace), "--record", str(cassette)],
                       env=secret_env(srv.base_url))
    assert recorded.returncode == 0, recorded.stderr
    assert len(srv.requests) == 2 and sorted(p.name for p in cassette.iterdir()) == ["0001.json", "0002.json"]
    assert leaks_in(cassette) == []
    first = json.loads((cassette / "0001.json").read_text())
    assert first["request"]["url"].startswith("http://user:***@127.0.0.1:")

    # replay: no server, no key; the live requests (which hold the task's URL whole) match the redacted files
    srv.stop()
    replayed = run_cli(
        ["run", task, "--json", "--workspace", str(workspace), "--replay", str(cassette)],
        env=cli_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", SMART_AGENT_MODEL="openai:scripted-model"),
    )
    assert replayed.returncode == 0, replayed.stderr
    out = json.loads(replayed.stdout)
    assert out["answer"].startswith("37*43 = 1591, and the report is at http://bob:***@files.example/")
    assert out["tool_calls"] == json.loads(recorded.stdout)["tool_calls"]


# -- threads export -----------------------------------------------------------------------------
@pytest.mark.e2e
def test_threads_export_show_and_list_hold_no_secret(scripted_server, workspace, tmp_path, isolated_home):
    srv = scripted_server([
        tool_call("browse_url", {"url": TASK_URL}),  # refused (credentials in the URL); the error quotes it
        text(f"I could not open {TASK_URL}"),
    ])
    env = secret_env(srv.base_url, SMART_AGENT_HOME=str(isolated_home))
    res = run_cli(["run", f"Open {TASK_URL}", "--thread", "t1", "--workspace", str(workspace)], env=env)
    assert res.returncode == 0, res.stderr

    exported = run_cli(["threads", "export", "t1"], env=env)
    assert exported.returncode == 0, exported.stderr
    data = json.loads(exported.stdout)
    assert leaks_of(exported.stdout) == []
    assert [m["role"] for m in data["conversation"]] == ["user", "assistant", "tool", "assistant"]
    call = data["conversation"][1]["tool_calls"][0]
    assert call["args"]["url"] == "http://bob:***@files.example/report?api_key=***&page=2"
    for command in (["threads", "show", "t1"], ["threads", "list"], ["threads", "list", "--json"]):
        shown = run_cli(command, env=env)
        assert shown.returncode == 0 and leaks_of(shown.stdout + shown.stderr) == [], command
    assert leaks_of(res.stderr) == []  # the run's event lines (its answer on stdout is the model's, as it said it)


# -- eval -------------------------------------------------------------------------------------------
SUITE = """
name: secrets
cases:
  - id: mult
    task: What is 37*43? Then fetch http://bob:hunter2pw@files.example/report?api_key=abcdef123456&page=2
    expect: {contains: "1591"}
"""


@pytest.mark.e2e
def test_an_eval_output_folder_holds_no_secret(scripted_server, tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    srv = scripted_server(responder=model)
    out = tmp_path / "out"
    res = run_cli(["eval", str(tmp_path / "suite.yaml"), "--out", str(out)], env=secret_env(srv.base_url),
                  timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads((out / "results.json").read_text())["summary"]["passed"] == 1
    assert leaks_in(out) == [] and leaks_of(res.stdout + res.stderr) == []

    # a model service that cannot be reached: the error quoting the base URL is in every file
    down = tmp_path / "down"
    res = run_cli(["eval", str(tmp_path / "suite.yaml"), "--out", str(down), "--json"],
                  env=secret_env("http://127.0.0.1:9/v1", SMART_AGENT_MODEL_MAX_RETRIES="0"), timeout=300)
    assert res.returncode == 0, res.stderr
    error = json.loads((down / "results.json").read_text())["cases"][0]["results"][0]["error"]
    assert "Could not reach the model service" in error and "http://user:***@127.0.0.1:9/v1" in error
    assert leaks_in(down) == [] and leaks_of(res.stdout + res.stderr) == []


# -- doctor and the CLI's error lines -----------------------------------------------------------------
@pytest.mark.e2e
def test_doctor_and_error_lines_hold_no_secret(scripted_server, tmp_path):
    srv = scripted_server(["unused"])
    for base in (srv.base_url, "http://127.0.0.1:9/v1"):  # answering, then unreachable
        for flags in ([], ["--json"]):
            res = run_cli(["doctor", "--model", "openai:scripted-model", "--timeout", "5", *flags],
                          env=secret_env(base, SMART_AGENT_DB=str(tmp_path / "s.db")))
            assert "user:***@127.0.0.1:" in res.stdout, res.stdout
            assert leaks_of(res.stdout + res.stderr) == [], res.stdout

    res = run_cli(["run", "hi"], env=secret_env("http://127.0.0.1:9/v1", SMART_AGENT_MODEL_MAX_RETRIES="0"))
    assert res.returncode == 2 and "Could not reach the model service" in res.stderr
    assert "http://user:***@127.0.0.1:9/v1" in res.stderr and leaks_of(res.stdout + res.stderr) == []
    res = run_cli(["run", "hi", "--json"], env=secret_env("http://127.0.0.1:9/v1", SMART_AGENT_MODEL_MAX_RETRIES="0"))
    assert res.returncode == 2 and leaks_of(res.stdout + res.stderr) == []
