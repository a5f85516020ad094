"""The plan format: a DAG of tool steps, as pydantic models and as JSON Schema.

A plan is data, never code::

    {"steps": [
        {"id": "s1", "tool": "browse_url", "args": {"url": "https://example.org"}},
        {"id": "s2", "tool": "write_file",
         "args": {"path": "page.txt", "content": "${s1}"},
         "depends_on": ["s1"], "retries": 1, "timeout_s": 30, "on_fail": "continue"}
    ]}

Only ``id``, ``tool`` and ``args`` are required. Argument values may reference the
output of earlier steps (see ``refs.py``); a reference implies a dependency.

``python -m smart_agent.nodes.planner.schema [PATH]`` writes the JSON Schema
(``docs/plan.schema.json`` in the repository is generated this way).
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

STEP_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"

MAX_STEPS = 200

OnFail = Literal["halt", "continue"]


class Step(BaseModel):
    """One tool execution of a plan."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        pattern=STEP_ID_PATTERN,
        description="Unique step id (letters, digits, '_' or '-'; no dots), e.g. 's1'.",
    )
    tool: str = Field(min_length=1, description="Name of a registered tool.")
    args: dict[str, Any] = Field(
        description=(
            "Tool arguments. A value exactly '${s1}' is replaced by step s1's output, "
            "'${s1.key}' / '${s1.items[0].title}' by a field of its JSON output, and "
            "'${s1}' inside a longer string is interpolated as text. '$${' is a literal '${'."
        ),
    )
    depends_on: list[str] = Field(
        default_factory=list,
        description="Ids of steps that must finish first (references add theirs implicitly).",
    )
    retries: int | None = Field(
        default=None,
        ge=0,
        le=10,
        description="Extra attempts after a failure, with exponential backoff. Default: the tool's own setting.",
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="Timeout of one attempt in seconds. Default: the tool's / the run's timeout.",
    )
    on_fail: OnFail = Field(
        default="halt",
        description=(
            "'halt': stop the run when this step fails (the planner may revise the rest); "
            "'continue': record the failure, skip this step's dependents and go on."
        ),
    )


class Plan(BaseModel):
    """A validated plan: steps run as soon as their dependencies are done."""

    model_config = ConfigDict(extra="ignore")

    steps: list[Step] = Field(
        default_factory=list,
        max_length=MAX_STEPS,
        description="The steps. Independent steps run in parallel. An empty list means no tool is needed.",
    )

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def ids(self) -> list[str]:
        return [s.id for s in self.steps]


def plan_json_schema() -> dict[str, Any]:
    """The published JSON Schema of a plan (with ``$defs``)."""
    schema = Plan.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://smart-agent.local/schemas/plan.schema.json"
    schema["title"] = "smart-agent plan"
    return schema


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema with every local ``$ref`` inlined and ``$defs`` dropped.

    Tool-parameter schemas of some providers do not resolve ``$ref``.
    """
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = walk(copy.deepcopy(defs[ref.split("/")[-1]]))
                rest = {k: walk(v) for k, v in node.items() if k != "$ref"}
                return {**target, **rest}
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = walk(schema)
    for key in ("$schema", "$id"):
        out.pop(key, None)
    return out


def submit_plan_tool() -> dict[str, Any]:
    """The ``submit_plan`` tool offered to the planning model (OpenAI tool format)."""
    params = inline_refs(Plan.model_json_schema())
    params.pop("title", None)
    params["required"] = ["steps"]
    return {
        "type": "function",
        "function": {
            "name": "submit_plan",
            "description": "Submit the complete execution plan (a DAG of tool steps). Call it exactly once.",
            "parameters": params,
        },
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = json.dumps(plan_json_schema(), indent=2, ensure_ascii=False) + "\n"
    if argv:
        with open(argv[0], "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
