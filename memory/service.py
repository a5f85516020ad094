"""Glue between runs and the memory store: which store, which namespace, what text.

Used by the graph nodes (``nodes/memory.py``), the tools (``tools/memory_tools.py``)
and the CLI (``cli/memory.py``). Importing this module is cheap: the store
module, FAISS and the embedding model load on first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..config import settings
from ..config.checks import parse_bool
from ..config.context import context_field
from ..models.messages import message_text
from ..runs.events import clip

if TYPE_CHECKING:  # pragma: no cover
    from .store import Recalled

# Recall drops memories less similar than this to the query (cosine; MiniLM puts
# unrelated sentences at about -0.1..0.15). $SMART_AGENT_MEMORY_MIN_SIMILARITY overrides.
RECALL_MIN_SIMILARITY = 0.2
MAX_MEMORY_CHARS = 500  # per memory in the prompt block
MAX_TASK_CHARS = 600
MAX_ANSWER_CHARS = 800
MAX_TOOL_FACTS = 5

# A run's observation is indexed on its task: the recall at the run's start embedded that text
# already, and the write reuses the vector (``vectors.Embedder``). The task is kept in the value
# as the recall saw it, up to MAX_INDEXED_TASK_CHARS (the model reads 256 tokens at most).
OBSERVATION_INDEX = ["task"]
MAX_INDEXED_TASK_CHARS = 4000

MEMORY_CONTEXT_HEADER = (
    "Long-term memory — notes from earlier sessions with this user, most relevant first. "
    "They may be outdated: when they conflict with the current conversation, trust the conversation."
)

# "Remember that X", "Please note: X", "Could you keep in mind X" at the start of a sentence.
_REMEMBER_RE = re.compile(
    r"(?:^|[.!?;]\s+)(?:(?:please|pls|kindly|can you|could you|would you)\s+)?"
    r"(?:remember|memori[sz]e|note|keep in mind|don't forget|do not forget)\b\s*(?:that\b|:)?\s*(.+)",
    re.IGNORECASE | re.DOTALL,
)


def memory_enabled(ctx: Any) -> bool:
    # Strict (parse_bool): "false" in a raw dict context is False, "maybe" an error.
    value = context_field(ctx, "memory", None)
    if value is None:
        variable, raw = settings.field_env("memory")
        raw = (raw or "").strip()
        return parse_bool(raw, variable) if raw else True
    return parse_bool(value, "memory")


def nothing_stored(runtime_store: Any = None) -> bool:
    """True when a recall can find nothing: no runtime store and no memory database in
    ``$SMART_AGENT_HOME/memory`` yet (a first run, whose write creates it after the answer).
    The recall then opens, creates and loads nothing on the way to the first model request."""
    if runtime_store is not None:
        return False
    from .store import DB_NAME, default_memory_dir

    return not (default_memory_dir() / DB_NAME).exists()


def namespace_for(ctx: Any) -> tuple[str, str]:
    from .store import user_namespace

    return user_namespace(context_field(ctx, "user_id", None) or settings.field_env("user_id")[1] or "default")


def store_for(runtime_store: Any = None, ctx: Any = None) -> Any:
    """The store memory uses: ``runtime.store`` whenever there is one, else the default store.

    A runtime store must search by meaning (``memory.backend.has_vector_index``): one without
    an index raises :class:`~smart_agent.memory.backend.NoVectorIndex` (memory off for the run),
    never a silent fall back to local files. With no runtime store (the CLI, plain Python
    without ``store=``) the default FAISS store in ``$SMART_AGENT_HOME/memory``, cached per
    folder and embedding model, so every node and tool of a process shares one.
    """
    from .backend import NO_INDEX, NoVectorIndex, has_vector_index, is_memory_store

    if runtime_store is not None:
        if is_memory_store(runtime_store) or has_vector_index(runtime_store):
            return runtime_store
        raise NoVectorIndex(NO_INDEX)
    from .open_stores import open_store

    return open_store(embeddings=_embedding_spec(ctx))


def _embedding_spec(ctx: Any) -> Any:
    return context_field(ctx, "embedding_model", None) or settings.field_env("embedding_model")[1] or "local"


def opened_store_for(runtime_store: Any = None, ctx: Any = None) -> Any:
    """:func:`store_for`'s store when finding it reads no file: the runtime store, or the default
    store once open (``open_stores.opened_store``); None when only ``store_for`` can tell (opening the
    default store touches files: off the event loop). Raises what ``store_for`` raises."""
    if runtime_store is not None:
        return store_for(runtime_store, ctx)
    from .open_stores import opened_store

    return opened_store(embeddings=_embedding_spec(ctx))


def check_postgres_embeddings(spec: str | None) -> None:
    """With ``SMART_AGENT_DB=postgresql://...`` memory lives in ``AsyncPostgresStore`` with the
    local model's index (its ``store_vectors`` column is ``vector(384)``, fixed when the tables
    are first set up), so another embedding model is refused in one line, never silently ignored."""
    spec = (spec or "local").strip()
    if spec != "local":
        raise ValueError(
            f"embedding model {spec!r} (--embedding-model / SMART_AGENT_EMBEDDING_MODEL): memory on Postgres "
            "(SMART_AGENT_DB) embeds with the local model only: use 'local' (or run with --no-memory)"
        )


@contextlib.asynccontextmanager
async def open_memory_store(embedding_model: str | None = None) -> AsyncIterator[Any]:
    """The store the ``smart-agent memory`` commands work on, closed on exit: the one entry point
    to extend when the process's memory lives elsewhere (a Postgres ``SMART_AGENT_DB``). Today the
    FAISS store in ``$SMART_AGENT_HOME/memory`` with ``embedding_model`` (default: the context
    field's environment variable, else ``local``). With ``SMART_AGENT_DB=postgresql://...``: the
    ``AsyncPostgresStore`` the runs use (``sessions.open_backends``; pgvector, the local model)."""
    from ..sessions.store import is_postgres, open_backends
    from .store import FaissMemoryStore

    spec = embedding_model or settings.field_env("embedding_model")[1] or "local"
    if is_postgres(settings.database_url()):
        from .backend import local_index

        check_postgres_embeddings(spec)
        async with open_backends(index=local_index()) as backends:
            yield backends.store
        return
    store = await asyncio.to_thread(FaissMemoryStore, embeddings=spec)
    try:
        yield store
    finally:
        store.close()


def min_similarity() -> float:
    return settings.memory_min_similarity(RECALL_MIN_SIMILARITY)


def one_line(text: str, limit: int) -> str:
    return clip(" ".join(str(text).split()), limit)


def format_memory_context(recalled: Sequence[Recalled], now: float | None = None) -> str:
    """The prompt block: one line per memory with its age, e.g. ``- (3 days ago) ...``."""
    if not recalled:
        return ""
    d = [r.to_dict(now) for r in recalled]
    lines = [MEMORY_CONTEXT_HEADER]
    lines += [f"- ({m['age']}) {one_line(m['text'].replace(chr(10), ' | '), MAX_MEMORY_CHARS)}" for m in d]
    return "\n".join(lines)


# -- observations written after a run -----------------------------------------------
def explicit_memory_request(task: str) -> str | None:
    """``"Remember that my favourite colour is teal"`` -> ``"my favourite colour is teal"``."""
    m = _REMEMBER_RE.search(task or "")
    if not m:
        return None
    fact = one_line(m.group(1), 300).rstrip(" .!")
    if fact.endswith("?"):
        return None  # "Can you remember when we met?" is a question, not a note
    return fact or None


def build_observation(
    task: str,
    answer: str,
    *,
    tool_facts: Sequence[str] = (),
    failed: bool = False,
) -> tuple[str, float]:
    """Deterministic observation text and importance for a finished task.

    Importance: 0.5 by default, 0.8 when the user explicitly asked to remember
    something, 0.3 when the run produced no usable answer.
    """
    lines = [f"Task: {one_line(task, MAX_TASK_CHARS)}"]
    fact = explicit_memory_request(task)
    if fact:
        lines.append(f"User asked to remember: {fact}")
    if answer:
        lines.append(f"Answer: {one_line(answer, MAX_ANSWER_CHARS)}")
    if tool_facts:
        lines.append("Tools: " + "; ".join(one_line(f, 160) for f in tool_facts[:MAX_TOOL_FACTS]))
    importance = 0.8 if fact else (0.3 if failed or not answer else 0.5)
    return "\n".join(lines), importance


def observation_metadata(task: str) -> dict[str, Any]:
    """The metadata of a run's observation: where it came from and the task it is indexed on."""
    return {"source": "run", "task": task if len(task) <= MAX_INDEXED_TASK_CHARS else one_line(task, 600)}


def run_task_and_facts(state: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """The current run's task (``task`` or last human message), answer and tool facts."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    messages = list(state.get("messages") or [])
    last_human = -1
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            last_human = i
            break
    task = (state.get("task") or "").strip()
    if not task and last_human >= 0:
        task = message_text(messages[last_human]).strip()
    answer = (state.get("answer") or "").strip()
    facts: list[str] = []
    calls: dict[str, str] = {}
    for msg in messages[last_human + 1 :]:
        if isinstance(msg, AIMessage):
            for call in msg.tool_calls or []:
                args = ", ".join(f"{k}={v!r}" for k, v in sorted((call.get("args") or {}).items()))
                calls[call.get("id") or ""] = f"{call.get('name')}({one_line(args, 80)})"
            if not answer and not msg.tool_calls:
                answer = message_text(msg).strip()
        elif isinstance(msg, ToolMessage):
            head = calls.get(msg.tool_call_id, msg.name or "tool")
            if (msg.name or "") in {"remember", "search_memory"}:
                continue  # memory tools are memory already
            status = "failed" if getattr(msg, "status", "success") == "error" else "->"
            facts.append(f"{head} {status} {one_line(message_text(msg), 60)}")
    return task, answer, facts


def now() -> float:
    return time.time()


def drain(timeout: float | None = None) -> list[dict[str, Any]]:
    """Wait until the memory work runs left behind (queued writes) is done; their results."""
    from . import background

    return background.drain(timeout)
