"""``smart-agent doctor`` against the scripted OpenAI-compatible server (its ``GET /models``
lists ``scripted-model``): the model listed, not listed, the server down, no key; the data
folder and the memory's embedding model; and the short model error that points to it."""

from __future__ import annotations

import json
import socket

import pytest
from conftest import cli_env, run_cli

pytestmark = pytest.mark.e2e


def _checks(stdout: str) -> dict[str, dict]:
    out = json.loads(stdout)
    return {c["name"]: c for c in out["checks"]}


def test_doctor_all_ok_with_the_model_listed(scripted_server):
    srv = scripted_server()
    res = run_cli(["doctor"], env=cli_env(srv, SMART_AGENT_MEMORY="true"))
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert f"ok       model server: {srv.base_url.rstrip('/')} answers (1 models)" in lines
    assert "ok       model listed: scripted-model is served" in lines
    assert any(line.startswith("ok       embedding model: local loads offline (384 dimensions)") for line in lines)
    assert any(line.startswith("ok       data folder:") for line in lines)
    assert any(line.startswith("ok       database: SQLite") for line in lines)
    assert "problem" not in res.stdout and lines[-1] == "all checks ok"
    assert srv.requests == []  # it lists the models; it calls none

    res = run_cli(["doctor", "--json"], env=cli_env(srv))
    assert res.returncode == 0
    checks = _checks(res.stdout)
    assert checks["model listed"]["ok"] and checks["memory"]["detail"].startswith("off")


def test_doctor_model_not_listed(scripted_server):
    srv = scripted_server()
    res = run_cli(["doctor", "--model", "openai:other-model"], env=cli_env(srv))
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    problem = next(i for i, line in enumerate(lines) if line.startswith("problem  model listed:"))
    assert "'other-model'" in lines[problem] and "it lists: scripted-model" in lines[problem]
    assert lines[problem + 1].strip().startswith("fix: use --model openai:")
    assert "OPENAI_BASE_URL=http://host:port/v1" in res.stdout  # the full set-up text, here only
    assert lines[-1] == "1 problem(s)"


def test_doctor_server_down_and_no_key():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    env = cli_env(OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY="k", SMART_AGENT_MODEL="openai:m")
    res = run_cli(["doctor", "--json", "--timeout", "2"], env=env)
    assert res.returncode == 1
    checks = _checks(res.stdout)
    assert not checks["model server"]["ok"] and f"127.0.0.1:{port}" in checks["model server"]["detail"]
    assert "OPENAI_BASE_URL" in checks["model server"]["fix"]
    assert "model listed" not in checks and checks["data folder"]["ok"] and checks["database"]["ok"]

    res = run_cli(["doctor", "--json"], env=cli_env(SMART_AGENT_MODEL="openai:m"))
    assert res.returncode == 1
    checks = _checks(res.stdout)
    assert not checks["model key"]["ok"] and "OPENAI_API_KEY" in checks["model key"]["detail"]


def test_doctor_data_folder_not_writable(scripted_server, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = run_cli(["doctor", "--json"], env=cli_env(scripted_server(), SMART_AGENT_HOME=str(blocker / "home")))
    assert res.returncode == 1
    checks = _checks(res.stdout)
    assert not checks["data folder"]["ok"] and "SMART_AGENT_HOME" in checks["data folder"]["fix"]
    assert checks["model listed"]["ok"]


def test_model_error_is_short_and_points_to_doctor(workspace):
    res = run_cli(["run", "hi", "--model", "openai:gpt-4o-mini"], env=cli_env())
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) <= 2, res.stderr
    assert "OPENAI_API_KEY" in res.stderr and "smart-agent doctor" in res.stderr
    assert "LM Studio" not in res.stderr  # the set-up paragraph lives behind `doctor`


def test_doctor_database_on_postgres(scripted_server, pg_url, tmp_path):
    srv = scripted_server()
    res = run_cli(["doctor", "--json", "--db", pg_url], env=cli_env(srv))
    assert res.returncode == 0, res.stdout + res.stderr
    assert _checks(res.stdout)["database"] == {"name": "database", "ok": True, "detail": "Postgres answers", "fix": ""}
    # Memory on Postgres embeds with the local model: another one is a problem before anything loads.
    env = cli_env(srv, SMART_AGENT_MEMORY="true", SMART_AGENT_EMBEDDING_MODEL="openai:text-embedding-3-small")
    res = run_cli(["doctor", "--json", "--db", pg_url], env=env)
    embedding = _checks(res.stdout)["embedding model"]
    assert res.returncode == 1 and not embedding["ok"], res.stdout
    assert "memory on Postgres (SMART_AGENT_DB) embeds with the local model only" in embedding["detail"]
    assert _checks(res.stdout)["database"]["ok"]  # pgserver has pgvector
    down = f"postgresql://postgres:@/postgres?host={tmp_path}"  # no server has its socket there
    res = run_cli(["doctor", "--json", "--db", down], env=cli_env(srv))
    assert res.returncode == 1
    database = _checks(res.stdout)["database"]
    assert not database["ok"] and "SMART_AGENT_DB" in database["fix"]
