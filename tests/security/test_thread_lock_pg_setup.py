"""Attack: several processes open the Postgres checkpointer of a new database at once.

Before: each ran the saver's migrations at the same time and most of them failed with
``duplicate key ... checkpoint_migrations`` (7 of 12 processes in 4 rounds when this was
written), so the first runs of a fresh deployment could end with an error. Now the
migrations run one process at a time (a polled advisory lock in ``sessions.py``)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import fresh_database

pytestmark = pytest.mark.e2e

OPEN = """
import asyncio, sys
from smart_agent.sessions.store import open_checkpointer

async def main():
    async with open_checkpointer(url=sys.argv[1]) as saver:
        await saver.aget_tuple({"configurable": {"thread_id": "t"}})

asyncio.run(main())
"""
ROUNDS, PROCESSES = 3, 3


def test_concurrent_first_opens_of_a_new_database_all_succeed(pg_url):
    failures = []
    for _ in range(ROUNDS):
        url = fresh_database(pg_url, "fresh")
        procs = [subprocess.Popen([sys.executable, "-c", OPEN, url], stderr=subprocess.PIPE, text=True)
                 for _ in range(PROCESSES)]
        for proc in procs:
            err = proc.communicate(timeout=120)[1]
            if proc.returncode:
                failures.append(err.strip().splitlines()[-1])
    assert failures == []
