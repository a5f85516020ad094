"""Attack: several processes open the Postgres checkpointer of a new database at once.

Before: each ran the saver's migrations at the same time and most of them failed with
``duplicate key ... checkpoint_migrations`` (7 of 12 processes in 4 rounds when this was
written), so the first runs of a fresh deployment could end with an error. Now the
migrations run one process at a time (a polled advisory lock in ``sessions.py``)."""

from __future__ import annotations

import subprocess
import sys
import uuid

import psycopg
import pytest

pytestmark = pytest.mark.e2e

OPEN = """
import asyncio, sys
from smart_agent.sessions import open_checkpointer

async def main():
    async with open_checkpointer(url=sys.argv[1]) as saver:
        await saver.aget_tuple({"configurable": {"thread_id": "t"}})

asyncio.run(main())
"""
ROUNDS, PROCESSES = 3, 3


def test_concurrent_first_opens_of_a_new_database_all_succeed(pg_url):
    failures = []
    for _ in range(ROUNDS):
        name = f"fresh_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        url = pg_url.replace("/postgres?", f"/{name}?", 1)
        assert url != pg_url
        procs = [subprocess.Popen([sys.executable, "-c", OPEN, url], stderr=subprocess.PIPE, text=True)
                 for _ in range(PROCESSES)]
        for proc in procs:
            err = proc.communicate(timeout=120)[1]
            if proc.returncode:
                failures.append(err.strip().splitlines()[-1])
    assert failures == []
