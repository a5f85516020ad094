"""Long-term memory: recall at a run's start, an observation written at its end (the
``memory_recall`` / ``memory_write`` nodes, ``memory/``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class MemorySettings(Settings):
    """Long-term memory"""

    memory: bool = setting(
        True,
        help="Long-term memory: recall relevant memories at the start of a run and write an observation of the "
        "task and its answer at the end (FAISS + SQLite under $SMART_AGENT_HOME/memory).",
        client="off",
    )
    memory_k: int = setting(
        5,
        help="How many memories are recalled into the system prompt (ranked by similarity, recency and "
        "importance).",
        bounds=(0, 100),
    )
    user_id: str = setting(
        "default",
        help="Whose memories to use: each user id has its own memory namespace.",
        rule=(lambda v: bool(v.strip()), "a non-empty string"),
        flag="--user",
        metavar="ID",
    )
    embedding_model: str = setting(
        "local",
        help="Embedding model of the memory: 'local' (bundled all-MiniLM-L6-v2, offline) or any LangChain "
        "'provider:model', e.g. 'openai:text-embedding-3-small'.",
        rule=(lambda v: v.strip() == "local" or ":" in v, "'local' or 'provider:model'"),
        metavar="SPEC",
    )
