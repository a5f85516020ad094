"""The flags of the context fields, made from their declarations (``config/fields.py``).

Every context field has a flag: its declaration gives the name (``max_workers`` ->
``--max-workers``; a field in seconds drops ``_s``: ``--tool-timeout``; or the ``flag`` it
declares, ``--context-tokens``), the parser (from the field's type, or the ``parse`` it
declares), the metavar, whether it repeats, and the help (its description's first sentence and
its default). A value is checked like the field (type, bounds, rule): a bad one is one line,
exit 2. A new setting thus gets its flag without any CLI change; ``tests/unit/cli/test_flags.py``
fails when a field has none. :func:`setting_values` maps the flags given onto the context values.
"""

from __future__ import annotations

import argparse
import math
import re
import types
from collections.abc import Callable, Collection, Iterable
from typing import Any, Literal, Union, get_args, get_origin

from ..config.checks import shown

DEST_PREFIX = "field__"
#: The field whose flag ``resume`` leaves out (it has its own ``--approve`` decision flag).
REVIEW_FIELDS = ("approve",)


def add_setting_args(
    p: argparse.ArgumentParser, names: Iterable[str] | None = None, *, skip: Collection[str] = ()
) -> list[str]:
    """Add the flag of each context field in ``names`` (every field when None) but ``skip``; the fields."""
    from ..config.context import context_field_names, declaration, field_types

    added = []
    for name in names if names is not None else context_field_names():
        decl = declaration(name)
        if name in skip or not decl.cli:
            continue
        flags = decl.flags(name)
        kind = _kind(name, field_types()[name], decl.parse, decl.metavar, decl.repeat)
        p.add_argument(*flags, dest=DEST_PREFIX + name, default=None, help=_help(decl.help, decl.default), **kind)
        added.append(name)
    return added


def setting_values(args: argparse.Namespace) -> dict[str, Any]:
    """The context fields the flags of :func:`add_setting_args` gave."""
    return {
        dest[len(DEST_PREFIX):]: value
        for dest, value in vars(args).items()
        if dest.startswith(DEST_PREFIX) and value is not None
    }


def setting_value(args: argparse.Namespace, name: str) -> Any:
    """The value field ``name``'s flag gave (None when it was not given)."""
    return getattr(args, DEST_PREFIX + name, None)


_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z])")


def _help(text: str, default: Any) -> str:
    """The first sentence of a setting's help, with its default."""
    first = _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(".")
    if default not in (None, "", [], False):
        first += f" (default {default})" if not isinstance(default, str) or len(default) < 40 else ""
    return first.replace("%", "%%")


def _kind(
    name: str, annotation: Any, parse: Callable[[str], Any] | None, metavar: str | None, repeat: bool
) -> dict[str, Any]:
    """``add_argument`` keywords for a field: the parser (checked like the field), metavar or action."""
    plain = _plain(annotation)
    if plain is bool and parse is None:
        return {"action": argparse.BooleanOptionalAction}
    if parse is None and repeat:  # (each flag one item of the list)
        parse, default_metavar = str, "TEXT"
    elif parse is None:
        parse, default_metavar = _parser(name, plain)
    else:
        default_metavar = "VALUE"
    out: dict[str, Any] = {"type": _checked(name, parse, each=repeat), "metavar": metavar or default_metavar}
    if repeat:
        out["action"] = "append"
    return out


def _parser(name: str, plain: Any) -> tuple[Callable[[str], Any], str]:
    if plain is int:
        return _number(int, "an integer"), "N"
    if plain is float:
        return _number(float, "a number"), "S" if name.endswith("_s") else "X"
    if get_origin(plain) is Literal:
        return str, "|".join(str(c) for c in get_args(plain))
    if plain is str:
        return str, "TEXT"
    if get_origin(plain) is list and get_args(plain) in ((str,), ()):
        return _comma_list, "A,B"
    raise TypeError(f"context field {name!r}: no flag for its type {plain!r}; declare parse= for it")


def _number(kind: type, what: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text.strip())
        except ValueError:
            raise ValueError(f"must be {what} (got {shown(text)})") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    return parse


def _plain(annotation: Any) -> Any:
    """``X`` of ``X | None`` / ``Optional[X]`` / ``Annotated[X, ...]``."""
    if hasattr(annotation, "__metadata__"):
        annotation = annotation.__origin__
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    return annotation


def _comma_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _checked(name: str, convert: Callable[[str], Any], *, each: bool = False) -> Callable[[str], Any]:
    """An argparse ``type``: ``convert(text)`` checked as the field's value (one line when not);
    ``each``: a repeated flag, each value an item of the field's list."""
    from ..config.context import field_problem

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        problem = field_problem(name, [value] if each else value)
        if problem:
            raise argparse.ArgumentTypeError(f"{problem} (got {shown(text)})")
        return value

    parse.__name__ = name
    return parse
