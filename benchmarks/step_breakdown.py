"""Benchmark: where the time of an agent-loop run goes, beside ``create_agent``'s.

    python benchmarks/step_breakdown.py [--turns 20] [--runs 200] [--rounds 5] [--executor-model]

The runs of ``step_overhead.py`` (the same script, scripted model and tool, no checkpointer), memory
off, timed in wall time around parts of the run:

* **model call**: the scripted chat model's ``ainvoke`` (LangChain's own call path, both sides);
* **tool execution**: the loop's ``run_tool`` (arguments, the worker thread, the result) and, for
  ``create_agent``, the tool's ``ainvoke`` (LangChain's executor hop);
* **agent node / tools node, own work**: the loop's nodes less the model call / tool executions
  in them (the policies, the usage meter, the request's budget, the reply guard, events...);
* **routes**: the loop's conditional edges' decisions (``nodes/routes.py``);
* **LangGraph and the rest**: the run's time less all of the above (for ``create_agent`` this also
  holds its own nodes' work and edges).

``--executor-model``: the scripted model as LangChain runs a sync model (its replies computed on
the loop's default executor, a thread hop per call) instead of on the event loop.
Timing wrappers cost about a microsecond a call, on both sides. Medians of ``--rounds``
interleaved rounds of ``--runs`` runs each; results in ``benchmarks/results/step_breakdown.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import step_overhead  # type: ignore[import-not-found]  # noqa: E402  (the runs measured)

RESULTS = HERE / "results" / "step_breakdown.json"
PARTS = ("model call", "tool execution", "resolver node", "agent node, own work", "tools node, own work", "routes")
_spent: dict[str, float] = {}


def _timed_async(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)  # (keeps the signature LangGraph reads from a node)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            _spent[key] = _spent.get(key, 0.0) + time.perf_counter() - start

    return timed


def _timed_nodes(key: str, factory: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(factory)
    def make(*args: Any, **kwargs: Any) -> Any:
        return _timed_async(key, factory(*args, **kwargs))

    return make


@contextlib.contextmanager
def instrumented(executor_model: bool = False) -> Iterator[None]:
    """The parts timed wrapped while the block runs (build the graphs inside it), put back after."""
    from langchain_core.tools import StructuredTool

    import smart_agent.graphs.agent as graph_module
    import smart_agent.nodes.routes as routes
    import smart_agent.nodes.tools as tools_node
    from smart_agent.testing.fake_models import ScriptedChatModel

    decide = routes.Edge.invoke

    def invoke(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return decide(self, *args, **kwargs)
        finally:
            _spent["routes"] = _spent.get("routes", 0.0) + time.perf_counter() - start

    wrapped: list[tuple[Any, str, Any]] = [
        (ScriptedChatModel, "ainvoke", _timed_async("model call", ScriptedChatModel.ainvoke)),
        (tools_node, "run_tool", _timed_async("tool execution", tools_node.run_tool)),
        (StructuredTool, "ainvoke", _timed_async("tool execution", StructuredTool.ainvoke)),
        (graph_module, "make_resolver", _timed_nodes("resolver node", graph_module.make_resolver)),
        (graph_module, "make_two_phase_node", _timed_nodes("agent node", graph_module.make_two_phase_node)),
        (graph_module, "make_tools_node", _timed_nodes("tools node", graph_module.make_tools_node)),
        (routes.Edge, "invoke", invoke),
    ]
    if executor_model:  # (LangChain runs the scripted model's sync replies on its executor)
        wrapped.append(
            (step_overhead, "scripted_model", lambda turns: ScriptedChatModel(responses=step_overhead.script(turns)))
        )
    own = object()  # (what an attribute a class inherits is put back as: nothing of its own)
    kept = [(owner, name, vars(owner).get(name, own)) for owner, name, _ in wrapped]
    try:
        for owner, name, value in wrapped:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in kept:
            if value is own:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


async def one_round(mode: str, turns: int, runs: int, tool: Any) -> dict[str, float]:
    """ms per run of each part over ``runs`` runs of ``mode`` (graphs built before the clock)."""
    batch = [step_overhead.runner(mode, turns, tool) for _ in range(runs)]
    _spent.clear()
    gc.collect()
    start = time.perf_counter()
    for run in batch:
        await run()
    total = time.perf_counter() - start
    got = {k: v * 1000 / runs for k, v in _spent.items()}
    out = {
        "run": total * 1000 / runs,
        "model call": got.get("model call", 0.0),
        "tool execution": got.get("tool execution", 0.0),
    }
    if mode != "create_agent":
        out["agent node, own work"] = got.get("agent node", 0.0) - out["model call"]
        out["tools node, own work"] = got.get("tools node", 0.0) - out["tool execution"]
        out["routes"] = got.get("routes", 0.0)
        out["resolver node"] = got.get("resolver node", 0.0)
    out["LangGraph and the rest"] = out["run"] - sum(out.get(p, 0.0) for p in PARTS)
    return out


async def measure(turns: int, runs: int, rounds: int, executor_model: bool = False) -> dict[str, dict[str, float]]:
    """Median ms per run of each part of each mode's runs."""
    tool = step_overhead.make_tool("sync")
    modes = ("create_agent", "memory off")
    got: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    with instrumented(executor_model):
        for mode in modes:  # warm-up
            await one_round(mode, turns, min(runs, 10), tool)
        for _ in range(rounds):
            for mode in modes:
                got[mode].append(await one_round(mode, turns, runs, tool))
    return {m: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]} for m, rs in got.items()}


def table(result: dict[str, dict[str, float]], turns: int) -> list[str]:
    base, loop = result["create_agent"], result["memory off"]
    lines = ["| part | create_agent ms / run | memory off ms / run | difference |", "| --- | ---: | ---: | ---: |"]
    for part in ("run", *PARTS, "LangGraph and the rest"):
        a, b = base.get(part), loop.get(part, 0.0)
        shown = "—" if a is None else f"{a:.2f}"
        diff = f"{b - (a or 0.0):+.2f}"
        lines.append(f"| {part} | {shown} | {b:.2f} | {diff} |")
    lines.append(f"\n{turns} turns: memory off ÷ create_agent = {loop['run'] / base['run']:.3f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=20, help="tool turns per run")
    p.add_argument("--runs", type=int, default=200, help="runs per round and mode")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median)")
    p.add_argument("--executor-model", action="store_true", help="the scripted model's replies on the executor")
    args = p.parse_args(argv)
    result = asyncio.run(measure(args.turns, args.runs, args.rounds, args.executor_model))
    command = f"python benchmarks/step_breakdown.py --turns {args.turns} --runs {args.runs} --rounds {args.rounds}"
    command += " --executor-model" if args.executor_model else ""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = RESULTS.with_name("step_breakdown_executor.json") if args.executor_model else RESULTS
    out.write_text(json.dumps({"command": command, "turns": args.turns, "result": result}, indent=2) + "\n")
    print("\n".join(table(result, args.turns)))
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
