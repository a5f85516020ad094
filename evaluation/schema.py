"""The JSON Schema of an eval suite file (``docs/eval.schema.json`` is generated from
:data:`SCHEMA`: ``python -m smart_agent.evaluation.schema docs/eval.schema.json``) and of an
A/B config file (:data:`CONFIG_SCHEMA`)."""

from __future__ import annotations

import json
import sys
from typing import Any

_TEXTS: dict[str, Any] = {
    "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
_TOOL: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "args": {"type": "object", "description": "a subset the call's arguments must contain"},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    ]
}
_JUDGE: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1, "description": "the rubric, scored by the run's model"},
        {
            "type": "object",
            "properties": {
                "rubric": {"type": "string", "minLength": 1},
                "model": {"type": "string", "pattern": "^[^:\\s]+:\\S+$", "description": "provider:model"},
                "min_score": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["rubric"],
            "additionalProperties": False,
        },
    ]
}

EXPECT: dict[str, Any] = {
    "type": "object",
    "description": "every check given must pass for the case to pass",
    "properties": {
        "on": {"enum": ["answer", "structured_response"], "description": "what the text checks read (answer)"},
        "status": {"enum": ["completed", "failed", "halted", "interrupted"]},
        "contains": _TEXTS,
        "not_contains": _TEXTS,
        "regex": _TEXTS,
        "equals": {"description": "the answer (stripped), or the structured response, equals this"},
        "json_schema": {"type": "object", "description": "the structured response (or the answer as JSON) is valid"},
        "tools_called": {"type": "array", "items": _TOOL},
        "tools_not_called": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "max_tool_calls": _COUNT,
        "max_model_calls": _COUNT,
        "max_tokens": _COUNT,
        "files": {
            "type": "object",
            "description": "workspace path -> text (or texts) the file must contain; '' only requires it to exist",
            "additionalProperties": _TEXTS,
        },
        "python": {
            "oneOf": [
                {"type": "string", "pattern": "^[\\w.]+:\\w+$"},
                {"type": "array", "items": {"type": "string", "pattern": "^[\\w.]+:\\w+$"}, "minItems": 1},
            ],
            "description": "module:function called with (result, case); False or a string fails",
        },
        "judge": _JUDGE,
    },
    "additionalProperties": False,
}

SETTINGS: dict[str, Any] = {
    "type": "object",
    "description": "context fields of the run (max_tool_calls, tools, approve, output_schema, ...)",
}

CASE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$"},
        "description": {"type": "string"},
        "task": {
            "oneOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
            ],
            "description": "the task, or a list of user turns on one thread",
        },
        "graph": {"type": "string"},
        "model": {"type": "string", "pattern": "^[^:\\s]+:\\S+$"},
        "agents": {"type": "string", "minLength": 1, "description": "an agents file (team), relative to the suite"},
        "settings": SETTINGS,
        "files": {
            "type": "object",
            "description": "workspace path -> content, placed before the run",
            "additionalProperties": {"type": "string"},
        },
        "review": {
            "type": "object",
            "description": "how a pause for a person is answered (else the run stops there: status interrupted)",
            "properties": {
                "approve": {"type": "boolean"},
                "reject": {"type": "string"},
                "answer": {"type": "string"},
            },
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": False,
        },
        "expect": EXPECT,
    },
    "required": ["id", "task"],
    "additionalProperties": False,
}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://smart-agent.local/schemas/eval.schema.json",
    "title": "smart-agent eval suite",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "defaults": {
            "type": "object",
            "description": "graph, model, settings and expect every case starts from",
            "properties": {
                "graph": {"type": "string"},
                "model": {"type": "string", "pattern": "^[^:\\s]+:\\S+$"},
                "settings": SETTINGS,
                "expect": EXPECT,
            },
            "additionalProperties": False,
        },
        "cases": {"type": "array", "items": CASE, "minItems": 1},
    },
    "required": ["cases"],
    "additionalProperties": False,
}

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "graph": {"type": "string"},
        "model": {"type": "string", "pattern": "^[^:\\s]+:\\S+$"},
        "settings": SETTINGS,
    },
    "additionalProperties": False,
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = json.dumps(SCHEMA, indent=2) + "\n"
    if args:
        with open(args[0], "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
