"""Every environment variable smart-agent reads, in one place.

Other modules call these typed accessors instead of reading ``os.environ``, so one
file lists what the environment can change. Context fields (``SMART_AGENT_<FIELD>``,
converted and checked like the field) go through :func:`field_env`; the rest are
process settings that are not part of a run's context:

=================================== ==================================================
``SMART_AGENT_HOME``                data folder (sessions, memory, archive, locks)
``SMART_AGENT_DB``                  sessions database: a SQLite file, or ``postgresql://...``
                                    (sessions, memory and archive on Postgres)
``SMART_AGENT_DB_POOL_SIZE``        most Postgres connections one process opens (10)
``SMART_AGENT_PLUGINS``             the only folder plugins load from (none when unset)
``SMART_AGENT_THREAD_LOCK_TIMEOUT`` seconds a run waits for a busy thread (300)
``SMART_AGENT_MCP_CONFIG``          the CLI's MCP servers file (``--mcp-config``)
``SMART_AGENT_AGENTS``              the agents file (``--agents``; the served ``agent`` graph's team)
``SMART_AGENT_MIDDLEWARE``          LangChain middleware of the served graphs (``MODULE:ATTR``, comma-separated)
``SMART_AGENT_EMBEDDING_BACKEND``   ``onnx`` / ``numpy`` / ``sentence-transformers`` (``auto``)
``SMART_AGENT_MEMORY_MIN_SIMILARITY`` recall threshold of long-term memory
``SMART_AGENT_MEMORY_MAX_ITEMS``    memories kept per user
``SMART_AGENT_DEBUG``               the CLI prints tracebacks
``SMART_AGENT_PRICES``              model prices for ``max_cost_usd``: a JSON file or inline JSON
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` the OpenAI-compatible server of ``openai:`` models
``REDIS_URI``                       ``smart-agent serve``'s Redis (run queue wake-ups, streams);
                                    with a Postgres ``SMART_AGENT_DB``: replicas share runs
``N_JOBS_PER_WORKER``               background runs at once per ``serve`` process (10)
=================================== ==================================================

Values are read when asked for (never at import), so a test or a notebook that sets a
variable sees it on the next call.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "PREFIX",
    "THREAD_LOCK_TIMEOUT_ENV",
    "data_home",
    "database_url",
    "db_pool_size",
    "debug",
    "durability",
    "embedding_backend",
    "field_env",
    "hub_offline",
    "memory_max_items",
    "mcp_config",
    "memory_min_similarity",
    "middleware",
    "openai_api_key",
    "openai_base_url",
    "plugins_folder",
    "prices",
    "redis_url",
    "server_jobs",
    "thread_lock_timeout",
    "use_database",
    "use_durability",
    "use_openai_server",
]

PREFIX = "SMART_AGENT_"
THREAD_LOCK_TIMEOUT_ENV = PREFIX + "THREAD_LOCK_TIMEOUT"


def _get(name: str) -> str | None:
    return os.environ.get(name)


def field_env(field_name: str) -> tuple[str, str | None]:
    """``(variable, raw text)`` of context field ``field_name``'s variable
    ``SMART_AGENT_<FIELD_NAME>``; the text is None when the variable is unset or empty."""
    variable = PREFIX + field_name.upper()
    return variable, _get(variable) or None


def data_home() -> Path:
    """``$SMART_AGENT_HOME`` or ``./.smart-agent``, not resolved (that reads the file
    system, and callers run on a server's event loop too)."""
    return Path(_get(PREFIX + "HOME") or ".smart-agent").expanduser()


def database_url() -> str | None:
    """``$SMART_AGENT_DB`` (None when unset or empty): the sessions database."""
    return _get(PREFIX + "DB") or None


REDIS_ENV = "REDIS_URI"


def redis_url() -> str | None:
    """``$REDIS_URI`` (None when unset or empty): the Redis of ``smart-agent serve``'s replicas (the
    LangGraph server's own variable, read by it too)."""
    return (_get(REDIS_ENV) or "").strip() or None


SERVER_JOBS_ENV = "N_JOBS_PER_WORKER"


def server_jobs() -> int:
    """``$N_JOBS_PER_WORKER`` (the LangGraph server's variable, the default of ``serve --jobs``):
    background runs at once per server process, 1-1000 (default 10, the server's)."""
    raw = (_get(SERVER_JOBS_ENV) or "").strip()
    if not raw:
        return 10
    try:
        jobs = int(raw)
    except ValueError:
        raise ValueError(f"{SERVER_JOBS_ENV} must be a whole number, got {raw[:40]!r}") from None
    if not 1 <= jobs <= 1000:
        raise ValueError(f"{SERVER_JOBS_ENV} must be from 1 to 1000, got {jobs}")
    return jobs


DB_POOL_SIZE_ENV = PREFIX + "DB_POOL_SIZE"
DEFAULT_DB_POOL_SIZE = 10


def db_pool_size() -> int:
    """``$SMART_AGENT_DB_POOL_SIZE``: the size of the Postgres connection pool (default 10,
    1-1000); anything else is a one-line ``ValueError`` naming the variable."""
    raw = (_get(DB_POOL_SIZE_ENV) or "").strip()
    if not raw:
        return DEFAULT_DB_POOL_SIZE
    try:
        size = int(raw)
    except ValueError:
        raise ValueError(f"{DB_POOL_SIZE_ENV} must be a whole number of connections, got {raw!r}") from None
    if not 1 <= size <= 1000:
        raise ValueError(f"{DB_POOL_SIZE_ENV} must be between 1 and 1000, got {raw!r}")
    return size


def plugins_folder() -> Path | None:
    """``$SMART_AGENT_PLUGINS`` resolved, or None (no folder plugins)."""
    raw = (_get(PREFIX + "PLUGINS") or "").strip()
    return Path(raw).expanduser().resolve() if raw else None


def mcp_config() -> Path | None:
    """``$SMART_AGENT_MCP_CONFIG``: the CLI's MCP servers file when ``--mcp-config`` is not given."""
    raw = (_get(PREFIX + "MCP_CONFIG") or "").strip()
    return Path(raw).expanduser() if raw else None


def middleware() -> str | None:
    """``$SMART_AGENT_MIDDLEWARE``: the served graphs' middleware references (None when unset or empty)."""
    return (_get(PREFIX + "MIDDLEWARE") or "").strip() or None


def agents_file() -> Path | None:
    """``$SMART_AGENT_AGENTS``: the agents file (``--agents`` in the CLI; the served ``agent`` graph's team)."""
    raw = (_get(PREFIX + "AGENTS") or "").strip()
    return Path(raw).expanduser() if raw else None


def thread_lock_timeout() -> str | None:
    """The raw text of ``$SMART_AGENT_THREAD_LOCK_TIMEOUT`` (None when unset or empty);
    ``thread_lock.lock_timeout`` checks it."""
    return _get(THREAD_LOCK_TIMEOUT_ENV) or None


def embedding_backend() -> str:
    """``$SMART_AGENT_EMBEDDING_BACKEND`` lower-cased, or ``auto``."""
    return (_get(PREFIX + "EMBEDDING_BACKEND") or "").strip().lower() or "auto"


def memory_min_similarity(default: float) -> float:
    """``$SMART_AGENT_MEMORY_MIN_SIMILARITY``, or ``default`` when unset or not a number."""
    raw = _get(PREFIX + "MEMORY_MIN_SIMILARITY") or ""
    try:
        return float(raw) if raw.strip() else default
    except ValueError:
        return default


def memory_max_items(default: int) -> int:
    """``$SMART_AGENT_MEMORY_MAX_ITEMS``, or ``default`` when unset (not an integer: ``ValueError``)."""
    raw = _get(PREFIX + "MEMORY_MAX_ITEMS") or ""
    return int(raw) if raw.strip() else default


def debug() -> bool:
    """``$SMART_AGENT_DEBUG`` is set to anything non-empty."""
    return bool(_get(PREFIX + "DEBUG"))


def prices() -> str | None:
    """The raw text of ``$SMART_AGENT_PRICES`` (None when unset or blank): a path to a JSON
    file or inline JSON of model prices; ``prices.price_table`` reads and checks it."""
    raw = _get(PREFIX + "PRICES") or ""
    return raw if raw.strip() else None


def openai_base_url() -> str | None:
    return _get("OPENAI_BASE_URL")


def openai_api_key() -> str | None:
    return _get("OPENAI_API_KEY")


def openai_proxy() -> str | None:
    return _get("OPENAI_PROXY")


def env_value(name: str) -> str | None:
    """Another library's variable ``name`` (e.g. a model provider's API key, for ``smart-agent doctor``)."""
    return _get(name) or None


# --- the only writes: what this process tells libraries it starts


def use_openai_server(base_url: str, api_key: str) -> None:
    """Point ``openai:`` models of this process at ``base_url`` (the offline demo)."""
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = api_key


def hub_offline() -> None:
    """Tell Hugging Face libraries never to reach the hub (unless the user said otherwise)."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        os.environ.setdefault(name, "1")


DURABILITY_ENV = PREFIX + "DURABILITY"
DURABILITY_MODES = ("sync", "async", "exit")
#: "sync": every superstep is checkpointed before the next one starts (LangGraph's default,
#: "async", writes it while the next step already runs), so a run killed at any moment
#: resumes from its last finished step and never repeats one whose result was reported.
DEFAULT_DURABILITY = "sync"


def durability() -> str:
    """``$SMART_AGENT_DURABILITY`` (the CLI's ``--durability``): when a CLI run's checkpoints are
    written - ``sync`` (default), ``async`` or ``exit`` (LangGraph's durability modes); anything
    else is a one-line ``ValueError`` naming the variable."""
    raw = (_get(DURABILITY_ENV) or "").strip().lower()
    if not raw:
        return DEFAULT_DURABILITY
    if raw not in DURABILITY_MODES:
        raise ValueError(f"{DURABILITY_ENV} must be one of {', '.join(DURABILITY_MODES)}, got {raw!r}")
    return raw


def use_durability(mode: str) -> None:
    """This process's durability (the CLI's ``--durability``), as :func:`durability` reads it."""
    os.environ[DURABILITY_ENV] = mode


def use_database(url: str) -> None:
    """Select the sessions database of this process (the CLI's ``--db``): everything that
    follows ``$SMART_AGENT_DB`` (sessions, thread locks, the store) uses ``url``."""
    os.environ[PREFIX + "DB"] = url
