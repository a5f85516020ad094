"""The LangGraph store of ``smart-agent serve`` on Postgres (``cli/serve.py`` names :func:`store`
as the server's ``store.path``): ``AsyncPostgresStore`` on ``$SMART_AGENT_DB`` with the memory's
vector index (pgvector, HNSW, cosine, the local embedding model: what ``langgraph.json``'s
``store.index`` gives the in-memory server), opened by ``sessions.open_backends`` as for a CLI
run, so served graphs, every replica and ``smart-agent run --db`` share one memory and one
tool-output archive.

The engine's own Postgres store has no index (``langgraph-runtime-pg`` ignores the index
settings), and memory refuses a store that cannot search by meaning; hence this one. With
memory off (``SMART_AGENT_MEMORY=false``) the store has no index and needs no pgvector.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import BaseStore

__all__ = ["server_index", "store"]


def server_index() -> dict[str, Any] | None:
    """The store's vector index on the server: the local model's (``langgraph.json``'s 384
    dimensions, field ``text``) when memory is on for the process, else None."""
    from .backend import local_index
    from .service import memory_enabled

    return local_index() if memory_enabled(None) else None


@asynccontextmanager
async def store() -> AsyncIterator[BaseStore]:
    """The server's store, open while the server runs (the engine enters it once per event loop)."""
    from ..sessions.store import open_backends

    async with open_backends(index=server_index()) as backends:
        assert backends.store is not None, "serve opens this store only with a Postgres SMART_AGENT_DB"
        yield backends.store
