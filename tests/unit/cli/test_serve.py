"""``smart-agent serve``'s checks before anything starts (one line, exit 2) and what it hands the
engine (``langgraph_api.cli.run_server``, replaced here by a recorder): the runtime, the store,
the processes. The replicas themselves run in tests/e2e/test_serve_replicas.py."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import pytest

from smart_agent.cli import main
from smart_agent.cli import serve as serve_cli

PG = "postgresql://u:secret@db.example/agents"
REDIS = "redis://cache.example:6379/0"


def one_line_error(capsys, code: int = 2) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip()


def call(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return int(exc.code or 0)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--port", "0"], "--port: must be from 1 to 65535 (got 0)"),
        (["--port", "http"], "--port: must be a whole number"),
        (["--workers", "0"], "--workers: must be from 1 to 64"),
        (["--jobs", "-3"], "--jobs: must be from 1 to 1000"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(argv, says, capsys):
    assert call(["serve", *argv]) == 2
    assert says in one_line_error(capsys)


@pytest.mark.parametrize(
    "db, redis, argv, says",
    [
        (PG, None, [], "SMART_AGENT_DB is a Postgres database but REDIS_URI is not set"),
        (None, REDIS, [], "REDIS_URI is set but SMART_AGENT_DB is not a Postgres database"),
        (PG, "http://cache:6379", [], "REDIS_URI must start with redis://, rediss://, unix://"),
        (None, None, ["--workers", "2"], "--workers above 1 needs SMART_AGENT_DB=postgresql://... and REDIS_URI"),
    ],
)
def test_backends_that_do_not_go_together_are_one_line_and_exit_2(db, redis, argv, says, monkeypatch, capsys):
    """Checked before any connection: the hosts here do not exist, and nothing is started."""
    for name, value in (("SMART_AGENT_DB", db), ("REDIS_URI", redis)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(serve_cli, "run", lambda *a: pytest.fail("the server was started"))
    assert call(["serve", *argv]) == 2
    line = one_line_error(capsys)
    assert says in line and "secret" not in line


def test_a_bad_jobs_variable_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("N_JOBS_PER_WORKER", "many")
    assert call(["serve"]) == 2
    assert "N_JOBS_PER_WORKER must be a whole number" in one_line_error(capsys)


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"graphs": {}}', "no graphs"),
        ('{"graphs": {"agent": "x.js:graph"}, "node_version": "20"}', "JavaScript graphs"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_it(content, says, tmp_path, capsys):
    path = tmp_path / "langgraph.json"
    if content is not None:
        path.write_text(content)
    assert call(["serve", "--config", str(path)]) == 2
    line = one_line_error(capsys)
    assert says.lower() in line.lower() and str(path) in line, line


def test_config_paths_are_made_absolute_from_the_config_folder(tmp_path):
    """The server resolves ``./x.py:name`` from its working folder: serve anchors them at the
    config's folder, so it runs from anywhere; module paths stay as they are."""
    (tmp_path / "langgraph.json").write_text(json.dumps({
        "dependencies": ["."],
        "graphs": {"mine": "./agents/graph.py:graph", "agent": "smart_agent.graphs.served:agent",
                   "other": {"path": "../other.py:g", "description": "d"}},
        "store": {"index": {"embed": "./embed.py:embed", "dims": 8, "fields": ["text"]}},
        "auth": {"path": "./auth.py:auth"},
        "env": ".env",
    }))
    config = serve_cli.load_config(tmp_path / "langgraph.json")
    assert config["graphs"]["mine"] == str(tmp_path / "agents/graph.py:graph")
    assert config["graphs"]["agent"] == "smart_agent.graphs.served:agent"
    assert config["graphs"]["other"] == {"path": str(tmp_path.parent / "other.py:g"), "description": "d"}
    assert config["store"]["index"]["embed"] == str(tmp_path / "embed.py:embed")
    assert config["auth"]["path"] == str(tmp_path / "auth.py:auth")
    assert config["env"] == str(tmp_path / ".env")


def test_the_default_config_is_smart_agents_own_outside_a_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plan = serve_cli.plan_serve(argparse.Namespace(config=None, workers=1, jobs=None))
    assert plan.graphs == ["agent", "dual", "fleet", "planner"] and not plan.shared
    assert plan.config["store"]["index"]["embed"].endswith("/memory/langgraph_embed.py:embed")
    assert Path(plan.config["store"]["index"]["embed"].rsplit(":", 1)[0]).is_file()


class Recorder:
    def __init__(self, exit_code: int | None = None) -> None:
        self.calls: list[tuple[tuple, dict]] = []
        self.exit_code = exit_code

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        logging.getLogger("langgraph_api.cli").info(
            "\n\nThis in-memory server is designed for development and testing.\n"
        )
        if self.exit_code is not None:
            raise SystemExit(self.exit_code)


@pytest.fixture
def recorder(monkeypatch):
    import langgraph_api.cli

    rec = Recorder()
    monkeypatch.setattr(langgraph_api.cli, "run_server", rec)
    monkeypatch.setattr(sys, "path", list(sys.path))  # serve appends langgraph.json's dependencies
    monkeypatch.delenv("LG_RUNTIME_PG_AUTO_MIGRATE", raising=False)
    return rec


def test_on_postgres_and_redis_the_engine_gets_the_pg_runtime_and_the_memory_store(
    recorder, monkeypatch, caplog
):
    monkeypatch.setenv("SMART_AGENT_DB", PG)
    monkeypatch.setenv("REDIS_URI", REDIS)
    plan = serve_cli.plan_serve(argparse.Namespace(config=None, workers=3, jobs=7))
    caplog.set_level(logging.INFO, logger="langgraph_api.cli")
    assert serve_cli.run(plan, "0.0.0.0", 8123) == 0
    ((args, kwargs),) = recorder.calls
    assert args[:3] == ("0.0.0.0", 8123, False) and sorted(args[3]) == ["agent", "dual", "fleet", "planner"]
    assert kwargs["runtime_edition"] == "pg"
    assert kwargs["__database_uri__"] == PG and kwargs["__redis_uri__"] == REDIS
    assert kwargs["workers"] == 3 and kwargs["n_jobs_per_worker"] == 7
    assert kwargs["store"]["path"] == "smart_agent.memory.server_store.store"
    assert os.environ["LG_RUNTIME_PG_AUTO_MIGRATE"] == "false", "the tables were migrated before, under a lock"
    banner = [r.getMessage() for r in caplog.records if r.name == "langgraph_api.cli"]
    assert any("Postgres + Redis" in m and "3 process(es), 7 background runs each" in m for m in banner), banner
    assert not any("in-memory server is designed" in m for m in banner)


def test_without_them_the_engine_runs_in_memory_with_langgraph_jsons_store(recorder, monkeypatch):
    monkeypatch.setenv("N_JOBS_PER_WORKER", "5")
    plan = serve_cli.plan_serve(argparse.Namespace(config=None, workers=1, jobs=None))
    assert serve_cli.run(plan, "127.0.0.1", 2024) == 0
    ((_, kwargs),) = recorder.calls
    assert "runtime_edition" not in kwargs and "workers" not in kwargs and "__database_uri__" not in kwargs
    assert kwargs["n_jobs_per_worker"] == 5
    assert kwargs["store"]["index"]["dims"] == 384 and "path" not in kwargs["store"]


def test_a_server_that_cannot_start_is_exit_1_not_uvicorns_3(monkeypatch, capsys):
    import langgraph_api.cli

    monkeypatch.setattr(langgraph_api.cli, "run_server", Recorder(exit_code=3))
    monkeypatch.setattr(sys, "path", list(sys.path))
    plan = serve_cli.plan_serve(argparse.Namespace(config=None, workers=1, jobs=None))
    assert serve_cli.run(plan, "127.0.0.1", 2024) == 1
    assert "could not start (exit 3" in capsys.readouterr().err


def test_the_server_store_has_the_memorys_index_unless_memory_is_off(monkeypatch):
    from smart_agent.memory.server_store import server_index

    monkeypatch.delenv("SMART_AGENT_MEMORY", raising=False)
    index = server_index()
    assert index is not None and index["dims"] == 384 and index["fields"] == ["text"]
    monkeypatch.setenv("SMART_AGENT_MEMORY", "false")
    assert server_index() is None


def test_a_host_that_is_no_address_is_one_line(capsys, monkeypatch):
    import socket

    def no_such_name(*args, **kwargs):  # what the resolver says, without asking one
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    monkeypatch.setattr(serve_cli, "run", lambda *a: pytest.fail("the server was started"))
    assert call(["serve", "--host", "no such host!", "--port", "8123"]) == 2
    assert one_line_error(capsys).startswith("smart-agent: --host 'no such host!': not an address to listen on")
