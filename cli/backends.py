"""Where the CLI's runs keep their data: ``--db URL`` (or ``$SMART_AGENT_DB``) selects the
sessions database; with ``postgresql://...`` the threads, the memory store (pgvector) and
the tool-output archive are all on that database (``sessions.open_backends``)."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .. import settings

if TYPE_CHECKING:  # pragma: no cover
    from ..sessions import Backends

__all__ = ["add_db_arg", "add_durability_arg", "check_run_embeddings", "open_run_backends", "use_db_arg"]


def add_db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="URL",
        help="sessions database: a SQLite file or postgresql://... (sessions, memory and archive on Postgres); "
        "default $SMART_AGENT_DB, else $SMART_AGENT_HOME/sessions.sqlite",
    )


def add_durability_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--durability",
        choices=settings.DURABILITY_MODES,
        help="when the run's checkpoints are written: sync (default: each step before the next starts, so a killed "
        "run resumes without repeating a finished step), async (while the next step runs), exit (only when the run "
        "ends or pauses: the smallest database, but a killed run starts its turn again); default "
        "$SMART_AGENT_DURABILITY, else sync",
    )


def use_db_arg(args: argparse.Namespace) -> None:
    """``--db`` given: this process uses it wherever ``$SMART_AGENT_DB`` counts (runs, thread locks);
    ``--durability`` likewise for ``$SMART_AGENT_DURABILITY``, which a command that runs a graph
    checks now (a bad value: one line before anything runs)."""
    url = getattr(args, "db", None)
    if url is not None:
        if not url.strip():
            raise ValueError("--db: give a SQLite file or a postgresql:// URL")
        settings.use_database(url.strip())
    if hasattr(args, "durability"):
        if args.durability is not None:
            settings.use_durability(args.durability)
        settings.durability()


def check_run_embeddings(ctx: Any) -> None:
    """A run on Postgres with memory on embeds with the local model (``open_run_backends`` gives the
    store that index): another ``embedding_model`` is one line before anything runs, not ignored."""
    from ..memory.service import check_postgres_embeddings, memory_enabled
    from ..sessions import is_postgres

    if is_postgres(settings.database_url()) and memory_enabled(ctx):
        check_postgres_embeddings(getattr(ctx, "embedding_model", None))


@asynccontextmanager
async def open_run_backends(ctx: Any = None) -> AsyncIterator[Backends]:
    """``sessions.open_backends`` for a run: on Postgres the store gets the memory's vector index
    when the run's memory is on (``ctx``'s ``memory`` field, else ``$SMART_AGENT_MEMORY``), so a
    run with memory off works on a server without pgvector."""
    from ..memory.backend import local_index
    from ..memory.service import memory_enabled
    from ..sessions import open_backends

    async with open_backends(index=local_index() if memory_enabled(ctx) else None) as backends:
        yield backends
