"""Plan, then execute: a validated DAG of tool steps run deterministically and in parallel.

One module per concern: ``schema`` (the plan format), ``refs`` (``${step.key}``
references), ``validate``, ``scheduler`` (pure execution decisions), ``prompts``, and
the nodes ``plan``, ``approve``, ``execute`` (prepare / dispatch / run_step) and
``synthesize``. Reading JSON out of the model's reply (and repairing it) is
``smart_agent.replies``. The graph lives in ``smart_agent.graphs.planner``.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Plan": "schema",
    "Step": "schema",
    "plan_json_schema": "schema",
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
    "ReferenceResolutionError",
    "Schedule",
    "Step",
    "ValidationResult",
    "build_trace",
    "find_refs",
    "plan_json_schema",
    "resolve",
    "schedule",
    "validate_plan",
]
