"""References from step arguments to earlier step outputs.

Syntax (inside any string argument value, at any nesting depth of ``args``):

* ``"${s1}"`` – the whole value is step s1's output, with its JSON type kept;
* ``"${s1.key}"``, ``"${s1.items[0].title}"``, ``"${s1.items.0}"`` – a field of s1's
  JSON output (a dict/list, or a string holding JSON); keys and list indices nest;
* ``"Summary: ${s1.title} (${s2})"`` – inside a longer string a reference is
  interpolated as text (strings as they are, anything else as compact JSON);
* ``"$${s1}"`` – an escaped, literal ``${s1}``.

A reference makes the referring step depend on the referenced one. Resolution is
pure: the same outputs always give the same arguments.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

_ID = r"[A-Za-z_][A-Za-z0-9_-]{0,63}"
_PATH = r"(?:\.[^.\[\]{}$\s]+|\[\d+\])*"
# Group 1: an escaped "$${"; groups 2/3: the step id and the path of a reference.
REF_RE = re.compile(rf"(\$\$\{{)|\$\{{({_ID})({_PATH})\}}")
_ANY_PLACEHOLDER = re.compile(r"(?<!\$)\$\{[^}]*\}?")
_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


class ReferenceResolutionError(ValueError):
    """A reference cannot be resolved against the actual outputs (missing key, bad index...)."""


@dataclass(frozen=True)
class Ref:
    step: str
    path: tuple[str | int, ...]
    text: str  # the reference as written, e.g. "${s1.items[0]}"


def _parse_path(path: str) -> tuple[str | int, ...]:
    out: list[str | int] = []
    for key, index in _SEGMENT.findall(path):
        out.append(int(index) if index else key)
    return tuple(out)


def refs_in_string(text: str) -> list[Ref]:
    return [
        Ref(m.group(2), _parse_path(m.group(3)), m.group(0))
        for m in REF_RE.finditer(text)
        if not m.group(1)
    ]


def _walk_strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _walk_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _walk_strings(v)


def find_refs(value: Any) -> list[Ref]:
    """Every reference in a (nested) argument value, in order of appearance."""
    return [ref for s in _walk_strings(value) for ref in refs_in_string(s)]


def referenced_steps(value: Any) -> list[str]:
    """Ids of the steps referenced by a value, first appearance order, no duplicates."""
    return list(dict.fromkeys(ref.step for ref in find_refs(value)))


def has_ref(value: Any) -> bool:
    return bool(find_refs(value))


def malformed_placeholders(value: Any) -> list[str]:
    """``${...}`` fragments that are not valid references (a typo the model should fix)."""
    bad: list[str] = []
    for s in _walk_strings(value):
        stripped = REF_RE.sub("", s)
        bad.extend(m.group(0) for m in _ANY_PLACEHOLDER.finditer(stripped))
    return bad


def exact_ref(text: str) -> Ref | None:
    """The reference when the whole string is exactly one reference."""
    m = REF_RE.fullmatch(text)
    if m and not m.group(1):
        return Ref(m.group(2), _parse_path(m.group(3)), m.group(0))
    return None


def _as_json(value: Any) -> Any:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") or stripped in ("true", "false", "null"):
            try:
                return json.loads(stripped)
            except ValueError:
                return value
    return value


def lookup(output: Any, path: tuple[str | int, ...], *, ref_text: str = "") -> Any:
    """Follow ``path`` into a step output (parsing JSON text where needed)."""
    current = output
    walked = ""
    for segment in path:
        current = _as_json(current)
        if isinstance(current, dict):
            key = str(segment)
            if key not in current:
                keys = ", ".join(list(map(str, current))[:20]) or "(none)"
                raise ReferenceResolutionError(
                    f"{ref_text}: the output{walked} has no key {key!r} (keys: {keys})"
                )
            current = current[key]
            walked += f".{key}"
        elif isinstance(current, list):
            try:
                index = int(segment)
            except (TypeError, ValueError):
                raise ReferenceResolutionError(
                    f"{ref_text}: the output{walked} is a list; {segment!r} is not an index"
                ) from None
            if not -len(current) <= index < len(current):
                raise ReferenceResolutionError(
                    f"{ref_text}: index {index} is out of range for the output{walked} (length {len(current)})"
                )
            current = current[index]
            walked += f"[{index}]"
        else:
            kind = "text that is not JSON" if isinstance(current, str) else type(current).__name__
            raise ReferenceResolutionError(
                f"{ref_text}: cannot take {segment!r} of the output{walked}: it is {kind}"
            )
    return current


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _value_of(ref: Ref, outputs: dict[str, Any]) -> Any:
    if ref.step not in outputs:
        raise ReferenceResolutionError(f"{ref.text}: step {ref.step!r} has no output")
    return lookup(outputs[ref.step], ref.path, ref_text=ref.text)


def resolve_string(text: str, outputs: dict[str, Any]) -> Any:
    ref = exact_ref(text)
    if ref is not None:
        return copy.deepcopy(_value_of(ref, outputs))

    def sub(m: re.Match) -> str:
        if m.group(1):
            return "${"
        return as_text(_value_of(Ref(m.group(2), _parse_path(m.group(3)), m.group(0)), outputs))

    return REF_RE.sub(sub, text)


def resolve(value: Any, outputs: dict[str, Any]) -> Any:
    """``value`` with every reference replaced from ``outputs`` (step id -> output)."""
    if isinstance(value, str):
        return resolve_string(value, outputs)
    if isinstance(value, dict):
        return {k: resolve(v, outputs) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(v, outputs) for v in value]
    return value
