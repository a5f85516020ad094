"""Deterministic scheduling of a validated plan: pure functions over the step results.

``schedule`` answers, after every superstep, "what runs next?": steps whose
dependencies all succeeded (in plan order, at most ``max_parallel``), which steps
are skipped because a dependency failed or was skipped, and whether a failure with
``on_fail="halt"`` stops the run. ``build_trace`` turns the results into the
execution trace, ordered by plan round, dispatch round and plan position — never
by completion time — so the same plan and tool outputs always give the same trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .schema import Plan, Step

OK, FAILED, SKIPPED, NOT_RUN = "ok", "failed", "skipped", "not_run"


def as_plan(plan: Plan | Mapping[str, Any] | None) -> Plan:
    if plan is None:
        return Plan(steps=[])
    return plan if isinstance(plan, Plan) else Plan.model_validate(plan)


@dataclass
class Schedule:
    ready: list[str] = field(default_factory=list)
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    halt: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        return not self.ready and self.halt is None


def skipped_result(step: Step, reason: str, *, index: int, round_: int, plan_round: int) -> dict[str, Any]:
    return {
        "id": step.id,
        "tool": step.tool,
        "args": step.args,
        "status": SKIPPED,
        "output": None,
        "error": reason,
        "attempts": 0,
        "index": index,
        "round": round_,
        "plan_round": plan_round,
    }


def schedule(
    plan: Plan | Mapping[str, Any],
    results: Mapping[str, Mapping[str, Any]],
    *,
    max_parallel: int,
    round_: int = 0,
    plan_round: int = 0,
) -> Schedule:
    """Decide the next superstep of ``plan`` given ``results`` (step id -> result)."""
    plan = as_plan(plan)
    status = {sid: r.get("status") for sid, r in results.items()}

    halting = [s for s in plan.steps if status.get(s.id) == FAILED and s.on_fail == "halt"]
    if halting:
        return Schedule(
            halt={
                "steps": [s.id for s in halting],
                "errors": {s.id: results[s.id].get("error") for s in halting},
            }
        )

    plan_ids = set(plan.ids())
    skipped: dict[str, dict[str, Any]] = {}
    changed = True
    while changed:  # propagate failures down the DAG until nothing changes
        changed = False
        for index, s in enumerate(plan.steps):
            if s.id in results or s.id in skipped:
                continue
            for dep in s.depends_on:
                dep_status = SKIPPED if dep in skipped else status.get(dep)
                reason = None
                if dep_status == FAILED:
                    reason = f"skipped: dependency {dep!r} failed"
                elif dep_status == SKIPPED:
                    reason = f"skipped: dependency {dep!r} was skipped"
                elif dep_status is None and dep not in plan_ids:
                    reason = f"skipped: dependency {dep!r} never ran"
                if reason:
                    skipped[s.id] = skipped_result(s, reason, index=index, round_=round_, plan_round=plan_round)
                    changed = True
                    break

    ready = [
        s.id
        for s in plan.steps
        if s.id not in results
        and s.id not in skipped
        and all(status.get(dep) == OK for dep in s.depends_on)
    ][: max(1, int(max_parallel))]

    if not ready:  # anything still pending can never run: say so instead of looping
        for index, s in enumerate(plan.steps):
            if s.id not in results and s.id not in skipped:
                skipped[s.id] = skipped_result(
                    s, "skipped: its dependencies can never complete", index=index, round_=round_, plan_round=plan_round
                )
    return Schedule(ready=ready, skipped=skipped)


def step_outputs(results: Mapping[str, Mapping[str, Any]], ids: list[str]) -> dict[str, Any]:
    """Outputs of the finished steps among ``ids`` (what a step's references need)."""
    return {sid: results[sid].get("output") for sid in ids if sid in results and results[sid].get("status") == OK}


TRACE_KEYS = ("id", "tool", "args", "status", "output", "error", "attempts", "round", "plan_round")


def build_trace(
    plan: Plan | Mapping[str, Any] | None,
    results: Mapping[str, Mapping[str, Any]],
    *,
    plan_round: int = 0,
) -> list[dict[str, Any]]:
    """Every step result in a stable order, then the current plan's steps that never ran."""
    plan = as_plan(plan)
    ordered = sorted(
        results.values(),
        key=lambda r: (
            int(r.get("plan_round") or 0),
            int(r.get("round") or 0),
            int(r.get("index") or 0),
            str(r.get("id")),
        ),
    )
    trace = [{k: r.get(k) for k in TRACE_KEYS} for r in ordered]
    for s in plan.steps:
        if s.id not in results:
            trace.append(
                {
                    "id": s.id,
                    "tool": s.tool,
                    "args": s.args,
                    "status": NOT_RUN,
                    "output": None,
                    "error": None,
                    "attempts": 0,
                    "round": None,
                    "plan_round": plan_round,
                }
            )
    return trace


def counts(trace: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    out = {OK: 0, FAILED: 0, SKIPPED: 0, NOT_RUN: 0}
    for entry in trace:
        out[entry["status"]] = out.get(entry["status"], 0) + 1
    return out
