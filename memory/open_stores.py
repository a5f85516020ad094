"""The process's open memory stores: one :class:`~.store.FaissMemoryStore` per folder and
embedding model, opened on first use and shared by every run, tool and command of the process
(a store keeps its FAISS indexes in memory: opening one per run would read them again)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from langchain_core.embeddings import Embeddings

from .embeddings import embedding_id
from .store import FaissMemoryStore, default_memory_dir

__all__ = ["close_stores", "open_store", "opened_store"]

_stores: dict[tuple[str, str], FaissMemoryStore] = {}
# The same stores by the folder as given (and the working folder a relative one is in): found
# again without resolving the path, which reads the file system (opened_store).
_given: dict[tuple[str, str, str], FaissMemoryStore] = {}
_stores_lock = threading.Lock()


def _given_key(folder: Path, embeddings: str | Embeddings | None) -> tuple[str, str, str]:
    return str(folder), "" if folder.is_absolute() else os.getcwd(), embedding_id(embeddings)


def open_store(
    path: str | os.PathLike[str] | None = None, *, embeddings: str | Embeddings | None = "local"
) -> FaissMemoryStore:
    """The store in ``path`` (default ``$SMART_AGENT_HOME/memory``), cached per folder and model."""
    folder = Path(path) if path is not None else default_memory_dir()
    key = (str(folder.expanduser().resolve()), embedding_id(embeddings))
    given = _given_key(folder, embeddings)
    with _stores_lock:
        store = _stores.get(key)
        if store is None or store.closed:
            store = FaissMemoryStore(folder, embeddings=embeddings)
            _stores[key] = store
        _given[given] = store
        return store


def opened_store(
    path: str | os.PathLike[str] | None = None, *, embeddings: str | Embeddings | None = "local"
) -> FaissMemoryStore | None:
    """What :func:`open_store` returned for the same folder (as given) and model, while that store
    is open; None when it has not (then ask ``open_store``). Reads no file, so an event loop
    may call it."""
    folder = Path(path) if path is not None else default_memory_dir()
    try:
        given = _given_key(folder, embeddings)
    except OSError:  # (the working folder is gone)
        return None
    with _stores_lock:
        store = _given.get(given)
    return None if store is None or store.closed else store


def close_stores() -> None:
    with _stores_lock:
        for store in _stores.values():
            store.close()
        _stores.clear()
        _given.clear()
