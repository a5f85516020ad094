"""JSON out of model text: where it is, how big it may be, and the usual slips repaired.

Models wrap JSON in prose or code fences and make small syntax mistakes.
``extract_json`` tries the candidates (fenced blocks, then the first balanced
``{...}``/``[...]``, then the whole text) strictly first; then, with ``repair``, through
the ``json-repair`` library (comments, trailing commas, single and typographic quotes,
Python / JS literals, unquoted keys, missing commas, a reply cut short). A repair never
swallows text it does not understand: a candidate with a character outside strings and
comments that no such slip explains (``@``, ``;``, ``=>``...), or whose repair changes
``{...}`` into a list, is left to the parser, whose error goes back to the model.

Every text is checked for size and depth first (``json_depth_problem``), so a
100k-deep reply is a validation error, not a ``RecursionError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

MAX_JSON_DEPTH = 64
MAX_JSON_CHARS = 2_000_000
# json-repair is pure Python (about 3 s a megabyte): longer text is parsed strictly only.
REPAIR_MAX_CHARS = 200_000

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[^\n]*\n(.*?)```", re.DOTALL)
_FENCE_LANGS = ("", "json", "json5", "jsonc", "javascript", "js", "python", "py")
# Outside strings and comments, a repairable candidate holds only these (and letters,
# digits, white space): brackets, separators, numbers, bare words, Python tuples.
_SLIP_CHARS = frozenset("{}[]():,.+-_$")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


class JSONLimitError(ValueError):
    """JSON text too large or nested too deeply to be parsed safely."""


class ReplySyntaxError(ValueError):
    """No JSON value could be read from a model's reply."""


def json_depth_problem(text: str, max_depth: int = MAX_JSON_DEPTH, max_chars: int = MAX_JSON_CHARS) -> str | None:
    """Why ``text`` must not be parsed (too long, or brackets nested deeper than ``max_depth``
    outside double-quoted strings), else None. One linear pass, no recursion. (Callers
    still catch RecursionError: an unmatched quote in prose can hide brackets.)"""
    if len(text) > max_chars:
        return f"the JSON is too long ({len(text)} characters; at most {max_chars})"
    depth = 0
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch == '"':
            quote = ch
        elif ch in "{[":
            depth += 1
            if depth > max_depth:
                return f"the JSON is nested too deeply (more than {max_depth} levels)"
        elif ch in "}]":
            depth = max(0, depth - 1)
    return None


def value_depth_problem(value: Any, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """The same limit for an already parsed value (e.g. tool-call arguments), iteratively."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                return f"the JSON is nested too deeply (more than {max_depth} levels)"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return None


def loads_bounded(text: str) -> Any:
    """``json.loads`` after the size and depth check (raises JSONLimitError, a ValueError)."""
    problem = json_depth_problem(text)
    if problem:
        raise JSONLimitError(problem)
    return json.loads(text)


# -- where the JSON is -------------------------------------------------------------------
def candidates(text: str) -> list[str]:
    """Possible JSON snippets in a reply, most likely first."""
    out = [body.strip() for lang, body in _FENCE.findall(text) if lang.lower() in _FENCE_LANGS]
    starts = sorted(i for i in (text.find("{"), text.find("[")) if i != -1)
    out.extend(_balanced(text, start) for start in starts)
    out.append(text.strip())
    return list(dict.fromkeys(c for c in out if c))


def _skip_string(text: str, i: int) -> int:
    """The index after the string that starts with the quote at ``i`` (or the end)."""
    quote, i = text[i], i + 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _balanced(text: str, start: int) -> str:
    """From ``start`` to the matching bracket (or the end when it never closes)."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i = _skip_string(text, i)
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return text[start:]


def unexplained_character(text: str) -> str | None:
    """The first character outside strings and comments that no repairable slip explains."""
    text = text.translate(_QUOTES)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i = _skip_string(text, i)
            continue
        if ch == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end == -1 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end == -1 else end + 2
        elif ch.isalnum() or ch.isspace() or ch in _SLIP_CHARS:
            i += 1
        else:
            return ch
    return None


# -- reading it ----------------------------------------------------------------------------
def _where(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} at line {exc.lineno} column {exc.colno}"


def loads_strict(text: str) -> Any:
    """``json.loads``; raises ReplySyntaxError ``not valid JSON: <why> at line L column C``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplySyntaxError(f"not valid JSON: {_where(exc)}") from None
    except RecursionError:
        raise ReplySyntaxError("not valid JSON: nested too deeply") from None


def repair_json(text: str) -> str:
    """``text`` with the usual slips repaired, as JSON text (``json-repair``)."""
    from json_repair import repair_json as repair

    return str(repair(text, ensure_ascii=False))


def loads_lenient(text: str) -> Any:
    """Parse JSON, repairing it when needed; raises ReplySyntaxError ``invalid JSON: ...``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = _where(exc) if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
    stray = unexplained_character(text) if len(text) <= REPAIR_MAX_CHARS else "(too long to repair)"
    if stray is None:
        from json_repair import repair_json as repair

        try:
            value = repair(text, return_objects=True, skip_json_loads=True)
        except (ValueError, RecursionError):
            value = None
        opened = text.lstrip()[:1]
        if value != "" and (opened != "{" or isinstance(value, dict)) and (opened != "[" or isinstance(value, list)):
            return value
    raise ReplySyntaxError(f"invalid JSON: {why}")


def _bounded(value: Any) -> Any:
    problem = value_depth_problem(value)  # a repaired value can be deeper than its text showed
    if problem:
        raise ReplySyntaxError(problem)
    return value


def extract_json(text: str, *, repair: bool = True, prefer: Callable[[Any], bool] | None = None) -> Any:
    """The JSON value in a model reply; raises ReplySyntaxError with a reason for the model.

    Strictly valid candidates win over repaired ones; within either, the first value
    ``prefer`` accepts wins over the others (the first one when none is preferred).
    Without ``repair`` the error is the parser's, for the most likely candidate
    (``not valid JSON: ...``); with it, ``invalid JSON: ...``.
    """
    if not text or not text.strip():
        raise ReplySyntaxError("the reply is empty: no JSON found")
    problem = json_depth_problem(text)  # before any parser can recurse that deep
    if problem:
        raise ReplySyntaxError(problem)
    cands = candidates(text)
    errors: list[str] = []
    passes = (loads_strict, loads_lenient) if repair else (loads_strict,)
    for parse in passes:
        values: list[Any] = []
        for cand in cands:
            try:
                values.append(parse(cand))
            except ReplySyntaxError as exc:
                errors.append(str(exc))
        preferred = [v for v in values if prefer is None or prefer(v)]
        if preferred or (values and parse is passes[-1]):
            return _bounded((preferred or values)[0])
    if repair and "{" not in text and "[" not in text:
        raise ReplySyntaxError("no JSON object found in the reply")
    lenient = [e for e in errors if e.startswith("invalid JSON")]
    raise ReplySyntaxError(lenient[0] if lenient else errors[0])


def parse_json_answer(text: str) -> tuple[Any, str | None]:
    """The JSON value of a final answer, read strictly (code fences and surrounding prose
    tolerated, nothing repaired): ``(value, None)``, or ``(None, why)``."""
    if not (text or "").strip():
        return None, "the answer is empty; expected a JSON object"
    try:
        return extract_json(text, repair=False), None
    except ReplySyntaxError as exc:
        return None, str(exc)
