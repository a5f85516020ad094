"""Sessions: where threads are kept between processes.

The default is an embedded SQLite checkpointer in ``$SMART_AGENT_HOME`` (default
``./.smart-agent``). Set ``SMART_AGENT_DB=postgresql://...`` to use Postgres for
scale-out (needs ``pip install langgraph-checkpoint-postgres``).
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from langgraph.checkpoint.base import BaseCheckpointSaver


def data_home() -> Path:
    """The data folder: ``$SMART_AGENT_HOME`` or ``./.smart-agent`` (sessions, memory,
    archive, plugins). Not resolved here: that reads the file system, and callers run
    on a server's event loop too."""
    return Path(os.environ.get("SMART_AGENT_HOME") or ".smart-agent").expanduser()


def sessions_path(home: Path | None = None) -> Path:
    return (home or data_home()) / "sessions.sqlite"


@asynccontextmanager
async def open_checkpointer(home: Path | None = None, url: str | None = None) -> AsyncIterator[BaseCheckpointSaver]:
    """Yield an async checkpointer: Postgres for ``postgresql://`` URLs, else SQLite."""
    url = url or os.environ.get("SMART_AGENT_DB")
    if url and url.startswith(("postgresql://", "postgres://")):
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        except ImportError as exc:
            raise RuntimeError(
                "SMART_AGENT_DB selects Postgres, but langgraph-checkpoint-postgres is not installed: "
                "pip install langgraph-checkpoint-postgres"
            ) from exc
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            yield saver
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = Path(url) if url else sessions_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver
