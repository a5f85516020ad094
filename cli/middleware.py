"""``--middleware MODULE:ATTR`` of ``run``, ``chat``, ``resume`` and ``eval``: LangChain middleware
the run's graph runs (``policies/middleware.py`` loads it; ``policies/hooks.py`` runs it). The
references are checked when the flags are read (one line naming a bad one, exit 2) and recorded
with the run's flags, so ``smart-agent resume`` runs the same middleware."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

#: The key of the recorded flags (not a context field).
FLAG_FIELD = "middleware"


def add_middleware_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--middleware", action="append", metavar="MODULE:ATTR",
        help="LangChain middleware the run's graph runs (an AgentMiddleware or a list of them; repeatable, in order)",
    )  # fmt: skip


def middleware_values(args: argparse.Namespace, values: dict[str, Any]) -> None:
    """Check the references now (a bad one: ``ValueError``, one line) and record them."""
    refs = getattr(args, "middleware", None)
    if not refs:
        return
    from ..policies.middleware import MiddlewareError, load_middleware

    try:
        load_middleware(refs)
    except MiddlewareError as exc:
        raise ValueError(str(exc)) from None
    values[FLAG_FIELD] = list(refs)


def recorded_middleware(metadata: Mapping[str, Any]) -> list[Any]:
    """The middleware recorded with a run's flags, loaded (none: [])."""
    from ..policies.middleware import load_middleware
    from .review import recorded_run

    refs = recorded_run(metadata)[1].get(FLAG_FIELD)
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        return []
    return load_middleware(refs)
