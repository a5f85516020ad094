"""An eval suite: a YAML file (``cases:``, optional ``name`` and ``defaults``) or a JSONL
file (one case per line), checked against ``docs/eval.schema.json`` (evaluation/schema.py)
and the run settings against the context fields. Every problem is one line naming the
file, the case and the field (:class:`SuiteError`, a ``ValueError``: the CLI exits 2).

An A/B config (``--compare a.yaml b.yaml``) is a ``name``, ``graph``, ``model`` and
``settings`` (:func:`load_config`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .schema import CONFIG_SCHEMA, SCHEMA

__all__ = ["Case", "RunConfig", "Suite", "SuiteError", "check_settings", "load_config", "load_suite"]


class SuiteError(ValueError):
    """A suite or config file that cannot be used: one line."""


@dataclass
class Case:
    id: str
    turns: list[str]
    graph: str | None = None
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    review: dict[str, Any] | None = None
    expect: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    agents: str | None = None  # an agents file (absolute): the agent graph runs its team

    def as_dict(self) -> dict[str, Any]:
        """The case as a ``python:`` check receives it."""
        return {
            "id": self.id, "task": self.turns[0] if len(self.turns) == 1 else list(self.turns), "graph": self.graph,
            "model": self.model, "settings": dict(self.settings), "files": dict(self.files), "expect": self.expect,
        }


@dataclass
class Suite:
    path: str
    name: str
    cases: list[Case]


@dataclass
class RunConfig:
    """What one side of a run uses: a graph, a model and run settings over each case's own."""

    name: str = ""
    graph: str | None = None
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.name or " ".join(x for x in (self.graph, self.model) if x) or "default"


def _read(path: Path, what: str = "eval suite") -> Any:
    """The parsed file (``inputs.py``: a regular file, bounded size, nesting and YAML aliases)."""
    from ..config.files import InputFileError, load_json, load_yaml, read_text_file

    try:
        text = read_text_file(path, what=what)
        if path.suffix.lower() == ".jsonl":
            cases = [
                load_json(line, what=f"{path}: line {n}")
                for n, line in enumerate(text.splitlines(), 1)
                if line.strip()
            ]
            return {"cases": cases}
        return load_yaml(text, what=str(path))
    except InputFileError as exc:
        raise SuiteError(str(exc)) from None


def _schema_problem(path: Path, data: Any, schema: Mapping[str, Any]) -> str | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    err = best_match(Draft202012Validator(schema).iter_errors(data))
    if err is None:
        return None
    parts = list(err.absolute_path)
    where = ""
    if len(parts) >= 2 and parts[0] == "cases" and isinstance(parts[1], int):
        cases = data.get("cases") if isinstance(data, Mapping) else None
        case = cases[parts[1]] if isinstance(cases, list) else None
        cid = case.get("id") if isinstance(case, Mapping) else None
        where = f"case {cid!r}: " if isinstance(cid, str) else f"case #{parts[1] + 1}: "
        parts = parts[2:]
    name = ".".join(str(p) for p in parts) or "(top level)"
    message = err.message if len(err.message) <= 160 else err.message[:157] + "..."
    missing = [k for k in err.validator_value if k not in err.instance] if err.validator == "required" else []
    if missing and isinstance(err.instance, Mapping):  # name the missing key as the field
        name, message = ".".join(str(p) for p in [*parts, missing[0]]), "required, missing"
    elif err.validator == "oneOf":
        message = f"{_shown(err.instance)} is not one of the allowed forms"
    elif err.validator == "pattern":
        message = f"{_shown(err.instance)} is not {_FORMS.get(str(err.validator_value), 'of the required form')}"
    return f"{path}: {where}{name}: {' '.join(message.split())}"


_FORMS = {
    "^[^:\\s]+:\\S+$": "provider:model",
    "^[\\w.]+:\\w+$": "module:function",
    "^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$": "an id (letters, digits, _ . -; at most 80)",
}


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def check_settings(settings: Mapping[str, Any], graph: str | None, where: str) -> None:
    """Each run setting must be a context field of the graph with a valid value (one line)."""
    from ..config.context import GRAPH_CONTEXTS, Context, context_field_names, field_problem

    if graph is not None and graph not in GRAPH_CONTEXTS:
        raise SuiteError(f"{where}graph: unknown graph {graph!r} (one of {', '.join(GRAPH_CONTEXTS)})")
    names = set(context_field_names(GRAPH_CONTEXTS.get(graph or "agent", Context)))
    for key, value in settings.items():
        if key == "workspace":
            raise SuiteError(f"{where}settings.workspace: each case runs in its own fresh workspace; use files:")
        if key not in names:
            raise SuiteError(f"{where}settings.{key}: not a run setting of the {graph or 'agent'} graph")
        problem = field_problem(key, value)
        if problem:
            raise SuiteError(f"{where}settings.{key}: {problem}")


def _check_texts(case: Case, where: str) -> None:
    """What a case sends to the model or writes (its turns, a review's text, a judge's rubric,
    the files placed before the run) is text ``run`` and ``chat`` would take: no NUL, no lone
    surrogate (a JSONL ``"\\ud800"``, a YAML ``"\\0"``), not too long (``text_problem``)."""
    from ..config.checks import text_problem

    texts = [(f"task[{n}]" if len(case.turns) > 1 else "task", turn) for n, turn in enumerate(case.turns)]
    texts += [(f"review.{k}", v) for k, v in (case.review or {}).items() if isinstance(v, str)]
    judge = case.expect.get("judge")
    rubric = judge.get("rubric") if isinstance(judge, Mapping) else judge
    texts += [("expect.judge", rubric)] if isinstance(rubric, str) else []
    texts += [("files", name) for name in case.files]
    for key, text in texts:
        problem = text_problem(text)
        if problem:
            raise SuiteError(f"{where}{key}: {problem}")
    for name, content in case.files.items():  # any text a file may hold, but it must be writable as UTF-8
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            raise SuiteError(f"{where}files.{name}: is not valid UTF-8 text (it contains a lone surrogate)") from None


def _check_files(files: Mapping[str, Any], where: str, key: str) -> None:
    for name in files:
        p = Path(name)
        if not name or p.is_absolute() or ".." in p.parts:
            raise SuiteError(f"{where}{key}: {name!r} must be a relative path inside the workspace")


def _check_expect(expect: Mapping[str, Any], where: str, base: Path) -> None:
    """Patterns, schemas and check functions that cannot work are a bad suite (one line, before any run)."""
    import importlib
    import re
    import sys

    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    regex = expect.get("regex")
    for pattern in [regex] if isinstance(regex, str) else regex or []:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SuiteError(f"{where}expect.regex: /{pattern}/ is not a valid pattern ({exc})") from None
    if "json_schema" in expect:
        try:
            Draft202012Validator.check_schema(expect["json_schema"])
        except SchemaError as exc:
            raise SuiteError(f"{where}expect.json_schema: not a valid JSON Schema ({_shown(exc.message)})") from None
    python = expect.get("python")
    for spec in [python] if isinstance(python, str) else python or []:
        module_name, _, func_name = spec.partition(":")
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))  # a check module beside the suite file, as the check imports it
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise SuiteError(f"{where}expect.python: {spec}: cannot import {module_name} ({exc})") from None
        if not callable(getattr(module, func_name, None)):
            raise SuiteError(f"{where}expect.python: {spec}: {module_name} has no function {func_name}")


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """The suite in ``path`` (``.yaml``/``.yml`` or ``.jsonl``), checked; defaults merged."""
    p = Path(path)
    data = _read(p)
    problem = _schema_problem(p, data, SCHEMA)
    if problem:
        raise SuiteError(problem)
    defaults = data.get("defaults") or {}
    cases: list[Case] = []
    seen: set[str] = set()
    for raw in data["cases"]:
        cid = raw["id"]
        where = f"{p}: case {cid!r}: "
        if cid in seen:
            raise SuiteError(f"{where}id: another case has this id")
        seen.add(cid)
        task = raw["task"]
        case = Case(
            id=cid,
            turns=[task] if isinstance(task, str) else list(task),
            graph=raw.get("graph", defaults.get("graph")),
            model=raw.get("model", defaults.get("model")),
            settings={**(defaults.get("settings") or {}), **(raw.get("settings") or {})},
            files=dict(raw.get("files") or {}),
            review=raw.get("review"),
            expect={**(defaults.get("expect") or {}), **(raw.get("expect") or {})},
            description=raw.get("description", ""),
            agents=str((p.parent / raw["agents"]).resolve()) if raw.get("agents") else None,
        )
        if case.agents and not Path(case.agents).is_file():
            raise SuiteError(f"{where}agents: {raw['agents']!r} is not a file (relative to the suite)")
        _check_texts(case, where)
        check_settings(case.settings, case.graph, where)
        _check_files(case.files, where, "files")
        _check_files(case.expect.get("files") or {}, where, "expect.files")
        _check_expect(case.expect, where, p.parent.resolve())
        cases.append(case)
    return Suite(path=str(p), name=str(data.get("name") or p.stem), cases=cases)


def load_config(path: str | os.PathLike[str]) -> RunConfig:
    """An A/B side from a YAML/JSON file: ``name``, ``graph``, ``model``, ``settings``."""
    p = Path(path)
    data = _read(p, "A/B config")
    if data is None:
        data = {}
    problem = _schema_problem(p, data, CONFIG_SCHEMA)
    if problem:
        raise SuiteError(problem)
    config = RunConfig(
        name=data.get("name") or p.stem, graph=data.get("graph"), model=data.get("model"),
        settings=dict(data.get("settings") or {}),
    )
    check_settings(config.settings, config.graph, f"{p}: ")
    return config
