"""Where a user's LangChain middleware comes from: ``MODULE:ATTR`` references.

``--middleware MODULE:ATTR`` (repeatable: ``run``, ``chat``, ``resume``, ``eval``), an agents
file's ``middleware:`` list per agent, and ``SMART_AGENT_MIDDLEWARE`` (comma-separated, for the
graphs ``langgraph dev`` serves) name middleware the way ``langgraph.json`` names graphs:
``MODULE:ATTR`` with a dotted module importable from the current folder or the environment, or
``path/to/file.py:ATTR``. ``ATTR`` is an ``AgentMiddleware`` (an instance, or what
``@before_model``, ``@wrap_tool_call``... make) or a list of them. A reference that does not
import, names nothing or names something else is a :class:`MiddlewareError`: one line naming it.

Middleware is code the operator chose to run, like a plugin: only the operator's flags, files and
environment name it, never a served graph's client.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..config import settings
from .hooks import MiddlewareError, check_middleware

__all__ = ["MiddlewareError", "load_middleware", "middleware_refs", "served_middleware"]

#: The environment variable of the served graphs' middleware.
MIDDLEWARE_ENV = settings.PREFIX + "MIDDLEWARE"


def middleware_refs(text: str) -> list[str]:
    """The references in a comma-separated list (``SMART_AGENT_MIDDLEWARE``)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def load_middleware(refs: Iterable[str], *, what: str = "--middleware") -> list[Any]:
    """The middleware the ``MODULE:ATTR`` references name, in order (a list attribute in its
    own order); a :class:`MiddlewareError` naming ``what`` and the reference for a bad one."""
    out: list[Any] = []
    for ref in refs:
        out.extend(_one(ref, what))
    return check_middleware(out, what=what)


def _one(ref: str, what: str) -> list[Any]:
    module_name, sep, attr = ref.rpartition(":")
    if not sep or not module_name or not attr:
        raise MiddlewareError(f"{what} {ref!r}: expected MODULE:ATTR (e.g. mymodule:MIDDLEWARE)")
    module = _import(module_name, ref, what)
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise MiddlewareError(f"{what} {ref!r}: module {module_name!r} has no attribute {attr!r}") from None
    items: Sequence[Any] = list(value) if isinstance(value, (list, tuple)) else [value]
    try:
        return check_middleware(items, what=f"{what} {ref!r}")
    except MiddlewareError as exc:
        raise MiddlewareError(str(exc)) from None


def _import(name: str, ref: str, what: str) -> Any:
    """A module by dotted name (the current folder first on the path, as a script's would be) or
    by file path (``.py``)."""
    try:
        if name.endswith(".py") or os.sep in name:
            path = Path(name).expanduser()
            spec = importlib.util.spec_from_file_location(f"smart_agent_middleware_{path.stem}", path)
            if spec is None or spec.loader is None or not path.is_file():
                raise MiddlewareError(f"{what} {ref!r}: no such file {str(path)!r}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        here = os.getcwd()
        added = here not in sys.path
        if added:
            sys.path.insert(0, here)
        try:
            return importlib.import_module(name)
        finally:
            if added:
                sys.path.remove(here)
    except MiddlewareError:
        raise
    except ImportError as exc:
        raise MiddlewareError(f"{what} {ref!r}: cannot import {name!r} ({exc})") from None
    except Exception as exc:  # the user's module failed while it was imported
        raise MiddlewareError(f"{what} {ref!r}: importing {name!r} failed ({type(exc).__name__}: {exc})") from None


def served_middleware() -> list[Any]:
    """The middleware of the graphs ``langgraph dev`` serves: ``$SMART_AGENT_MIDDLEWARE``."""
    raw = settings.middleware()
    return load_middleware(middleware_refs(raw), what=MIDDLEWARE_ENV) if raw else []
