"""Plan, then execute: a validated DAG of tool steps run deterministically and in parallel.

One module per concern: ``schema`` (the plan format), ``refs`` (``${step.key}``
references), ``repair`` (JSON extraction and repair), ``validate``, ``scheduler``
(pure execution decisions), ``prompts``, and the nodes ``plan``, ``approve``,
``execute`` (prepare / dispatch / run_step) and ``synthesize``. The graph lives in
``smart_agent.graphs.planner``.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Plan": "schema",
    "Step": "schema",
    "plan_json_schema": "schema",
    "PlanSyntaxError": "repair",
    "extract_json": "repair",
    "repair_json": "repair",
    "ReferenceResolutionError": "refs",
    "find_refs": "refs",
    "resolve": "refs",
    "Schedule": "scheduler",
    "build_trace": "scheduler",
    "schedule": "scheduler",
    "ValidationResult": "validate",
    "validate_plan": "validate",
}


def __getattr__(name: str) -> Any:  # lazy, so `python -m smart_agent.nodes.planner.schema` runs cleanly
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(name)


__all__ = [
    "Plan",
    "PlanSyntaxError",
    "ReferenceResolutionError",
    "Schedule",
    "Step",
    "ValidationResult",
    "build_trace",
    "extract_json",
    "find_refs",
    "plan_json_schema",
    "repair_json",
    "resolve",
    "schedule",
    "validate_plan",
]
