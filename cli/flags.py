"""Flags generated from the context schema, so that every context field has one.

The features add their own flags (``--model-timeout``, ``--no-memory``, ``--approve-plan``...);
:func:`add_generated_args` then adds a flag for every field of ``context.Context`` none of them
covers, named after the field (``max_workers`` -> ``--max-workers``; a field in seconds,
``*_s``, also without the suffix: ``--tool-timeout``), typed and checked from the field's
annotation and bounds (``context_types.FIELD_BOUNDS``), with the field's description as help.
A new context field thus gets its flag without any CLI change; ``tests/unit/test_cli_flags.py``
fails when a field has none. :func:`generated_values` maps them onto the context values.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable, Collection
from typing import Any, Literal, Union, get_args, get_origin

from ..config.checks import shown

#: The ``dest`` of a feature's flag whose name is not its field's name -> that field.
FLAG_FIELDS: dict[str, str] = {
    "model_timeout": "model_timeout_s",
    "model_retries": "model_max_retries",
    "fallback_model": "fallback_models",
    "context_tokens": "context_token_limit",
    "summary_tokens": "summary_token_limit",
    "archive_chars": "archive_threshold_chars",
    "todo": "use_todo_list",
    "max_cost": "max_cost_usd",
}
#: Fields whose flags ``resume`` leaves out (it has its own ``--approve`` decision flag).
REVIEW_FIELDS = ("approve", "ask_user")
DEST_PREFIX = "field__"


def covered_fields(p: argparse.ArgumentParser) -> set[str]:
    """The context fields that flags already in ``p`` set."""
    dests = {a.dest for a in p._actions}
    return {FLAG_FIELDS.get(d, d) for d in dests} | {d[len(DEST_PREFIX):] for d in dests if d.startswith(DEST_PREFIX)}


def flag_names(field_name: str) -> list[str]:
    """The option strings of a generated flag: ``--max-workers``; ``--tool-timeout`` and ``--tool-timeout-s``."""
    name = "--" + field_name.replace("_", "-")
    return [name[: -len("-s")], name] if field_name.endswith("_s") else [name]


def add_generated_args(p: argparse.ArgumentParser, *, skip: Collection[str] = ()) -> list[str]:
    """Add a flag for every context field no flag of ``p`` covers (except ``skip``); the fields."""
    from dataclasses import fields

    from ..config.context import Context

    covered = covered_fields(p) | set(skip)
    added = []
    for f in fields(Context):
        if f.name in covered:
            continue
        names = [n for n in flag_names(f.name) if n not in p._option_string_actions]
        if not names:
            continue
        p.add_argument(*names, dest=DEST_PREFIX + f.name, default=None, help=_help(f.metadata), **_kind(f.name))
        added.append(f.name)
    return added


def generated_values(args: argparse.Namespace, values: dict) -> None:
    """The generated flags given, as context values."""
    for dest, value in vars(args).items():
        if dest.startswith(DEST_PREFIX) and value is not None:
            values[dest[len(DEST_PREFIX):]] = value


def _help(metadata: Any) -> str:
    text = " ".join(str((metadata or {}).get("description") or "").split())
    first = text.split(". ")[0].rstrip(".")
    return first.replace("%", "%%")


def _kind(field_name: str) -> dict[str, Any]:
    """``add_argument`` keywords for the field's type: the parser, metavar or action."""
    from ..config.context import field_types

    annotation = _plain(field_types()[field_name])
    if annotation is bool:
        return {"action": argparse.BooleanOptionalAction}
    if annotation is int:
        from .options import field_int

        return {"type": field_int(field_name), "metavar": "N"}
    if annotation is float:
        from .budget import field_float

        return {"type": field_float(field_name), "metavar": "S" if field_name.endswith("_s") else "X"}
    if get_origin(annotation) is Literal:
        choices = [str(c) for c in get_args(annotation)]
        return {"type": _checked(field_name, str), "choices": choices}
    if annotation is str:
        return {"type": _checked(field_name, str), "metavar": "TEXT"}
    if get_origin(annotation) is list and get_args(annotation) in ((str,), ()):
        return {"type": _checked(field_name, _comma_list), "metavar": "A,B"}
    raise TypeError(f"context field {field_name!r}: no flag for its type {annotation!r}; give it one in cli/")


def _plain(annotation: Any) -> Any:
    """``X`` of ``X | None`` / ``Optional[X]`` / ``Annotated[X, ...]``."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    return getattr(annotation, "__origin__", annotation) if hasattr(annotation, "__metadata__") else annotation


def _comma_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _checked(field_name: str, convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse ``type``: ``convert(text)`` checked as the field's value (one line when not)."""
    from ..config.context import field_problem

    def parse(text: str) -> Any:
        value = convert(text)
        problem = field_problem(field_name, value)
        if problem:
            raise argparse.ArgumentTypeError(f"{problem} (got {shown(text)})")
        return value

    parse.__name__ = field_name
    return parse
