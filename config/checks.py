"""Type-driven checks of run-configuration values (the fields of ``context.Context``).

A value is checked against its field's annotation, so a new field is type-checked
without new code: booleans are real booleans (never the string "false", whose
``bool()`` is true), integers are not booleans or floats, numbers are finite and
inside the field's bounds, text carries no NUL byte and no lone surrogate (it
reaches files, SQLite and HTTP), lists hold strings, ``Literal`` fields hold one of
their values. Environment variables go through :func:`env_value` (the same types,
strict booleans, no nan) and command-line numbers through the same bounds.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import operator
import re
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

from ..runs.events import clip
from ..runs.identity import IdentityCache
from . import settings

__all__ = [
    "APPROVE_NONE", "APPROVE_SIDE_EFFECTS", "DECISIONS", "DEFAULT_DECISIONS", "approve_rules", "approve_tokens",
    "approve_valid", "comma_names",
    "env_field", "env_value", "checked_once", "field_value_problem", "model_spec_valid", "parse_bool", "shown",
    "text_problem", "unchanged", "value_problem", "values_snapshot",
]

TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})
#: Longest text field (a system prompt of a few hundred pages) and longest list field.
MAX_TEXT_CHARS = 1_000_000
MAX_LIST_ITEMS = 1_000

Bounds = Mapping[str, tuple[float, float]]
Rule = tuple[Callable[[Any], bool], str]

APPROVE_NONE = "none"
APPROVE_SIDE_EFFECTS = "side-effects"
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


#: What a person may decide about a call that waits for approval (LangChain's HITL decisions).
DECISIONS = ("approve", "edit", "reject", "respond")
#: The decisions of an ``approve`` entry that names none.
DEFAULT_DECISIONS = ("approve", "edit", "reject")


def approve_rules(value: str) -> dict[str, tuple[str, ...]]:
    """The entries of an ``approve`` setting, each a tool name (or 'side-effects') and the
    decisions a person may take about its calls: ``NAME`` (approve, edit or reject) or
    ``NAME=DECISION/DECISION`` (a subset of approve, edit, reject, respond). 'none' -> {}."""
    rules: dict[str, tuple[str, ...]] = {}
    for part in (p.strip() for p in value.split(",")):
        if not part or part == APPROVE_NONE:
            continue
        name, eq, decisions = part.partition("=")
        chosen = tuple(d.strip() for d in decisions.split("/") if d.strip()) if eq else DEFAULT_DECISIONS
        rules[name.strip()] = chosen
    return rules


def approve_tokens(value: str) -> list[str]:
    """The tool names (and 'side-effects') of an ``approve`` setting: 'none' -> []."""
    return list(approve_rules(value))


def approve_valid(value: str) -> bool:
    """'none', 'side-effects', or a comma list of tool names (which may include 'side-effects'),
    each optionally ``=DECISION/DECISION`` (approve, edit, reject, respond; none twice)."""
    parts = [p.strip() for p in value.split(",")]
    if parts == [APPROVE_NONE]:
        return True
    for part in parts:
        name, eq, decisions = part.partition("=")
        if not TOOL_NAME.fullmatch(name.strip()):
            return False
        chosen = [d.strip() for d in decisions.split("/")] if eq else []
        if eq and (not all(d in DECISIONS for d in chosen) or len(set(chosen)) != len(chosen)):
            return False
    return True


def model_spec_valid(value: str) -> bool:
    """``value`` is a ``provider:model`` spec: a provider and a model name around a colon."""
    provider, colon, model = value.partition(":")
    return bool(colon and provider.strip() and model.strip())


def shown(value: Any, n: int = 60) -> str:
    """A short ``repr`` of an untrusted value for an error message (one line)."""
    return clip(repr(value), n)


def parse_bool(value: Any, what: str) -> bool:
    """``value`` as a boolean: True/False, or (case-insensitive) true/false, 1/0, yes/no,
    on/off as text. Anything else is a ``ValueError`` naming ``what``."""
    if value is True or value is False:
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    raise ValueError(f"{what} must be true or false (got {shown(value)})")


def text_problem(value: str) -> str | None:
    """Why a text cannot be used as a setting (None when it can)."""
    if "\x00" in value:
        return "contains a NUL byte"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8 text (it contains a lone surrogate, e.g. from undecodable bytes)"
    if len(value) > MAX_TEXT_CHARS:
        return f"is longer than {MAX_TEXT_CHARS} characters"
    return None


def _optional(hint: Any) -> tuple[Any, bool]:
    """``(X, True)`` for ``X | None``; ``(hint, False)`` otherwise."""
    if get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return rest[0], len(rest) < len(get_args(hint))
    return hint, False


def _range_problem(name: str, value: float, kind: str, bounds: Bounds) -> str | None:
    if name not in bounds:
        return f"{name} has no bounds (declare them with setting(..., bounds=...): a programming error)"
    low, high = bounds[name]
    if low <= value <= high:
        return None
    return f"{name} must be {kind} from {low} to {high} (got {shown(value)})"


@functools.lru_cache(maxsize=512)
def _shape(hint: Any) -> tuple[Any, bool, Any, tuple[Any, ...]]:
    """``(type, optional, origin, args)`` of an annotation (the same few for every run's context)."""
    hint, optional = _optional(hint)
    return hint, optional, get_origin(hint), get_args(hint)


def value_problem(name: str, hint: Any, value: Any, bounds: Bounds) -> str | None:
    """Why ``value`` does not fit field ``name`` annotated ``hint`` (None when it fits)."""
    try:
        hint, optional, origin, args = _shape(hint)
    except TypeError:  # an unhashable annotation
        hint, optional = _optional(hint)
        origin, args = get_origin(hint), get_args(hint)
    if value is None and optional:
        return None
    if origin is Literal:
        ok = any(type(value) is type(a) and value == a for a in args)
        return None if ok else f"{name} must be one of {', '.join(map(repr, args))} (got {shown(value)})"
    if hint is bool:
        return None if value is True or value is False else f"{name} must be true or false (got {shown(value)})"
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{name} must be an integer (got {shown(value)})"
        return _range_problem(name, value, "an integer", bounds)
    if hint is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return f"{name} must be a finite number (got {shown(value)})"
        return _range_problem(name, value, "a number", bounds)
    if hint is str:
        if not isinstance(value, str):
            return f"{name} must be a string (got {shown(value)})"
        problem = text_problem(value)
        return f"{name} {problem}" if problem else None
    if origin is list and args == (str,):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"{name} must be a list of strings (got {shown(value)})"
        if len(value) > MAX_LIST_ITEMS:
            return f"{name} has more than {MAX_LIST_ITEMS} items"
        problems = [p for p in map(text_problem, value) if p]
        return f"{name} has an item that {problems[0]}" if problems else None
    if origin is dict and args[:1] == (str,):
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            return f"{name} must be a JSON object (got {shown(value)})"
        return None
    return f"{name} has a type the validator does not know ({hint!r}): add it to context_types.value_problem"


def env_value(hint: Any, raw: str, variable: str) -> Any:
    """The text of environment variable ``variable`` converted to the type ``hint``
    (``ValueError`` naming the variable when it cannot be)."""
    hint, _ = _optional(hint)
    origin = get_origin(hint)
    try:
        if hint is bool:
            return parse_bool(raw, variable)
        if hint is int:
            return int(raw.strip())
        if hint is float:
            number = float(raw.strip())
            if not math.isfinite(number):
                raise ValueError("not a finite number")
            return number
        if origin is list:
            return [item.strip() for item in raw.split(",") if item.strip()]
        if origin is dict:
            return json.loads(raw)
    except ValueError as exc:
        if str(exc).startswith(variable):
            raise
        raise ValueError(f"{variable} must be {_kind(hint)} (got {shown(raw)})") from None
    return raw


def _kind(hint: Any) -> str:
    return {bool: "true or false", int: "an integer", float: "a finite number"}.get(hint, "a JSON object")


def field_value_problem(
    name: str, hint: Any, value: Any, bounds: tuple[float, float] | None = None, rule: Rule | None = None
) -> str | None:
    """Why ``value`` cannot be context field ``name`` of type ``hint`` (None when it can): its type,
    its ``bounds`` (a number's inclusive range) and its ``rule`` (``config/fields.py`` declares both)."""
    problem = value_problem(name, hint, value, {name: bounds} if bounds is not None else {})
    if problem is None and rule is not None and not rule[0](value):
        problem = f"{name} must be {rule[1]} (got {shown(value)})"
    return problem


def env_field(
    name: str, hint: Any, default: Any, bounds: tuple[float, float] | None = None, rule: Rule | None = None
) -> Any:
    """``SMART_AGENT_<NAME>`` converted to ``hint`` and checked like field ``name`` (an
    unusable value is a ``ValueError`` naming the variable); ``default`` when unset or empty."""
    variable, raw = settings.field_env(name)
    if raw is None:
        return default
    value = env_value(hint, raw, variable)
    problem = field_value_problem(name, hint, value, bounds, rule)
    if problem:
        raise ValueError(f"{variable}: {problem}")
    return value


def comma_names(what: str, empty: str) -> Callable[[str], list[str]]:
    """A flag's text as a comma list of names, each valid text; no name at all is refused with
    ``empty`` (what to do instead): an empty list may mean something else (every tool)."""

    def parse(text: str) -> list[str]:
        names = [t.strip() for t in text.split(",") if t.strip()]
        if not names:
            raise ValueError(f"no {what} given ({empty})")
        for name in names:
            problem = text_problem(name)
            if problem:
                raise ValueError(f"the {what} {shown(name)} {problem}")
        return names

    parse.__name__ = what.replace(" ", "_") + "s"
    return parse


# -- a context's values, to check a context again only when one changed ----------------------
#: The value types a snapshot holds: immutable ones, and lists of strings kept as their items. A
#: context holding anything else (a dict: output_schema, a list of other things) has none.
_SNAPSHOT_TYPES = frozenset({str, int, float, bool, type(None), list})

Snapshot = tuple[type, tuple[Any, ...], tuple[tuple[int, tuple[Any, ...]], ...]]


_FIELD_VALUES: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _field_values(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """The values of a dataclass's fields, in order, as one tuple (one getter per class)."""
    get = _FIELD_VALUES.get(cls)
    if get is None:
        names = [f.name for f in dataclasses.fields(cls)]
        one = operator.attrgetter(*names)
        get = _FIELD_VALUES[cls] = one if len(names) > 1 else lambda obj: (one(obj),)
    return get


def values_snapshot(ctx: Any) -> Snapshot | None:
    """What a context's fields hold now, for :func:`unchanged`: its class, the value objects and
    the items of its lists (a list changed in place is the same object), by position. None when
    a value may change in place otherwise (a dict, any other type): then there is nothing to keep."""
    values = _field_values(type(ctx))(ctx)
    if not _SNAPSHOT_TYPES.issuperset(map(type, values)):
        return None
    lists = tuple((i, tuple(v)) for i, v in enumerate(values) if type(v) is list)
    if any(type(item) is not str for _, items in lists for item in items):
        return None
    return type(ctx), values, lists


def unchanged(ctx: Any, snapshot: Snapshot) -> bool:
    """Whether ``ctx`` holds the very objects of ``snapshot`` (by identity: ``1 == 1.0 == True``,
    and an int field holding ``True`` is a problem; an equal value put back counts as a change),
    its lists the same items."""
    cls, values, lists = snapshot
    if type(ctx) is not cls:
        return False
    now = _field_values(cls)(ctx)
    return all(map(operator.is_, now, values)) and all(
        len(now[i]) == len(items) and all(map(operator.is_, now[i], items)) for i, items in lists
    )


# Per context object: (its values' snapshot, the check, the problems found) when last checked.
_checked: IdentityCache[Any, list[Any]] = IdentityCache(lambda ctx: [None], 1024)


def checked_once(ctx: Any, check: Callable[[Any], list[str]]) -> list[str]:
    """``check(ctx)`` (the problems of a context's values), remembered for the context object
    until one of its values changes (:func:`unchanged`); a context holding a value of another type
    than :func:`values_snapshot` keeps is checked every time. ``check`` must depend on the values
    alone."""
    cell = _checked(ctx)
    seen = cell[0]
    if seen is not None and seen[1] is check and unchanged(ctx, seen[0]):
        return list(seen[2])
    snapshot = values_snapshot(ctx)
    errors = check(ctx)
    if snapshot is not None:
        cell[0] = (snapshot, check, tuple(errors))
    return errors
