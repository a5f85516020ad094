"""Structured output: a final answer that is JSON valid against a schema.

The schema is a JSON Schema dict (``Context.output_schema``: what Studio renders and
passes) or a pydantic model class (``build_agent_graph(output_schema=Model)``), which
is turned into its JSON Schema and also validated by the model itself. Validation of
dict schemas uses ``jsonschema``; the JSON is read out of the answer strictly by
``replies.parse.parse_json_answer``. The node is ``nodes/structured.py``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError

from .parse import parse_json_answer

MAX_REPORTED_ERRORS = 8


class StructuredOutputError(RuntimeError):
    """The model gave no valid answer for the output schema within the retry bound."""


def schema_of(schema: dict[str, Any] | type[BaseModel] | None) -> dict[str, Any] | None:
    """The JSON Schema dict of a schema given as a dict or a pydantic model class."""
    if schema is None:
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        return schema
    raise TypeError(f"output_schema must be a JSON Schema dict or a pydantic model class, got {type(schema).__name__}")


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a usable JSON Schema (None when it is)."""
    if not isinstance(schema, dict):
        return f"expected a JSON object, got {type(schema).__name__}"
    from jsonschema import exceptions, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        return exc.message
    return None


def _path(parts: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def validate_answer(
    text: str, schema: dict[str, Any], model: type[BaseModel] | None = None
) -> tuple[Any, list[str]]:
    """Parse and validate an answer: ``(value, [])`` when valid, else ``(None, errors)``."""
    value, problem = parse_json_answer(text)
    if problem:
        return None, [problem]
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        shown = [f"{_path(e.absolute_path)}: {e.message}" for e in errors[:MAX_REPORTED_ERRORS]]
        if len(errors) > MAX_REPORTED_ERRORS:
            shown.append(f"... and {len(errors) - MAX_REPORTED_ERRORS} more")
        return None, shown
    if model is not None:
        try:
            value = model.model_validate(value).model_dump(mode="json")
        except ValidationError as exc:
            return None, [f"{_path(e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()[:MAX_REPORTED_ERRORS]]
    return value, []


def output_instructions(schema: dict[str, Any]) -> str:
    """The system-prompt section that asks for the final answer as JSON."""
    return (
        "OUTPUT FORMAT: you may call tools first. When you give your final answer, reply with "
        "only a JSON value (no prose, no code fences) that validates against this JSON Schema:\n"
        + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    )


RETRY_MESSAGE = (
    "Your final answer is not valid for the required output schema:\n{errors}\n"
    "Reply again with only the corrected JSON value (no prose, no code fences)."
)
