"""Find a JSON plan in model text and repair the usual slips.

Models wrap JSON in prose or code fences and make small syntax mistakes. This
module extracts the candidate (fenced block first, then the first balanced
``{...}``/``[...]``) and, when ``json.loads`` fails, repairs it in one pass that
knows where strings are:

* ``//`` and ``/* */`` comments, and ``#`` comments at the start of a line;
* trailing commas before ``}`` / ``]``;
* single-quoted strings and typographic quotes;
* Python / JS literals ``True False None undefined`` (outside strings);
* unquoted object keys (``{steps: [...]}``);
* missing commas between ``}``/``]``/strings/numbers that end a value and the next value;
* unbalanced trailing brackets (a reply cut short).

Everything else is left to the parser, whose error message goes back to the model.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from ...replies import json_depth_problem, value_depth_problem

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[^\n]*\n(.*?)```", re.DOTALL)
_LITERALS = {"True": "true", "False": "false", "None": "null", "undefined": "null", "NaN": "null"}
_QUOTES = {"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"}


class PlanSyntaxError(ValueError):
    """No JSON object could be read from the model's reply."""


def candidates(text: str) -> list[str]:
    """Possible JSON snippets in a reply, most likely first."""
    out: list[str] = []
    for lang, body in _FENCE.findall(text):
        if lang.lower() in ("", "json", "json5", "jsonc", "javascript", "js", "python", "py"):
            out.append(body.strip())
    starts = sorted(i for i in (text.find("{"), text.find("[")) if i != -1)
    out.extend(_balanced(text, start) for start in starts)
    stripped = text.strip()
    if stripped:
        out.append(stripped)
    return list(dict.fromkeys(c for c in out if c))


def _balanced(text: str, start: int) -> str:
    """From ``start`` to the matching bracket (or the end when it never closes)."""
    depth = 0
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return text[start:]


def repair_json(text: str) -> str:
    """One string-aware pass over ``text`` that fixes common JSON slips."""
    for bad, good in _QUOTES.items():
        text = text.replace(bad, good)
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(text)
    prev_value_end = False  # last significant token ended a value

    def emit_value_start() -> None:
        nonlocal prev_value_end
        if prev_value_end and stack:
            out.append(",")  # missing comma between two values
        prev_value_end = False

    while i < n:
        ch = text[i]
        # comments
        if ch == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
            continue
        if ch == "#" and not text[text.rfind("\n", 0, i) + 1 : i].strip():
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch in " \t\r\n":
            out.append(ch)
            i += 1
            continue
        if ch in "\"'":
            emit_value_start()
            quote = ch
            j = i + 1
            buf: list[str] = []
            while j < n:
                c = text[j]
                if c == "\\" and j + 1 < n:
                    nxt = text[j + 1]
                    if quote == "'" and nxt == "'":
                        buf.append("'")
                    else:
                        buf.append(c + nxt)
                    j += 2
                    continue
                if c == quote:
                    break
                if c == '"' and quote == "'":
                    buf.append('\\"')
                elif c == "\n":
                    buf.append("\\n")
                elif c == "\t":
                    buf.append("\\t")
                else:
                    buf.append(c)
                j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
            prev_value_end = True
            continue
        if ch in "{[":
            emit_value_start()
            stack.append("}" if ch == "{" else "]")
            out.append(ch)
            i += 1
            continue
        if ch in "}]":
            _drop_trailing_comma(out)
            if stack:
                stack.pop()
            out.append(ch)
            i += 1
            prev_value_end = True
            continue
        if ch == ",":
            if prev_value_end:
                out.append(ch)
            prev_value_end = False
            i += 1
            continue
        if ch == ":":
            out.append(ch)
            prev_value_end = False
            i += 1
            continue
        m = re.match(r"[A-Za-z_$][A-Za-z0-9_$-]*", text[i:])
        if m:
            word = m.group(0)
            j = i + len(word)
            k = j
            while k < n and text[k] in " \t":
                k += 1
            emit_value_start()
            if k < n and text[k] == ":":
                out.append(json.dumps(word))  # unquoted key
                prev_value_end = False
            else:
                out.append(_LITERALS.get(word, word if word in ("true", "false", "null") else json.dumps(word)))
                prev_value_end = True
            i = j
            continue
        m = re.match(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", text[i:])
        if m:
            emit_value_start()
            out.append(m.group(0))
            i += len(m.group(0))
            prev_value_end = True
            continue
        out.append(ch)
        i += 1
    _drop_trailing_comma(out)
    out.extend(reversed(stack))  # close what a truncated reply left open
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    k = len(out) - 1
    while k >= 0 and out[k].isspace():
        k -= 1
    if k >= 0 and out[k] == ",":
        del out[k]


# ast.literal_eval builds only literals, but parses the whole text first: keep it bounded.
LITERAL_MAX_CHARS = 200_000


def loads_lenient(text: str) -> Any:
    """Parse JSON, repairing it when needed; raises PlanSyntaxError with the parser's reason."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        first_error = exc
    try:
        return json.loads(repair_json(text))
    except (ValueError, RecursionError):
        pass
    try:  # a Python literal (dict repr) is a common last resort; literals only, never code
        if len(text) > LITERAL_MAX_CHARS:
            raise ValueError("too long for the Python-literal fallback")
        value = ast.literal_eval(text)
        json.dumps(value)
        return value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    raise PlanSyntaxError(f"invalid JSON: {first_error}")


def _looks_like_plan(value: Any) -> bool:
    if isinstance(value, dict):
        return "steps" in value or "plan" in value
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _bounded(value: Any) -> Any:
    problem = value_depth_problem(value)  # a repaired value can be deeper than its text showed
    if problem:
        raise PlanSyntaxError(problem)
    return value


def extract_json(text: str) -> Any:
    """The JSON value of a model reply (repaired if needed).

    Strictly valid candidates win over repaired ones; among either, a plan-shaped
    value (an object with ``steps``, or a list of objects) wins over other values.
    """
    if not text or not text.strip():
        raise PlanSyntaxError("the reply is empty: no plan found")
    problem = json_depth_problem(text)  # before any parser can recurse that deep
    if problem:
        raise PlanSyntaxError(problem)
    cands = candidates(text)
    errors: list[str] = []
    for parse in (json.loads, loads_lenient):
        parsed: list[Any] = []
        for cand in cands:
            try:
                parsed.append(parse(cand))
            except (ValueError, PlanSyntaxError) as exc:
                errors.append(str(exc))
            except RecursionError:
                errors.append("invalid JSON: nested too deeply")
        for value in parsed:
            if _looks_like_plan(value):
                return _bounded(value)
        if parsed and parse is loads_lenient:
            return _bounded(parsed[0])
    if "{" not in text and "[" not in text:
        raise PlanSyntaxError("no JSON object found in the reply")
    lenient = [e for e in errors if e.startswith("invalid JSON")]
    raise PlanSyntaxError(lenient[0] if lenient else errors[0])
