"""What a client of a served graph may set in its run's context: the operator's settings win.

The graphs ``langgraph dev`` / LangGraph Server serve (``langgraph.json`` -> ``graphs/served.py``,
built by ``graphs/run_scope.served_graph``) get their run's context from whoever calls the server:
untrusted input. Their runs pass :func:`client_context` before anything runs. The server's own
settings - its environment (``SMART_AGENT_<FIELD>``, else the field's default; the workspace:
``$SMART_AGENT_WORKSPACE``, else the server's current folder) - are bounds a client may narrow,
never widen:

* ``workspace``: a folder inside the server's workspace (symbolic links resolved, ``..`` applied;
  a relative path is taken from the server's workspace) that exists; the run gets its resolved path.
* switches (``allow_private_network``, ``memory``): a client may turn them off, not on.
* folder lists (``skills``): only folders of the server's own list (``client="subset"``).
* lists of limits (``tool_call_limits``): the server's and any more (``client="superset"``).
* limits (``max_write_bytes``, the budgets, timeouts, retries, fan-out: what each setting declares,
  ``client="lower"``/``"budget"``): at most the server's value; where 0 means "no limit" a client's
  0 is a widening unless the server's is 0.

Any other field (``model``, ``system_prompt``, ``tools`` - a subset of the server's tools -,
``approve``, ...) is the client's to choose. Plugins, MCP servers and the agents file are no
context fields: the server's environment alone names them. A widening value fails the run before
any node runs: :class:`ClientContextError`, one line naming the field. The CLI and Python callers of
``build_*_graph()`` are the operator: their contexts are never checked here.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from functools import cache
from typing import Any

from . import settings
from .checks import parse_bool, shown

__all__ = ["ClientContextError", "client_context", "narrowed_workspace", "server_workspace"]

class ClientContextError(ValueError):
    """A served graph's client sent a context that widens the server's settings (one line per field)."""


@cache
def _fields() -> dict[str, dataclasses.Field]:
    from .context import Context

    return {f.name: f for f in dataclasses.fields(Context)}


def server_value(name: str) -> Any:
    """The server's value of context field ``name``: ``$SMART_AGENT_<NAME>``, else its default."""
    f = _fields()[name]
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def server_workspace() -> str:
    """The server's workspace, resolved: ``$SMART_AGENT_WORKSPACE``, else the current folder (reads
    the file system: not on an event loop)."""
    raw = settings.field_env("workspace")[1] or os.getcwd()
    return os.path.realpath(os.path.expanduser(raw))


def _inside(path: str, root: str) -> bool:
    return path == root or os.path.commonpath([path, root]) == root


def narrowed_workspace(value: str, root: str) -> str:
    """The folder a client's ``workspace`` names, resolved (links followed, ``..`` applied, a relative
    path taken from ``root``), when it is ``root`` or a folder inside it; else :class:`ClientContextError`.
    A path outside ``root`` is refused as such whether it exists or not (no probing the server's files)."""
    path = os.path.realpath(os.path.join(root, value))  # (an absolute value replaces root)
    if not _inside(path, root):
        raise ClientContextError(
            f"workspace: a client may only narrow the server's workspace {root} (got {shown(value, 200)})"
        )
    if not os.path.exists(path):
        raise ClientContextError(f"workspace: {shown(value)} does not exist in the server's workspace {root}")
    if not os.path.isdir(path):
        raise ClientContextError(f"workspace: {shown(value)} is not a folder")
    return path


def _widening(name: str, value: Any) -> str | None:
    """Why a client's ``value`` of field ``name`` widens the server's setting (None when it does not):
    what its declaration's ``client`` lets a client do (``config/fields.py``)."""
    from .context import declaration

    client = declaration(name).client
    if client == "off":
        if parse_bool(value, name) and not server_value(name):
            return f"{name}: a client may not turn on what the server has off (got {shown(value)})"
        return None
    if client == "subset":  # a list: only items of the server's own list
        allowed = {os.path.normpath(v) for v in server_value(name) or ()}
        extra = [v for v in value if os.path.normpath(v) not in allowed]
        if extra:
            server = shown(server_value(name))
            return f"{name}: a client may only choose among the server's {server} (got {shown(extra)})"
        return None
    if client == "superset":  # a list of limits: a client may add to the server's, not drop one
        dropped = [v for v in server_value(name) or () if v not in value]
        if dropped:
            return f"{name}: a client may add to the server's {shown(server_value(name))}, not drop {shown(dropped)}"
        return None
    if client in ("lower", "budget"):
        limit, zero_is_none = server_value(name), client == "budget"
        if zero_is_none and not limit:
            return None  # the server sets no limit
        if value > limit or (zero_is_none and not value):
            return f"{name}: a client may only lower the server's limit {limit} (got {shown(value)})"
    return None


def client_context(context: Any) -> Any:
    """``context`` as a served graph's client sent it (a dict; None: the server's settings), checked
    against the server's settings: the same context with ``workspace`` resolved, or
    :class:`ClientContextError` naming each field that widens them. A value of the wrong type is
    left to the context's own validation (its one line). Reads the file system: not on an event loop."""
    if context is None:
        return None
    from .context import BaseContext, field_problem

    if isinstance(context, BaseContext):
        values = {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    elif isinstance(context, Mapping):
        values = dict(context)
    else:
        raise ClientContextError(f"context must be a JSON object (got {type(context).__name__})")
    known = _fields()
    problems: list[str] = []
    workspace = None
    for name, value in values.items():
        if name not in known or value is None or field_problem(name, value):
            continue  # an unknown field or a bad value: the context's own validation says so
        if name == "workspace":
            if value:
                try:
                    workspace = narrowed_workspace(value, server_workspace())
                except ClientContextError as exc:
                    problems.append(str(exc))
            continue
        problem = _widening(name, value)
        if problem:
            problems.append(problem)
    if problems:
        raise ClientContextError("; ".join(problems))
    if workspace is None:
        return context
    if isinstance(context, BaseContext):
        return dataclasses.replace(context, workspace=workspace)
    return {**values, "workspace": workspace}
