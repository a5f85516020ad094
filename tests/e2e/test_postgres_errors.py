"""Postgres backend set-up problems, each one line from the CLI (a real PostgreSQL 16 with pgvector,
pgserver): a bad pool size or an unreachable database, an embedding model the Postgres store
cannot index with, a role that may not create the pgvector extension; and a run with memory off
needing no pgvector at all."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from conftest import cli_env, files_under, fresh_database, run_cli

from smart_agent.testing.scripted_server import text

pytestmark = pytest.mark.e2e


def test_a_bad_pool_size_or_an_unreachable_database_is_one_line(scripted_server, workspace, pg_url, tmp_path):
    srv = scripted_server([])
    env = cli_env(srv, SMART_AGENT_DB=fresh_database(pg_url), SMART_AGENT_DB_POOL_SIZE="0")
    res = run_cli(["run", "hi", "--workspace", str(workspace)], env=env)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "smart-agent: SMART_AGENT_DB_POOL_SIZE must be between 1 and 1000, got '0'"
    ]
    missing = f"postgresql://postgres:@/postgres?host={tmp_path / 'no-server-here'}"
    res = run_cli(["run", "hi", "--workspace", str(workspace), "--db", missing], env=cli_env(srv))
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert lines[0].startswith("smart-agent: DatabaseUnavailable: cannot connect to the Postgres database")
    assert srv.requests == []  # nothing ran


def test_another_embedding_model_on_postgres_is_one_line_not_ignored(scripted_server, workspace, pg_url, tmp_path):
    """The Postgres store's index embeds with the local model (a vector(384) column set up once):
    a run asking for another model used to run on the local one without a word."""
    url = fresh_database(pg_url)
    srv = scripted_server(responder=lambda req: text("ok"))
    home = tmp_path / "agent-home"
    env = cli_env(srv, SMART_AGENT_DB=url, SMART_AGENT_HOME=home, SMART_AGENT_MEMORY="true")
    said = (
        "smart-agent: embedding model 'openai:text-embedding-3-small' (--embedding-model / "
        "SMART_AGENT_EMBEDDING_MODEL): memory on Postgres (SMART_AGENT_DB) embeds with the local model only: "
        "use 'local' (or run with --no-memory)"
    )
    flag = ["--embedding-model", "openai:text-embedding-3-small"]
    res = run_cli(["run", "hi", "--workspace", str(workspace), *flag], env=env, timeout=240)
    assert (res.returncode, res.stderr.strip().splitlines()) == (2, [said])
    from_env = {**env, "SMART_AGENT_EMBEDDING_MODEL": "openai:text-embedding-3-small"}
    res = run_cli(["memory", "search", "anything", "--json"], env=from_env, timeout=240)
    assert (res.returncode, res.stderr.strip().splitlines()) == (2, [said])
    assert srv.requests == []  # nothing ran
    res = run_cli(["run", "hi", "--workspace", str(workspace), "--no-memory", *flag], env=env, timeout=240)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr
    assert len(srv.requests) == 1 and files_under(home) == []


def test_a_run_with_memory_off_needs_no_pgvector_and_a_later_one_with_memory_adds_it(
    scripted_server, workspace, pg_url
):
    """--no-memory opens the store without a vector index (a server without pgvector serves such
    runs); the first run with memory on then adds the vector table to the same database."""
    url = fresh_database(pg_url)
    srv = scripted_server(responder=lambda req: text("ok"))
    env = cli_env(srv, SMART_AGENT_DB=url, SMART_AGENT_MEMORY="true")

    def vector_tables() -> list[tuple[str | None, ...]]:
        with psycopg.connect(url) as conn:
            return conn.execute(
                "SELECT to_regclass('store')::text, to_regclass('store_vectors')::text, "
                "(SELECT extname FROM pg_extension WHERE extname = 'vector')"
            ).fetchall()

    res = run_cli(["run", "Remember that I like tea", "--thread", "m", "--workspace", str(workspace), "--no-memory"],
                  env=env, timeout=240)
    assert res.returncode == 0, res.stderr
    assert vector_tables() == [("store", None, None)]
    res = run_cli(["run", "Remember that I like tea", "--thread", "m", "--workspace", str(workspace)], env=env,
                  timeout=240)
    assert res.returncode == 0, res.stderr
    assert vector_tables() == [("store", "store_vectors", "vector")]
    with psycopg.connect(url) as conn:
        (count,) = conn.execute("SELECT count(*) FROM store_vectors WHERE prefix = 'memories.default'").fetchone()
    assert count == 1


def test_a_database_that_cannot_hold_the_tables_is_one_line(scripted_server, workspace, pg_url):
    """A role that may not create the pgvector extension (not a superuser): psycopg's error spans
    lines (DETAIL, HINT, CONTEXT), and the CLI printed all of them."""
    url = fresh_database(pg_url)
    role = f"r_{uuid.uuid4().hex[:8]}"
    database = url.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT ALL ON DATABASE {database} TO {role}")
        conn.execute(f"GRANT ALL ON SCHEMA public TO {role}")
    limited = url.replace("postgres:@", f"{role}:@", 1)
    assert limited != url
    srv = scripted_server([])
    env = cli_env(srv, SMART_AGENT_MEMORY="true")  # memory's vector index needs the extension
    res = run_cli(["run", "hi", "--workspace", str(workspace), "--db", limited], env=env, timeout=240)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert lines[0].startswith(
        "smart-agent: DatabaseUnavailable: cannot set up the tables in the database of SMART_AGENT_DB: "
        "InsufficientPrivilege: permission denied to create extension \"vector\""
    ), lines[0]
    assert srv.requests == []
