"""``smart-agent serve``: one replica of the LangGraph API server for ``langgraph.json``'s graphs.

The engine is the stock ``langgraph-api`` (the server ``langgraph dev`` runs: ``langgraph_sdk``,
Studio and Agent Chat UI connect unchanged), started as ``langgraph_api.cli.run_server`` and
loading the graphs itself (``LANGSERVE_GRAPHS``), whatever form they take (compiled graphs,
factories). Its runtime depends on the environment:

* ``SMART_AGENT_DB=postgresql://...`` and ``REDIS_URI=redis://...``: ``langgraph-runtime-pg``
  (MIT; runtime edition ``pg``). Threads, runs, assistants and crons are Postgres rows, a
  background run is claimed by one replica (``SELECT ... FOR UPDATE SKIP LOCKED``, woken through
  Redis) and kept alive by a Redis heartbeat: when a replica dies, another one takes its runs
  over (``LG_BG_JOB_HEARTBEAT`` seconds, default 120; a run resumes from its last checkpoint);
  streams fan out through Redis, so a client may join a run on any replica. The store is
  ``memory/server_store.py``'s ``AsyncPostgresStore`` with the memory's pgvector index, on the
  same tables as ``smart-agent run --db``. Before the server starts, every table (sessions,
  store, the runtime's own) is created or migrated under a Postgres advisory lock, so replicas
  starting together do not race; the runtime's own migration at start-up is then turned off.
* neither: the in-memory runtime of ``langgraph dev`` (one process; ``--workers`` must be 1).

``--workers N`` runs N server processes on one port (each a replica with its own queue).
Bad flags, a bad ``langgraph.json``, a port in use, a database or Redis that does not answer:
one line, exit 2. See docs/deploy.md.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import settings
from .backends import add_db_arg

__all__ = ["ServePlan", "plan_serve", "register_cli", "serve_command"]

DEFAULT_PORT = 2024
CONFIG_NAME = "langgraph.json"
# The store of the shared runtime (langgraph.json's store.path while serving on Postgres).
SERVER_STORE = "smart_agent.memory.server_store.store"
# langgraph.json keys whose value is a file path ("./x.py:name"), made absolute (the server
# reads them relative to its working folder, which need not be the file's).
_PATH_KEYS = (("store", "path"), ("checkpointer", "path"), ("auth", "path"), ("http", "app"))
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_UPSTREAM_BANNER = "This in-memory server is designed for development and testing"

EXAMPLES = """examples:
  smart-agent serve                                   in memory, one process, like `langgraph dev`
  SMART_AGENT_DB=postgresql://u:p@db/agents REDIS_URI=redis://cache:6379 \\
    smart-agent serve --host 0.0.0.0 --port 8123       one replica; start more behind a load balancer
  smart-agent serve --port 8123 --workers 2           two server processes on one port (Postgres + Redis)

health: GET /ok (with Postgres: /ok?check_db=1 also checks the database). See docs/deploy.md."""


def _number(name: str, least: int, most: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number (got {text[:40]!r})") from None
        if not least <= value <= most:
            raise argparse.ArgumentTypeError(f"must be from {least} to {most} (got {value})")
        return value

    parse.__name__ = name
    return parse


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "serve",
        help="serve langgraph.json's graphs over the LangGraph API (one replica; Postgres + Redis to scale out)",
        description="Serve langgraph.json's graphs over the LangGraph API (langgraph_sdk, Studio, Agent Chat UI). "
        "With SMART_AGENT_DB=postgresql://... and REDIS_URI=redis://... replicas share threads, the run queue, "
        "the store and streams; without them: the in-memory single replica of `langgraph dev`.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port", type=_number("port", 1, 65535), default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    p.add_argument(
        "--workers", type=_number("workers", 1, 64), default=1,
        help="server processes on this port (default 1; more need Postgres and Redis)",
    )
    p.add_argument(
        "--jobs", type=_number("jobs", 1, 1000), default=None, metavar="N",
        help="background runs at once per process (default $N_JOBS_PER_WORKER, else 10)",
    )
    p.add_argument(
        "--config", metavar="FILE",
        help=f"the graphs' {CONFIG_NAME} (default ./{CONFIG_NAME}, else smart-agent's own)",
    )
    add_db_arg(p)
    p.set_defaults(handler=serve_command)
    return p


@dataclass
class ServePlan:
    """What ``serve`` starts: the validated config (paths absolute) and the shared backends
    (both None: the in-memory runtime)."""

    config: dict[str, Any]
    config_file: Path
    database: str | None = None
    redis: str | None = None
    workers: int = 1
    jobs: int = 10
    graphs: list[str] = field(default_factory=list)

    @property
    def shared(self) -> bool:
        return self.database is not None


# -- checks that need no network ----------------------------------------------------------------
def plan_serve(args: argparse.Namespace) -> ServePlan:
    """Check the flags, the config and the environment; a problem is one ``ValueError`` line."""
    from ..sessions.store import is_postgres

    config_file = _config_file(args.config)
    config = load_config(config_file)
    database = settings.database_url()
    redis = settings.redis_url()
    if is_postgres(database) and redis is None:
        raise ValueError(
            "SMART_AGENT_DB is a Postgres database but REDIS_URI is not set: replicas share their run queue and "
            "streams through Redis (REDIS_URI=redis://host:6379), or unset SMART_AGENT_DB for one in-memory server"
        )
    if redis is not None and not is_postgres(database):
        raise ValueError(
            "REDIS_URI is set but SMART_AGENT_DB is not a Postgres database: replicas keep their threads and runs "
            "in Postgres (SMART_AGENT_DB=postgresql://...), or unset REDIS_URI for one in-memory server"
        )
    if redis is not None and not redis.startswith(REDIS_SCHEMES):
        raise ValueError(f"REDIS_URI must start with {', '.join(REDIS_SCHEMES)} (got {redis.split(':', 1)[0]!r}:...)")
    if args.workers > 1 and redis is None:
        raise ValueError(
            "--workers above 1 needs SMART_AGENT_DB=postgresql://... and REDIS_URI=redis://...: in memory, each "
            "process would keep its own threads and runs"
        )
    shared = is_postgres(database) and redis is not None
    return ServePlan(
        config=config,
        config_file=config_file,
        database=database if shared else None,
        redis=redis if shared else None,
        workers=args.workers,
        jobs=args.jobs or settings.server_jobs(),
        graphs=sorted(config["graphs"]),
    )


def _config_file(given: str | None) -> Path:
    if given is not None:
        return Path(given)
    here = Path(CONFIG_NAME)
    if here.is_file():
        return here
    own = Path(__file__).resolve().parents[1] / CONFIG_NAME
    if own.is_file():
        return own
    raise ValueError(f"no {CONFIG_NAME} in this folder: pass --config FILE")


def load_config(path: Path) -> dict[str, Any]:
    """``path`` read (bounded) and validated by ``langgraph-cli``, with its relative file paths
    made absolute; a problem is one ``ValueError`` line naming the file."""
    from ..config.files import load_json, read_text_file

    what = f"--config {path}"
    raw = load_json(read_text_file(path, what="--config", limit=1_000_000), what=what)
    if not isinstance(raw, dict):
        raise ValueError(f"{what}: not a JSON object")
    try:
        import click
        from langgraph_cli.config import validate_config
    except ImportError:
        raise ValueError(_MISSING) from None
    try:
        config = dict(validate_config(raw, source_path=path.resolve()))  # type: ignore[arg-type]
    except (click.ClickException, ValueError, TypeError, KeyError) as exc:
        message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        raise ValueError(f"{what}: {' '.join(message.split())}") from None
    graphs = config.get("graphs")
    if not isinstance(graphs, dict) or not graphs:
        raise ValueError(f"{what}: no graphs (\"graphs\": {{\"agent\": \"module:graph\"}})")
    if raw.get("node_version"):
        raise ValueError(f"{what}: JavaScript graphs (node_version) are not served by smart-agent serve")
    return anchor_paths(config, path.resolve().parent)


def anchor_paths(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A copy of ``config`` whose relative file paths (``./x.py:name``) are absolute, from ``folder``."""

    def anchor(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(("./", "../")):
            return os.path.normpath(folder / value)
        return value

    out = dict(config)
    graphs: dict[str, Any] = {}
    for name, spec in config["graphs"].items():
        graphs[name] = {**spec, "path": anchor(spec.get("path"))} if isinstance(spec, dict) else anchor(spec)
    out["graphs"] = graphs
    for key, sub in _PATH_KEYS:
        if isinstance(out.get(key), dict) and sub in out[key]:
            out[key] = {**out[key], sub: anchor(out[key][sub])}
    store = out.get("store")
    if isinstance(store, dict) and isinstance(store.get("index"), dict) and "embed" in store["index"]:
        out["store"] = {**store, "index": {**store["index"], "embed": anchor(store["index"]["embed"])}}
    if isinstance(out.get("env"), str) and not os.path.isabs(out["env"]):  # a .env file
        out["env"] = os.path.normpath(folder / out["env"])
    return out


_MISSING = 'smart-agent serve needs the LangGraph server: pip install "smart-agent[serve]"'


def _check_engine(shared: bool) -> None:
    from importlib.util import find_spec

    needed = ["langgraph_api", "langgraph_runtime_pg" if shared else "langgraph_runtime_inmem"]
    if shared:
        needed += ["redis", "langgraph.checkpoint.postgres"]
    for module in needed:
        try:
            found = find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise ValueError(_MISSING)


def check_port(host: str, port: int) -> None:
    """``host:port`` can be listened on now (the engine would silently move to another port)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValueError(f"--host {host[:80]!r}: not an address to listen on ({exc})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as exc:
            raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


# -- the shared backends: reachable, tables ready -------------------------------------------------
class _RuntimeTables:
    """The runtime's own tables (assistants, threads, runs, crons), migrated by its Alembic scripts:
    a part of ``sessions.store.prepare_postgres`` (run under its advisory lock)."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def setup(self) -> None:
        from langgraph_runtime_pg.migrate import upgrade_head

        from ..sessions.store import DatabaseUnavailable

        try:
            await asyncio.to_thread(upgrade_head, self.url)
        except Exception as exc:  # SQLAlchemy / Alembic errors span lines
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            where = "in the database of SMART_AGENT_DB"
            raise DatabaseUnavailable(f"cannot set up the server's tables {where}: {reason}") from exc


async def ping_redis(url: str, timeout_s: float = 5.0) -> None:
    """Redis at ``url`` answers PING; else one ``ValueError`` line (without the URL's password)."""
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError

    try:
        client = aioredis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    except ValueError as exc:
        raise ValueError(f"REDIS_URI: {' '.join(str(exc).split())[:200]}") from None
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        raise ValueError(f"REDIS_URI: Redis does not answer: {' '.join(str(exc).split())[:200]}") from None
    finally:
        await client.aclose()


async def prepare_shared(database: str, redis: str) -> None:
    """Redis answers; the database answers and has every table (one line and exit 2 if not)."""
    from ..memory.server_store import server_index
    from ..sessions.store import DatabaseUnavailable, prepare_postgres

    await ping_redis(redis)
    try:
        await prepare_postgres(database, index=server_index(), also=[_RuntimeTables(database)])
    except (DatabaseUnavailable, RuntimeError) as exc:
        raise ValueError(str(exc)) from None


# -- running -----------------------------------------------------------------------------------
class _Banner(logging.Filter):
    """The engine's start-up banner (``langgraph_api.cli``) says it is an in-memory development
    server whatever the runtime: replaced by what this replica is."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        if _UPSTREAM_BANNER in str(record.msg):
            record.msg, record.args = self.text, ()
        return True


def banner(plan: ServePlan, host: str, port: int) -> str:
    runtime = (
        "Postgres + Redis: replicas share threads, runs, the store and streams"
        if plan.shared
        else "in memory: one process, its threads and runs end with it"
    )
    return (
        f"smart-agent serve: the LangGraph API on http://{host}:{port} ({runtime}); graphs: {', '.join(plan.graphs)}; "
        f"{plan.workers} process(es), {plan.jobs} background runs each; config {plan.config_file}"
    )


def serve_command(args: argparse.Namespace) -> int:
    plan = plan_serve(args)
    _check_engine(plan.shared)
    check_port(args.host, args.port)
    if plan.shared:
        assert plan.database is not None and plan.redis is not None
        asyncio.run(prepare_shared(plan.database, plan.redis))
    return run(plan, args.host, args.port)


def run(plan: ServePlan, host: str, port: int) -> int:
    """Start the engine (returns when it stops: 0, or 1 when it could not start)."""
    from langgraph_api.cli import run_server

    from .outcome import EXIT_FAILURE

    config = plan.config
    folder = plan.config_file.resolve().parent
    _add_dependencies(config, folder)
    store = config.get("store")
    kwargs: dict[str, Any] = {}
    if plan.shared:
        if not (isinstance(store, dict) and store.get("path")):
            store = {**(store or {}), "path": SERVER_STORE}
        os.environ["LG_RUNTIME_PG_AUTO_MIGRATE"] = "false"  # prepare_shared migrated, under a lock
        kwargs.update(
            runtime_edition="pg", __database_uri__=plan.database, __redis_uri__=plan.redis, __migrations_path__=None
        )
    if plan.workers > 1:
        kwargs["workers"] = plan.workers
    engine_log = logging.getLogger("langgraph_api.cli")
    engine_log.addFilter(_Banner(banner(plan, host, port)))
    try:
        run_server(
            host,
            port,
            False,
            config["graphs"],
            n_jobs_per_worker=plan.jobs,
            env=config.get("env"),
            store=store,
            auth=config.get("auth"),
            http=config.get("http"),
            ui=config.get("ui"),
            ui_config=config.get("ui_config"),
            webhooks=config.get("webhooks"),
            checkpointer=config.get("checkpointer"),
            disable_persistence=bool(config.get("disable_persistence", False)),
            **kwargs,
        )
    except SystemExit as exc:  # uvicorn exits 3 when the application cannot start
        if exc.code not in (None, 0):
            line = f"smart-agent serve: the server could not start (exit {exc.code}; see the log above)"
            print(line, file=sys.stderr)
            return EXIT_FAILURE
    return 0


def _add_dependencies(config: dict[str, Any], folder: Path) -> None:
    """langgraph.json's ``dependencies`` folders importable, appended to ``sys.path`` as ``langgraph
    dev`` does (``--workers`` processes import the graphs' modules from the installed packages)."""
    for dep in config.get("dependencies", []):
        path = folder / dep if isinstance(dep, str) else None
        if path is not None and path.is_dir() and str(path) not in sys.path:
            sys.path.append(str(path))
