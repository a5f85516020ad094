"""The executor: scheduling decisions, one step's retries and timeout, routing (pure / no model)."""

from __future__ import annotations

import pytest
from langgraph.types import Send
from planner_support import make_registry

from smart_agent.config.context import Context
from smart_agent.nodes.planner.execute import backoff_delay, execute_step, step_policy, step_task
from smart_agent.nodes.planner.routes import (
    route_after_approve,
    route_after_dispatch,
    route_after_load,
    route_after_plan,
    route_after_prepare,
)
from smart_agent.nodes.planner.scheduler import build_trace, schedule
from smart_agent.nodes.planner.schema import Plan, Step
from smart_agent.tools.registry import ToolMeta


def plan_of(*steps):
    return Plan.model_validate({"steps": [{"tool": "echo", "args": {"text": "x"}, **s} for s in steps]})


def ok(sid, output="x", **kw):
    return {"id": sid, "tool": "echo", "args": {}, "status": "ok", "output": output, "error": None, **kw}


def failed(sid, **kw):
    return {"id": sid, "tool": "echo", "args": {}, "status": "failed", "output": None, "error": "boom", **kw}


# -- schedule ----------------------------------------------------------------------
DIAMOND = plan_of(
    {"id": "a"}, {"id": "b"}, {"id": "c", "depends_on": ["a"]}, {"id": "d", "depends_on": ["b", "c"]}
)


def test_independent_steps_are_ready_together_in_plan_order():
    assert schedule(DIAMOND, {}, max_parallel=5).ready == ["a", "b"]
    assert schedule(DIAMOND, {"a": ok("a")}, max_parallel=5).ready == ["b", "c"]
    assert schedule(DIAMOND, {"a": ok("a"), "b": ok("b"), "c": ok("c")}, max_parallel=5).ready == ["d"]


def test_parallelism_is_bounded():
    plan = plan_of(*({"id": f"s{i}"} for i in range(7)))
    assert schedule(plan, {}, max_parallel=3).ready == ["s0", "s1", "s2"]
    assert schedule(plan, {"s0": ok("s0")}, max_parallel=3).ready == ["s1", "s2", "s3"]


def test_done_when_everything_has_a_result():
    decision = schedule(DIAMOND, {k: ok(k) for k in "abcd"}, max_parallel=5)
    assert decision.done and decision.ready == [] and decision.skipped == {}


def test_halt_on_a_failed_halting_step():
    decision = schedule(DIAMOND, {"a": failed("a")}, max_parallel=5)
    assert decision.halt == {"steps": ["a"], "errors": {"a": "boom"}}
    assert decision.ready == [] and not decision.done


def test_continue_skips_dependents_transitively_but_runs_the_rest():
    plan = plan_of(
        {"id": "a", "on_fail": "continue"},
        {"id": "b"},
        {"id": "c", "depends_on": ["a"]},
        {"id": "d", "depends_on": ["c"]},
        {"id": "e", "depends_on": ["b"]},
    )
    decision = schedule(plan, {"a": failed("a"), "b": ok("b")}, max_parallel=5, round_=2)
    assert decision.halt is None
    assert sorted(decision.skipped) == ["c", "d"]
    assert decision.skipped["c"]["error"] == "skipped: dependency 'a' failed"
    assert decision.skipped["d"]["error"] == "skipped: dependency 'c' was skipped"
    assert decision.ready == ["e"]


def test_dependencies_on_finished_steps_of_an_earlier_plan():
    plan = plan_of({"id": "r1", "depends_on": ["s1"]})
    assert schedule(plan, {"s1": ok("s1"), "s2": failed("s2")}, max_parallel=2).ready == ["r1"]


def test_trace_order_is_stable_and_lists_steps_that_never_ran():
    results = {
        "b": ok("b", round=1, index=1, plan_round=0),
        "a": ok("a", round=1, index=0, plan_round=0),
        "r1": ok("r1", round=3, index=0, plan_round=1),
        "c": failed("c", round=2, index=2, plan_round=0),
    }
    plan = plan_of({"id": "r1"}, {"id": "r2"})
    trace = build_trace(plan, results, plan_round=1)
    assert [(e["id"], e["status"]) for e in trace] == [
        ("a", "ok"),
        ("b", "ok"),
        ("c", "failed"),
        ("r1", "ok"),
        ("r2", "not_run"),
    ]
    assert build_trace(plan, dict(reversed(list(results.items()))), plan_round=1) == trace


# -- one step ----------------------------------------------------------------------
@pytest.fixture
def tools():
    return make_registry()


async def test_step_resolves_references_and_keeps_json_output(tools):
    registry, calls = tools
    step = Step(id="s2", tool="add", args={"a": "${s1.sum}", "b": 1})
    result = await execute_step(step, {"s1": {"sum": 41}}, registry, Context())
    assert result["status"] == "ok" and result["output"] == {"sum": 42}
    assert result["args"] == {"a": 41, "b": 1} and result["attempts"] == 1


async def test_bad_reference_fails_without_calling_the_tool(tools):
    registry, calls = tools
    step = Step(id="s2", tool="add", args={"a": "${s1.total}", "b": 1}, retries=3)
    result = await execute_step(step, {"s1": {"sum": 41}}, registry, Context())
    assert result["status"] == "failed" and result["kind"] == "reference"
    assert "no key 'total'" in result["error"] and calls["add"] == 0


async def test_retries_with_exponential_backoff(tools):
    registry, calls = tools
    delays = []

    async def fake_sleep(s):
        delays.append(s)

    step = Step(id="s1", tool="flaky", args={"text": "ok"}, retries=3)
    result = await execute_step(step, {}, registry, Context(), backoff_base_s=0.25, sleep=fake_sleep)
    assert result["status"] == "ok" and result["attempts"] == 3 and calls["flaky"] == 3
    assert delays == [0.25, 0.5]
    assert len(result["errors"]) == 2 and "temporary failure" in result["errors"][0]


async def test_deterministic_failures_are_not_retried(tools):
    registry, calls = tools
    delays = []

    async def fake_sleep(s):
        delays.append(s)

    result = await execute_step(
        Step(id="s1", tool="fail", args={}, retries=2), {}, registry, Context(), sleep=fake_sleep
    )
    assert result["status"] == "failed" and result["attempts"] == 1 and calls["fail"] == 1
    assert delays == [] and "boom" in result["error"]


async def test_invalid_arguments_at_run_time_are_not_retried(tools):
    registry, calls = tools
    step = Step(id="s2", tool="add", args={"a": "${s1}", "b": 1}, retries=3)
    result = await execute_step(step, {"s1": "not a number"}, registry, Context())
    assert result["status"] == "failed" and result["attempts"] == 1 and result["kind"] == "invalid_args"


async def test_timeout_per_attempt(tools):
    registry, calls = tools
    step = Step(id="s1", tool="sleep", args={"seconds": 5}, timeout_s=0.05, retries=1)
    result = await execute_step(step, {}, registry, Context(), backoff_base_s=0.01)
    assert result["status"] == "failed" and result["kind"] == "timeout" and result["attempts"] == 2
    assert "timed out after 0.05 s" in result["error"] and result["duration_s"] < 1


def test_backoff_and_policy():
    assert [backoff_delay(n, 1.0, 5.0) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    ctx = Context(tool_timeout_s=60)
    assert step_policy(Step(id="a", tool="t", args={}), ToolMeta(timeout_s=30, retries=2), ctx) == (2, 30)
    assert step_policy(Step(id="a", tool="t", args={}), ToolMeta(), ctx) == (0, 60)
    assert step_policy(
        Step(id="a", tool="t", args={}, retries=0, timeout_s=5), ToolMeta(timeout_s=30, retries=2), ctx
    ) == (0, 5)


# -- routing -------------------------------------------------------------------------
def test_route_after_prepare():
    assert route_after_prepare({"status": "planning"}) == "plan"
    assert route_after_prepare({"status": "planning_failed"}) == "__end__"


@pytest.mark.parametrize(
    "state, expected",
    [
        ({"status": "planned", "approve_plan": False}, "dispatch"),
        ({"status": "planned", "approve_plan": True}, "approve"),
        ({"status": "plan_invalid", "plan_attempts": 1, "max_plan_attempts": 3}, "plan"),
        ({"status": "plan_invalid", "plan_attempts": 3, "max_plan_attempts": 3}, "plan_failed"),
        ({"status": "plan_invalid", "plan_attempts": 3, "max_plan_attempts": 3, "replans": 1}, "synthesize"),
    ],
)
def test_route_after_plan(state, expected):
    assert route_after_plan(state) == expected


@pytest.mark.parametrize(
    "status, expected", [("approved", "dispatch"), ("approval_invalid", "approve"), ("rejected", "__end__")]
)
def test_route_after_approve(status, expected):
    assert route_after_approve({"status": status}) == expected


def test_route_after_dispatch_fans_out_sends():
    state = {
        "status": "running",
        "ready": ["b", "c"],
        "round": 2,
        "plan": DIAMOND.model_dump(),
        "step_results": {"a": ok("a", output={"v": 1})},
    }
    sends = route_after_dispatch(state)
    assert all(isinstance(s, Send) and s.node == "run_step" for s in sends)
    assert [s.arg["step"]["id"] for s in sends] == ["b", "c"]
    assert sends[1].arg["index"] == 2 and sends[1].arg["round"] == 2


def test_step_task_carries_only_referenced_outputs():
    plan = Plan.model_validate(
        {
            "steps": [
                {"id": "a", "tool": "echo", "args": {"text": "1"}},
                {"id": "b", "tool": "echo", "args": {"text": "${a}"}, "depends_on": ["a"]},
            ]
        }
    )
    state = {
        "plan": plan.model_dump(),
        "step_results": {"a": ok("a", output="A"), "z": ok("z", output="Z")},
        "round": 1,
    }
    assert step_task(state, "b")["outputs"] == {"a": "A"}


@pytest.mark.parametrize(
    "state, expected",
    [
        ({"status": "done"}, "synthesize"),
        ({"status": "halted", "replans": 0, "max_replans": 1}, "plan"),
        ({"status": "halted", "replans": 1, "max_replans": 1}, "synthesize"),
        ({"status": "halted", "replans": 0, "max_replans": 0}, "synthesize"),
    ],
)
def test_route_after_dispatch(state, expected):
    assert route_after_dispatch(state) == expected


def test_route_after_load():
    assert route_after_load({"status": "planned"}) == "dispatch"
    assert route_after_load({"status": "planning_failed"}) == "__end__"


def test_which_failures_are_retryable():
    import httpx

    from smart_agent.tools.guards import ToolError
    from smart_agent.tools.retry import RetryableToolError, is_retryable

    class NotAgain(ConnectionError):
        retryable = False

    def wrapped(cause: BaseException) -> ToolError:
        try:
            raise ToolError("fetch failed") from cause
        except ToolError as exc:
            return exc

    assert (
        is_retryable(TimeoutError())
        and is_retryable(ConnectionRefusedError())
        and is_retryable(RetryableToolError("429"))
    )
    assert is_retryable(httpx.ConnectError("down")) and is_retryable(wrapped(httpx.ReadTimeout("slow")))
    assert (
        not is_retryable(ZeroDivisionError()) and not is_retryable(ToolError("bad")) and not is_retryable(ValueError())
    )
    assert not is_retryable(NotAgain()) and not is_retryable(httpx.UnsupportedProtocol("ftp"))
