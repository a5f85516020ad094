"""Attack: `--max-tool-calls` was a budget per fleet worker and per sub-agent, not per run (a
fleet run with a limit of 3 made 18 fetches, sub-agents 9); a planner wave gave one step every
retry the budget had left, so its sibling got none and said "not retried: tool budget
exhausted" after 2 calls; `--max-model-calls 4` with retries and a fallback sent 8 requests while
the counter said 4.

Real CLI processes and in-process graphs over the real OpenAI client against the scripted
server. Tool executions are counted on the tool side (a plugin writing one line per execution to
a marker file, or a counter in the test), model requests on the server.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter

import pytest
from conftest import openai_model, run_cli, run_graph
from langchain_core.tools import tool

from security.planner_budget_support import executions, plugin_env, submit
from smart_agent.config.context import Context
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM, SUBMIT_SUBTASKS
from smart_agent.testing.scripted_server import text, tool_call
from smart_agent.tools.registry import ToolMeta, ToolRegistry
from smart_agent.tools.retry import RetryableToolError

SKIPPED = "Skipped: tool-call limit reached"


def offered(req) -> list[str]:
    return [t["function"]["name"] for t in req.get("tools") or []]


def counting_responder(on_other):
    """Ask for ``count`` (a new label each time) whenever it is offered; ``on_other(req)`` answers
    every other request."""
    labels = itertools.count(1)
    lock = threading.Lock()

    def respond(req):
        if "count" in offered(req):
            with lock:
                label = f"c{next(labels)}"
            return tool_call("count", {"label": label})
        return on_other(req)

    return respond


def tool_results(server) -> list[str]:
    """The text of every tool result the model was sent (each once)."""
    seen: dict[str, str] = {}
    for req in server.requests:
        for m in req["messages"]:
            if m["role"] == "tool":
                content = m["content"]
                seen.setdefault(m["tool_call_id"], content if isinstance(content, str) else json.dumps(content))
    return list(seen.values())


# --------------------------------------------------------------------------- fleet (CLI)
@pytest.mark.e2e
def test_fleet_workers_share_one_max_tool_calls(scripted_server, tmp_path, isolated_home):
    def other(req):
        if SUBMIT_SUBTASKS in offered(req):
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": ["count apples", "count pears", "count plums"]})
        if req["messages"][0]["content"] == AGGREGATE_SYSTEM:
            return text("all counted")
        return text("worker done")  # a worker offered no tools any more

    server = scripted_server(responder=counting_responder(other))
    env, log = plugin_env(server, tmp_path, isolated_home)

    proc = run_cli(
        ["run", "--graph", "fleet", "--max-tool-calls", "2", "--max-workers", "3", "--tools", "count",
         "--loop-limit", "0", "--json", "count the fruit"],
        env=env,
    )

    assert proc.returncode == 0, proc.stderr
    ran = executions(log)
    assert len(ran) == 2, ran  # three workers asking again and again: the run's two, not two each
    out = json.loads(proc.stdout)
    assert out["tool_calls_made"] == 2 and out["answer"] == "all counted"
    assert sum(s["tool_calls_made"] for s in out["subtasks"]) == 2 and all(s["ok"] for s in out["subtasks"])
    # the calls past the shared budget were answered "skipped", like the loop's own past its limit
    assert any(r.startswith(SKIPPED) and "(2 tool calls per run)" in r for r in tool_results(server))


# --------------------------------------------------------------------------- sub-agents (CLI)
AGENTS = """\
default: boss
agents:
  boss:
    description: Delegates the counting.
    prompt: You are the boss.
    tools: []
    sub_agents: [helper]
  helper:
    description: Counts things.
    prompt: You are the helper.
    tools: [count]
"""


@pytest.mark.e2e
def test_sub_agents_share_the_callers_max_tool_calls(scripted_server, tmp_path, isolated_home):
    def other(req):
        system = req["messages"][0]["content"]
        first = not any(m["role"] == "tool" for m in req["messages"])
        if "You are the boss." in system and "helper" in offered(req) and first:  # delegate twice, in parallel
            return {"tool_calls": [{"name": "helper", "arguments": {"task": "count the apples"}},
                                   {"name": "helper", "arguments": {"task": "count the pears"}}]}
        return text("boss done" if "You are the boss." in system else "helper done")

    server = scripted_server(responder=counting_responder(other))
    env, log = plugin_env(server, tmp_path, isolated_home)
    agents = tmp_path / "agents.yaml"
    agents.write_text(AGENTS)

    proc = run_cli(
        ["run", "--agents", str(agents), "--max-tool-calls", "3", "--loop-limit", "0", "--json", "count"], env=env
    )

    assert proc.returncode == 0, proc.stderr
    # the two helper calls are two of the run's three: one count is left for both helpers
    assert len(executions(log)) == 1, executions(log)
    out = json.loads(proc.stdout)
    assert out["tool_calls_made"] == 3 and out["answer"] == "boss done"
    assert any(r.startswith(SKIPPED) for r in tool_results(server))


@pytest.mark.graph
async def test_a_fleet_run_as_a_tool_spends_its_callers_max_tool_calls(scripted_server):
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.graphs.fleet import build_fleet_graph
    from smart_agent.tools.agents import as_tool

    calls: Counter = Counter()

    @tool
    def count(label: str) -> str:
        """Count one thing."""
        calls[label] += 1
        return label

    def other(req):
        names = offered(req)
        if "fleet" in names and not any(m["role"] == "tool" for m in req["messages"]):
            return tool_call("fleet", {"task": "count the fruit"})
        if SUBMIT_SUBTASKS in names:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": ["count apples", "count pears", "count plums"]})
        return text("done")

    server = scripted_server(responder=counting_responder(other))
    model = openai_model(server)
    workers = ToolRegistry()
    workers.register(count, ToolMeta())
    fleet = build_fleet_graph(model=model, registry=workers, checkpointer=False)
    caller = ToolRegistry()
    caller.register(as_tool(fleet, "fleet", "Run a fleet of workers on a goal."), ToolMeta())
    graph = build_agent_graph(model=model, registry=caller)

    final = await run_graph(graph, "count", Context(memory=False, loop_limit=0, max_tool_calls=3, max_workers=3))

    assert sum(calls.values()) == 2, calls  # the fleet call is one of the three; its workers share the other two
    assert final["tool_calls_made"] == 3


# --------------------------------------------------------------------------- planner (graph)
def flaky_registry(calls: Counter, *, fails: int = 1, retries: int | None = 1) -> ToolRegistry:
    """``flaky(label)`` fails transiently ``fails`` times per label, then answers (counted)."""

    @tool
    def flaky(label: str) -> str:
        """Fails like a rate-limited service the first times, then answers."""
        calls[label] += 1
        if calls[label] <= fails:
            raise RetryableToolError("429 too many requests")
        return f"{label} ok"

    registry = ToolRegistry()
    registry.register(flaky, ToolMeta(retries=retries) if retries is not None else ToolMeta())
    return registry


def two_steps(**extra):
    return {"steps": [{"id": sid, "tool": "flaky", "args": {"label": sid}, "on_fail": "continue", **extra}
                      for sid in ("a", "b")]}


@pytest.mark.graph
async def test_two_steps_of_a_wave_that_fail_transiently_both_get_their_retries(scripted_server):
    from smart_agent.graphs.planner import build_planner_graph

    calls: Counter = Counter()
    server = scripted_server([submit(two_steps()), "both ran"])
    graph = build_planner_graph(model=openai_model(server), registry=flaky_registry(calls), backoff_base_s=0.01)

    final = await run_graph(graph, "t", Context(model="openai:scripted", max_tool_calls=4))

    results = final["step_results"]
    assert {sid: (r["status"], r["attempts"]) for sid, r in results.items()} == {"a": ("ok", 2), "b": ("ok", 2)}
    assert calls == Counter(a=2, b=2) and final["tool_calls_made"] == 4


@pytest.mark.graph
async def test_a_step_without_retries_uses_the_runs_tool_retries(scripted_server):
    from smart_agent.graphs.planner import build_planner_graph

    calls: Counter = Counter()
    server = scripted_server([submit(two_steps()), "both ran"])
    registry = flaky_registry(calls, retries=None)  # the tool sets none: the run's tool_retries apply
    graph = build_planner_graph(model=openai_model(server), registry=registry, backoff_base_s=0.01)

    final = await run_graph(graph, "t", Context(model="openai:scripted", max_tool_calls=10, tool_retries=1))

    assert calls == Counter(a=2, b=2)  # one retry each: not "every retry the budget has left"
    assert all(r["status"] == "ok" for r in final["step_results"].values()) and final["tool_calls_made"] == 4


@pytest.mark.graph
async def test_not_retried_tool_budget_exhausted_only_when_the_budget_is_spent(scripted_server):
    from smart_agent.graphs.planner import build_planner_graph

    calls: Counter = Counter()
    server = scripted_server([submit(two_steps(retries=5)), "reported"])
    registry = flaky_registry(calls, fails=100)  # never succeeds
    graph = build_planner_graph(model=openai_model(server), registry=registry, backoff_base_s=0.01)

    final = await run_graph(graph, "t", Context(model="openai:scripted", max_tool_calls=5))

    results = final["step_results"]
    assert sum(calls.values()) == 5 and final["tool_calls_made"] == 5  # the budget, not a call less or more
    refused = [r for r in results.values() if "not retried: tool budget exhausted" in r["error"]]
    assert refused  # said, and true: every call of the budget was made
    assert sum(r["attempts"] for r in results.values()) == 5


# --------------------------------------------------------------------------- dual and sub_agent steps (graph)
@pytest.mark.graph
async def test_the_dual_graphs_planner_runs_share_one_max_tool_calls(scripted_server):
    from smart_agent.graphs.dual import build_dual_graph
    from smart_agent.nodes.dual import DECIDE

    calls: Counter = Counter()

    @tool
    def count(label: str) -> str:
        """Count one thing."""
        calls[label] += 1
        return label

    registry = ToolRegistry()
    registry.register(count, ToolMeta())
    executed = itertools.count(1)

    def respond(req):
        names = offered(req)
        if DECIDE in names:  # execute an objective each time (at most three decisions)
            return tool_call(DECIDE, {"action": "execute", "objective": "count two things"})
        if "submit_plan" in names:
            n = next(executed)
            return tool_call("submit_plan", {"steps": [
                {"id": "x", "tool": "count", "args": {"label": f"{n}x"}, "on_fail": "continue"},
                {"id": "y", "tool": "count", "args": {"label": f"{n}y"}, "on_fail": "continue"},
            ]})
        return text("counted")

    server = scripted_server(responder=respond)
    graph = build_dual_graph(model=openai_model(server), registry=registry)

    final = await run_graph(graph, "count", Context(memory=False, max_iterations=3, max_tool_calls=3))

    assert sum(calls.values()) == 3, calls  # three planner runs of two steps: the run's three, not two each
    assert final["tool_calls_made"] == 3


@pytest.mark.graph
async def test_a_planner_steps_sub_agent_spends_the_runs_max_tool_calls(scripted_server):
    from smart_agent.graphs.planner import build_planner_graph
    from smart_agent.graphs.sub_agent import sub_agent_tool

    calls: Counter = Counter()

    @tool
    def count(label: str) -> str:
        """Count one thing."""
        calls[label] += 1
        return label

    children = ToolRegistry()
    children.register(count, ToolMeta())
    plan = {"steps": [{"id": "d", "tool": "sub_agent", "args": {"task": "count everything"}}]}

    def other(req):
        if "submit_plan" in offered(req):
            return submit(plan)
        return text("done")

    server = scripted_server(responder=counting_responder(other))
    model = openai_model(server)
    registry = ToolRegistry()
    registry.register(sub_agent_tool(model=model, registry=children), ToolMeta())
    graph = build_planner_graph(model=model, registry=registry)

    final = await run_graph(graph, "delegate", Context(memory=False, loop_limit=0, max_tool_calls=3))

    assert sum(calls.values()) == 2, calls  # the step is one of the three; its sub-agent has the other two
    assert final["tool_calls_made"] == 3 and final["step_results"]["d"]["status"] == "ok"


# --------------------------------------------------------------------------- model calls (CLI)
def fail_then(answer, status=500):
    """Every other request fails with a retryable error (the OpenAI client retries it on its own)."""
    counter = itertools.count()
    lock = threading.Lock()

    def respond(req):
        with lock:
            n = next(counter)
        if n % 2 == 0:
            return {"error": {"status": status, "message": "overloaded"}, "retry": True,
                    "headers": {"retry-after-ms": "10"}}
        return answer(req)

    return respond


def loops_forever(req):
    if req.get("tools"):
        return tool_call("calculator", {"expression": "1+1"})
    return text("final: 2")


def run_budgeted(server, workspace, *flags):
    from conftest import cli_env

    args = ["run", "loop forever", "--json", "--workspace", str(workspace), "--tools", "calculator",
            "--loop-limit", "0", "--max-tool-calls", "100", "--max-model-calls", "4", *flags]
    return run_cli(args, env=cli_env(server))


@pytest.mark.e2e
def test_the_clients_own_retries_are_model_calls_of_the_budget(scripted_server, workspace):
    server = scripted_server(responder=fail_then(loops_forever))

    proc = run_budgeted(server, workspace, "--model-retries", "2")

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(server.requests) <= 4, len(server.requests)  # --max-model-calls 4: four requests at most
    assert out["usage"]["model_calls"] == len(server.requests)  # and the count says what was sent


@pytest.mark.e2e
def test_a_fallback_and_the_retries_before_it_are_model_calls_of_the_budget(scripted_server, workspace):
    def respond(req):
        if req["model"] == "scripted-model":  # the main model is down; the fallback answers
            return {"error": {"status": 503, "message": "unavailable"}, "retry": True,
                    "headers": {"retry-after-ms": "10"}}
        return loops_forever(req)

    server = scripted_server(responder=respond)

    proc = run_budgeted(server, workspace, "--model-retries", "1", "--fallback-model", "openai:backup-model")

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(server.requests) <= 4, [r["model"] for r in server.requests]
    assert out["usage"]["model_calls"] == len(server.requests)
