"""Where the CLI's runs keep their data: ``--db URL`` (or ``$SMART_AGENT_DB``) selects the
sessions database; with ``postgresql://...`` the threads, the memory store (pgvector) and
the tool-output archive are all on that database (``sessions.open_backends``)."""

from __future__ import annotations

import argparse
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import settings

if TYPE_CHECKING:  # pragma: no cover
    from ..sessions.store import Backends

__all__ = [
    "add_db_arg", "add_durability_arg", "check_data_folders", "check_run_embeddings", "database_problem",
    "open_run_backends", "use_db_arg",
]


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


def use_db_arg(args: argparse.Namespace, *, check: bool = True) -> None:
    """``--db`` given: this process uses it wherever ``$SMART_AGENT_DB`` counts (runs, thread locks);
    ``--durability`` likewise for ``$SMART_AGENT_DURABILITY``, which a command that runs a graph
    checks now (a bad value: one line before anything runs). The database of a command that
    has ``--db`` is checked now too (:func:`database_problem`; ``check=False``: not, for ``doctor``)."""
    url = getattr(args, "db", None)
    if url is not None:
        if not url.strip():
            raise ValueError("--db: give a SQLite file or a postgresql:// URL")
        settings.use_database(url.strip())
    if check and hasattr(args, "db"):
        problem = database_problem(settings.database_url())
        if problem:
            raise ValueError(f"{'--db' if url is not None else 'SMART_AGENT_DB'}: {problem}")
    if hasattr(args, "durability"):
        if args.durability is not None:
            settings.use_durability(args.durability)
        settings.durability()


def database_problem(url: str | None) -> str | None:
    """Why ``url`` cannot be the sessions database (None: it can, or it is unset: the data
    folder's ``sessions.sqlite``). A SQLite file must be in a folder that exists (the CLI creates
    only its own data folder), and a URL must be Postgres: another scheme (``mysql://``) is not
    taken for a file name."""
    from ..sessions.store import is_postgres

    if url is None or is_postgres(url):
        return None
    if _SCHEME.match(url):
        return (
            f"{url.split(':', 1)[0]!r} databases are not supported: give a SQLite file path or "
            "postgresql://user:password@host/db (postgres:// too)"
        )
    path = Path(url)
    if path.is_dir():
        return f"{url!r} is a folder: give a SQLite file path (e.g. {str(path / 'sessions.sqlite')!r})"
    if not path.parent.is_dir():
        return f"the folder of the SQLite file {url!r} does not exist ({str(path.parent)!r})"
    return None


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def check_data_folders() -> None:
    """``$SMART_AGENT_HOME`` (or ``./.smart-agent``) must be a folder or a path one can be made
    at, and ``$SMART_AGENT_PLUGINS`` (when set) an existing folder: else one line naming the
    variable (``ValueError``), not a raw ``NotADirectoryError`` later, nor plugins silently
    missing."""
    home = settings.data_home()
    for part in [home, *home.absolute().parents]:
        if part.exists():
            if not part.is_dir():
                where = "" if part == home else f" ({str(part)!r} is a file)"
                raise ValueError(f"the data folder {str(home)!r} (SMART_AGENT_HOME): not a folder{where}")
            break
    plugins = settings.plugins_folder()
    if plugins is not None and not plugins.is_dir():
        why = "not a folder" if plugins.exists() else "no such folder"
        raise ValueError(f"SMART_AGENT_PLUGINS {str(plugins)!r}: {why} (plugins load from a folder of *.py files)")


def check_run_embeddings(ctx: Any) -> None:
    """A run on Postgres with memory on embeds with the local model (``open_run_backends`` gives the
    store that index): another ``embedding_model`` is one line before anything runs, not ignored."""
    from ..memory.service import check_postgres_embeddings, memory_enabled
    from ..sessions.store import is_postgres

    if is_postgres(settings.database_url()) and memory_enabled(ctx):
        check_postgres_embeddings(getattr(ctx, "embedding_model", None))


@asynccontextmanager
async def open_run_backends(ctx: Any = None) -> AsyncIterator[Backends]:
    """``sessions.open_backends`` for a run: on Postgres the store gets the memory's vector index
    when the run's memory is on (``ctx``'s ``memory`` field, else ``$SMART_AGENT_MEMORY``), so a
    run with memory off works on a server without pgvector."""
    from ..memory.backend import local_index
    from ..memory.service import memory_enabled
    from ..sessions.store import open_backends

    async with open_backends(index=local_index() if memory_enabled(ctx) else None) as backends:
        yield backends
