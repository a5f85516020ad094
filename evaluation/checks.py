"""The expectations of a case, checked against a run's result (:func:`check_result`).

A result is the run's ``--json`` object (cli/outcome.py ``result_json``: ``answer``,
``status``, ``structured_response``, ``tool_calls``, ``usage`` ...) plus ``workspace``.
Each check gives ``{"check", "passed", "detail"}``; ``judge`` (a model call) is
evaluation/judge.py."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..config.files import InputFileError, read_text_file

__all__ = ["SYNC_CHECKS", "args_match", "check_result", "target_text"]

Check = dict[str, Any]


def _texts(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _ok(name: str, passed: bool, detail: str = "") -> Check:
    return {"check": name, "passed": bool(passed), "detail": detail}


def _clip(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 3] + "...")


def target_text(result: Mapping[str, Any], on: str | None = None) -> str:
    """The text the text checks read: the answer, or the structured response as JSON
    (``on: structured_response``, or when the answer is empty)."""
    structured = result.get("structured_response")
    if on == "structured_response" or (not result.get("answer") and structured is not None):
        return json.dumps(structured, ensure_ascii=False, sort_keys=True) if structured is not None else ""
    return str(result.get("answer") or "")


def _contains(expected: Any, result: Mapping, on: str | None) -> Check:
    text = target_text(result, on)
    missing = [t for t in _texts(expected) if t.lower() not in text.lower()]
    return _ok("contains", not missing, f"no {_clip(missing[0])} in the answer {_clip(text)}" if missing else "")


def _not_contains(expected: Any, result: Mapping, on: str | None) -> Check:
    text = target_text(result, on)
    found = [t for t in _texts(expected) if t.lower() in text.lower()]
    return _ok("not_contains", not found, f"the answer has {_clip(found[0])}" if found else "")


def _regex(expected: Any, result: Mapping, on: str | None) -> Check:
    text = target_text(result, on)
    for pattern in _texts(expected):
        try:
            if not re.search(pattern, text):
                return _ok("regex", False, f"/{pattern}/ does not match the answer {_clip(text)}")
        except re.error as exc:
            return _ok("regex", False, f"/{pattern}/ is not a valid pattern ({exc})")
    return _ok("regex", True)


def _equals(expected: Any, result: Mapping, on: str | None) -> Check:
    structured = result.get("structured_response")
    if not isinstance(expected, str) or (on == "structured_response" and structured is not None):
        actual: Any = structured if structured is not None else _as_json(result.get("answer"))
        return _ok("equals", actual == expected, "" if actual == expected else f"got {_clip(json.dumps(actual))}")
    text = target_text(result, on).strip()
    return _ok("equals", text == expected.strip(), "" if text == expected.strip() else f"got {_clip(text)}")


def _as_json(text: Any) -> Any:
    try:
        return json.loads(str(text or ""))
    except json.JSONDecodeError:
        return text


def _json_schema(schema: Any, result: Mapping, on: str | None) -> Check:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError, best_match

    structured = result.get("structured_response")
    value = structured if structured is not None else _as_json(result.get("answer"))
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return _ok("json_schema", False, f"the expected schema is invalid: {exc.message}")
    err = best_match(Draft202012Validator(schema).iter_errors(value))
    if err is None:
        return _ok("json_schema", True)
    where = "/".join(str(p) for p in err.absolute_path) or "(root)"
    return _ok("json_schema", False, f"{where}: {' '.join(err.message.split())[:120]}")


def args_match(expected: Any, actual: Any) -> bool:
    """``expected`` is a subset of ``actual`` (dicts recursively; other values equal, and a
    string also equal to a number's or a value's JSON text)."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and args_match(v, actual[k]) for k, v in expected.items()
        )
    if expected == actual:
        return True
    return isinstance(actual, str) and not isinstance(expected, str) and actual.strip() == json.dumps(expected)


def _calls(result: Mapping) -> list[Mapping[str, Any]]:
    return [c for c in result.get("tool_calls") or [] if isinstance(c, Mapping)]


def _tools_called(expected: Any, result: Mapping, on: str | None) -> Check:
    calls = _calls(result)
    made = sorted({str(c.get("name")) for c in calls})
    for item in expected:
        name = item if isinstance(item, str) else item["name"]
        args = None if isinstance(item, str) else item.get("args")
        named = [c for c in calls if c.get("name") == name]
        if not named:
            return _ok("tools_called", False, f"{name} was not called (called: {', '.join(made) or 'none'})")
        if args is not None and not any(args_match(args, c.get("args") or {}) for c in named):
            got = json.dumps(named[0].get("args"), default=str)
            return _ok("tools_called", False, f"no {name} call with {json.dumps(args)} (got {_clip(got, 60)})")
    return _ok("tools_called", True)


def _tools_not_called(expected: Any, result: Mapping, on: str | None) -> Check:
    called = [n for n in expected if any(c.get("name") == n for c in _calls(result))]
    return _ok("tools_not_called", not called, f"{called[0]} was called" if called else "")


def tool_call_count(result: Mapping[str, Any]) -> int:
    """Tool executions of the run (retries and planner attempts included)."""
    made = result.get("tool_calls_made")
    return int(made) if isinstance(made, int) else len(_calls(result))


def _at_most(name: str, actual: int, limit: int) -> Check:
    return _ok(name, actual <= limit, f"{actual} > {limit}" if actual > limit else "")


def _max_tool_calls(limit: Any, result: Mapping, on: str | None) -> Check:
    return _at_most("max_tool_calls", tool_call_count(result), int(limit))


def _max_model_calls(limit: Any, result: Mapping, on: str | None) -> Check:
    return _at_most("max_model_calls", int((result.get("usage") or {}).get("model_calls") or 0), int(limit))


def _max_tokens(limit: Any, result: Mapping, on: str | None) -> Check:
    return _at_most("max_tokens", int((result.get("usage") or {}).get("total_tokens") or 0), int(limit))


def _status(expected: Any, result: Mapping, on: str | None) -> Check:
    status = result.get("status")
    detail = f"status {status}" + (f": {_clip(str(result.get('error')), 100)}" if result.get("error") else "")
    return _ok("status", status == expected, "" if status == expected else detail)


def _files(expected: Any, result: Mapping, on: str | None) -> Check:
    root = Path(str(result.get("workspace") or "."))
    for name, wanted in expected.items():
        path = root / name
        if not path.exists():
            return _ok("files", False, f"{name} does not exist in the workspace")
        try:  # a regular file, bounded (inputs.py): a FIFO or a device the run left there is a failed check
            content = read_text_file(path, what=name, errors="replace")
        except InputFileError as exc:
            return _ok("files", False, str(exc).replace(f"{name} {path}", name, 1))
        missing = [t for t in _texts(wanted) if t not in content]
        if missing:
            return _ok("files", False, f"{name} has no {_clip(missing[0])}")
    return _ok("files", True)


def _python(spec: Any, result: Mapping, on: str | None, case: Mapping[str, Any], base: str | None) -> Check:
    for one in _texts(spec):
        module_name, _, func_name = one.partition(":")
        try:
            if base and base not in sys.path:
                sys.path.insert(0, base)  # a check module beside the suite file
            func: Callable[..., Any] = getattr(importlib.import_module(module_name), func_name)
        except (ImportError, AttributeError) as exc:
            return _ok("python", False, f"{one}: cannot load it ({exc})")
        try:
            verdict = func(dict(result), dict(case))
        except Exception as exc:  # a check that raises fails the case, with its error
            return _ok("python", False, f"{one} raised {type(exc).__name__}: {exc}")
        passed, reason = _verdict(verdict)
        if not passed:
            return _ok("python", False, f"{one}: {reason}" if reason else f"{one} returned False")
    return _ok("python", True)


def _verdict(value: Any) -> tuple[bool, str]:
    """A custom check's return value: True/None pass; False fails; a string fails with that
    reason; ``(passed, reason)``."""
    if value is None or value is True:
        return True, ""
    if isinstance(value, str):
        return False, value
    if isinstance(value, tuple) and len(value) == 2:
        return bool(value[0]), str(value[1] or "")
    return bool(value), ""


SYNC_CHECKS: dict[str, Callable[[Any, Mapping, str | None], Check]] = {
    "status": _status,
    "contains": _contains,
    "not_contains": _not_contains,
    "regex": _regex,
    "equals": _equals,
    "json_schema": _json_schema,
    "tools_called": _tools_called,
    "tools_not_called": _tools_not_called,
    "max_tool_calls": _max_tool_calls,
    "max_model_calls": _max_model_calls,
    "max_tokens": _max_tokens,
    "files": _files,
}


def check_result(
    expect: Mapping[str, Any], result: Mapping[str, Any], case: Mapping[str, Any] | None = None,
    base: str | None = None,
) -> list[Check]:
    """Every expectation but ``judge``, in a fixed order. A run that failed or halted fails a
    case that does not expect that status."""
    on = expect.get("on")
    out = [check(expect[name], result, on) for name, check in SYNC_CHECKS.items() if name in expect]
    if "status" not in expect and result.get("status") not in ("completed", None):
        out.insert(0, _status("completed", result, on))
    if "python" in expect:
        out.append(_python(expect["python"], result, on, case or {}, base))
    return out
