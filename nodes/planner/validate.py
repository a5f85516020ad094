"""Plan validation: everything that can be checked before a step runs.

``validate_plan`` collects *all* problems in one pass (so the model can fix them
in one attempt): JSON syntax, schema, duplicate ids, unknown tools, invalid
arguments (checked against the tool's argument schema; reference placeholders
count as valid values), malformed placeholders, unknown / self / failed
dependencies, references to steps that are not ancestors, and cycles.

On success the plan comes back normalised: every step's ``depends_on`` also
lists the steps its arguments reference (a reference implies a dependency).
"""

from __future__ import annotations

import difflib
import graphlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ValidationError

from ...replies.guard import clip_tool_name
from ...replies.parse import ReplySyntaxError, extract_json
from ...tools.registry import ToolRegistry
from .refs import find_refs, has_ref, malformed_placeholders
from .schema import MAX_STEPS, Plan, Step


@dataclass
class ValidationResult:
    plan: Plan | None
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.errors

    @property
    def valid_plan(self) -> Plan | None:
        """The plan when it passed every check, else None."""
        return self.plan if not self.errors else None


def _loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(value)"


def looks_like_plan(value: Any) -> bool:
    """An object with ``steps`` (or ``plan``), or a non-empty list of objects (the steps)."""
    if isinstance(value, dict):
        return "steps" in value or "plan" in value
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def coerce_plan_payload(raw: Any) -> Any:
    """Text, a list of steps or ``{"plan": ...}`` -> the plan object to validate."""
    if isinstance(raw, Plan):
        return raw.model_dump()
    if isinstance(raw, (str, bytes)):
        raw = extract_json(raw.decode() if isinstance(raw, bytes) else raw, prefer=looks_like_plan)
    if isinstance(raw, list):
        return {"steps": raw}
    if isinstance(raw, dict) and "steps" not in raw and "plan" in raw:
        inner = raw["plan"]
        return coerce_plan_payload(inner)
    return raw


# -- arguments -----------------------------------------------------------------
def _value_at(args: Any, loc: tuple[Any, ...]) -> tuple[bool, Any]:
    """Whether some value on the path ``loc`` into ``args`` holds a reference."""
    current = args
    for part in loc:
        if isinstance(current, str):
            break
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and -len(current) <= part < len(current)
        if not (in_dict or in_list):
            return False, None
        current = current[part]
        if isinstance(current, str) and has_ref(current):
            return True, current
    return (isinstance(current, str) and has_ref(current)), current


def validate_args(tool: BaseTool, args: dict[str, Any]) -> list[str]:
    """Problems with ``args`` for ``tool``; values holding a reference are accepted as-is."""
    try:
        schema = tool.tool_call_schema
    except Exception as exc:  # a tool whose schema cannot be built: let it run and fail
        return [f"cannot read the argument schema ({exc})"]
    problems: list[str] = []
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        names = set()
        for fname, finfo in schema.model_fields.items():
            names.add(fname)
            if finfo.alias:
                names.add(finfo.alias)
        unknown = [k for k in args if k not in names]
        for k in unknown:
            problems.append(f"unknown argument {k!r} (expected: {', '.join(sorted(names)) or 'no arguments'})")
        try:
            schema.model_validate(args)
        except ValidationError as exc:
            for err in exc.errors():
                loc = tuple(err.get("loc", ()))
                if loc and loc[0] in unknown:
                    continue
                is_ref, _ = _value_at(args, loc)
                if is_ref:
                    continue
                where = _loc(loc)
                if err.get("type") == "missing":
                    problems.append(f"missing required argument {where!r}")
                else:
                    problems.append(f"invalid argument {where!r}: {err.get('msg')}")
        return problems
    if isinstance(schema, dict):
        props = schema.get("properties") or {}
        if props and schema.get("additionalProperties") is not True:
            for k in args:
                if k not in props:
                    problems.append(f"unknown argument {k!r} (expected: {', '.join(sorted(props))})")
        for k in schema.get("required") or []:
            if k not in args:
                problems.append(f"missing required argument {k!r}")
        try:
            import jsonschema
        except ImportError:  # pragma: no cover - jsonschema ships with the dev tools
            return problems
        validator = jsonschema.Draft202012Validator(schema)
        for err in validator.iter_errors(args):
            loc = tuple(err.absolute_path)
            if err.validator in ("required", "additionalProperties"):
                continue
            if _value_at(args, loc)[0]:
                continue
            problems.append(f"invalid argument {_loc(loc)!r}: {err.message}")
    return problems


# -- graph ---------------------------------------------------------------------
def _descendants(edges: Mapping[str, list[str]], start: str) -> set[str]:
    """Steps that (transitively) depend on ``start``; ``edges`` maps step -> its dependencies."""
    children: dict[str, list[str]] = {}
    for node, deps in edges.items():
        for d in deps:
            children.setdefault(d, []).append(node)
    seen: set[str] = set()
    stack = [start]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def find_cycles(order: list[str], edges: Mapping[str, list[str]]) -> list[list[str]]:
    """Cycles as closed paths ``[a, b, ..., a]`` in ``a depends on b`` direction, one per cyclic
    group (strongly connected steps), each starting at its earliest step in ``order``."""
    rank = {v: i for i, v in enumerate(order)}
    graph = {v: sorted((d for d in edges.get(v, []) if d in rank), key=rank.__getitem__) for v in order}
    cycles: list[list[str]] = []
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            return sorted(cycles, key=lambda c: rank[c[0]])
        except graphlib.CycleError as exc:
            found = list(reversed(exc.args[1][1:]))  # graphlib lists predecessors first: a depends on b
        start = min(range(len(found)), key=lambda i: rank[found[i]])
        cycle = found[start:] + found[:start]
        cycles.append([*cycle, cycle[0]])
        dependents = {v: [u for u, deps in graph.items() if v in deps] for v in graph}
        group = _descendants(graph, cycle[0]) & _descendants(dependents, cycle[0])  # its strongly connected steps
        graph = {v: [d for d in deps if d not in group] for v, deps in graph.items() if v not in group}


def validate_plan(
    raw: Any,
    registry: ToolRegistry,
    *,
    finished: Iterable[str] = (),
    used_ids: Iterable[str] = (),
    max_steps: int | None = None,
) -> ValidationResult:
    """Validate a plan (text, dict, list of steps or ``Plan``) against the tools in ``registry``.

    ``finished``: ids of steps that already succeeded in this run (a revised plan may
    depend on and reference them). ``used_ids``: ids already taken by earlier steps of
    the run, finished or not (a revised plan must pick new ids). ``max_steps``: tool
    calls the run has left (``max_tool_calls`` minus the attempts made); a plan with
    more steps than that is refused, since every step runs at least once.
    """
    finished = set(finished)
    used = set(used_ids) | finished
    errors: list[str] = []
    try:
        payload = coerce_plan_payload(raw)
    except ReplySyntaxError as exc:
        return ValidationResult(None, [f"syntax: {exc}. Reply with one JSON object {{\"steps\": [...]}}."])
    if not isinstance(payload, dict):
        return ValidationResult(
            None, [f"schema: the plan must be a JSON object with a 'steps' list, got {type(payload).__name__}"]
        )
    if "steps" not in payload:
        return ValidationResult(None, ["schema: the plan needs a 'steps' list"])
    raw_steps = payload["steps"]
    if not isinstance(raw_steps, list):
        return ValidationResult(None, [f"schema: 'steps' must be a list, got {type(raw_steps).__name__}"])
    if len(raw_steps) > MAX_STEPS:
        return ValidationResult(None, [f"schema: the plan has {len(raw_steps)} steps; at most {MAX_STEPS} are allowed"])
    if max_steps is not None and len(raw_steps) > max(0, max_steps):
        errors.append(
            f"budget: the plan has {len(raw_steps)} steps but this run may make only {max(0, max_steps)} more tool "
            f"call(s) (max_tool_calls). Every step runs at least once and every retry counts too (a retry the budget "
            f"cannot pay for is not made): submit a plan of at most {max(0, max_steps)} step(s)"
        )

    steps: list[Step] = []
    all_ids: list[str] = []
    for i, item in enumerate(raw_steps):
        label = f"steps[{i}]"
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            label += f" (id {item['id']!r})"
            all_ids.append(item["id"])
        try:
            steps.append(Step.model_validate(item))
        except ValidationError as exc:
            for err in exc.errors():
                loc = _loc(err.get("loc", ()))
                if err.get("type") == "missing":
                    errors.append(f"schema: {label}: missing required field {loc!r}")
                elif err.get("type") == "extra_forbidden":
                    errors.append(
                        f"schema: {label}: unknown field {loc!r} (allowed: id, tool, args, depends_on, retries, "
                        "timeout_s, on_fail)"
                    )
                else:
                    errors.append(f"schema: {label}: {loc}: {err.get('msg')}")

    # ids
    seen: set[str] = set()
    for s in steps:
        if s.id in seen:
            errors.append(f"duplicate_id: step id {s.id!r} is used more than once; ids must be unique")
        seen.add(s.id)
        if s.id in used:
            what = "finished" if s.id in finished else "already ran (and failed or was skipped)"
            errors.append(
                f"duplicate_id: step id {s.id!r} belongs to a step that {what} earlier in this run; "
                f"choose a new id" + (f" (reference its output as ${{{s.id}}})" if s.id in finished else "")
            )
    known = set(all_ids) | {s.id for s in steps}
    plan_ids = [s.id for s in steps]

    # tools and arguments
    for s in steps:
        if s.tool not in registry:
            shown = clip_tool_name(s.tool)  # (a 100k-character name is not echoed back)
            close = difflib.get_close_matches(s.tool, registry.names(), n=1) if shown == s.tool else []
            hint = f" Did you mean {close[0]!r}?" if close else ""
            errors.append(
                f"unknown_tool: step {s.id!r} uses tool {shown!r}, which does not exist.{hint} "
                f"Available tools: {', '.join(registry.names()) or '(none)'}"
            )
        else:
            for problem in validate_args(registry.get(s.tool), s.args):
                errors.append(f"invalid_args: step {s.id!r} ({s.tool}): {problem}")
        for bad in malformed_placeholders(s.args):
            errors.append(
                f"invalid_reference: step {s.id!r}: {bad!r} is not a valid reference; write ${{step_id}} or "
                f"${{step_id.key}} (use $${{ for a literal ${{)"
            )

    # explicit dependencies
    edges: dict[str, list[str]] = {}
    for s in steps:
        deps: list[str] = []
        for d in s.depends_on:
            if d == s.id:
                errors.append(f"cycle: step {s.id!r} depends on itself")
            elif d in known:
                deps.append(d)
            elif d in finished:
                pass  # satisfied already
            elif d in used:
                errors.append(
                    f"unknown_dependency: step {s.id!r} depends on {d!r}, which failed or was skipped earlier; "
                    f"only finished steps ({', '.join(sorted(finished)) or 'none'}) can be depended on"
                )
            else:
                errors.append(
                    f"unknown_dependency: step {s.id!r} depends on {d!r}, which is not a step of this plan"
                    + (f" (steps: {', '.join(plan_ids)})" if plan_ids else "")
                )
        edges.setdefault(s.id, [])
        edges[s.id].extend(dict.fromkeys(d for d in deps if d not in edges[s.id]))

    # references
    explicit = {k: list(v) for k, v in edges.items()}
    implied: dict[str, list[str]] = {s.id: [] for s in steps}
    for s in steps:
        for ref in find_refs(s.args):
            target = ref.step
            if target == s.id:
                errors.append(f"invalid_reference: step {s.id!r} references its own output {ref.text}")
            elif target in finished and target not in known:
                continue
            elif target in used and target not in known:
                errors.append(
                    f"invalid_reference: step {s.id!r} references {ref.text}, but step {target!r} failed or was "
                    f"skipped earlier; only finished steps have outputs"
                )
            elif target not in known:
                errors.append(
                    f"invalid_reference: step {s.id!r} references {ref.text}, but there is no step {target!r}"
                )
            elif target in _descendants(explicit, s.id):
                errors.append(
                    f"not_ancestor: step {s.id!r} references {ref.text}, but step {target!r} runs after "
                    f"{s.id!r} (it depends on it); a step can only use outputs of the steps it depends on"
                )
            elif target not in implied[s.id]:
                implied[s.id].append(target)
    for sid, targets in implied.items():
        for t in targets:
            if t not in edges[sid]:
                edges[sid].append(t)

    # cycles (explicit and implied edges together)
    for cycle in find_cycles(plan_ids, {k: [d for d in v if d in edges] for k, v in edges.items()}):
        if len(cycle) == 2 and cycle[0] == cycle[1]:
            continue  # self-dependency, reported above
        errors.append(
            "cycle: dependency cycle " + " -> ".join(cycle) + " (read 'a -> b' as 'a needs b'); "
            "remove one of these dependencies or references"
        )

    if errors:
        return ValidationResult(None, list(dict.fromkeys(errors)))
    normalised = [
        s.model_copy(update={"depends_on": list(dict.fromkeys([*s.depends_on, *implied[s.id]]))}) for s in steps
    ]
    return ValidationResult(Plan(steps=normalised), [])
