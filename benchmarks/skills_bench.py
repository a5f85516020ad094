"""Benchmark: what skills, AGENTS.md and the sub-agent tools cost the agent loop.

    python benchmarks/skills_bench.py [--turns 20] [--repeat 15] [--children 5]

Two measurements, each interleaved in one process (in-process scripted model, no HTTP, one tool
returning 200 characters; ``step_overhead.py``'s set-up):

* **per step** - T tool turns then an answer, for ``create_agent`` (the baseline), the loop with
  the defaults and nothing to read (``agents_md`` on, no AGENTS.md, no skills: the run start still
  looks for them, off the event loop), the loop reading 20 skills and an 8 kB AGENTS.md at each run
  start (listed in every request), and the loop with ``sub_agent_tools`` on (four more tool schemas
  offered, never called). The ratio is the median ms/step over ``create_agent``'s, and over the
  plain loop's; CPU time (of the process) beside it, steadier on a busy machine.
* **a delegated task** - the agent hands one task of C tool turns to a child and answers with its
  result: blocking ``sub_agent`` (the baseline) against ``start_sub_agent`` then
  ``check_sub_agent(wait_s)`` (the background task, its run scope, the run's shared meter). Median
  ms per run and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "skills.json"
STEP_MODES = ("create_agent", "loop", "loop + 20 skills + AGENTS.md", "loop + sub-agent tools")
CHILD_MODES = ("blocking sub_agent", "background start + check")


def _setup(folder: Path) -> tuple[Path, Path]:
    """20 skills and a workspace holding an 8 kB AGENTS.md."""
    skills, ws = folder / "skills", folder / "ws"
    for i in range(20):
        path = skills / f"skill-{i:02d}"
        path.mkdir(parents=True)
        (path / "SKILL.md").write_text(
            f"---\nname: skill-{i:02d}\ndescription: What skill {i} is for, in one sentence of some length.\n---\n"
            + "Step.\n" * 200
        )
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Project rule: keep functions short.\n" * 230)
    return skills, ws


def step_runner(mode: str, turns: int, tool: Any, skills: Path, ws: Path, empty: Path) -> Callable[[], Any]:
    sys.path.insert(0, str(HERE))
    import step_overhead  # type: ignore[import-not-found]

    if mode == "create_agent":
        return step_overhead.runner("create_agent", turns, tool)
    from smart_agent.config.context import Context
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.testing.fake_models import ScriptedChatModel
    from smart_agent.tools.registry import ToolMeta, ToolRegistry

    registry = ToolRegistry()
    registry.register(tool, ToolMeta(source="user"))
    graph = build_agent_graph(model=ScriptedChatModel(responses=step_overhead.script(turns)), registry=registry)
    extra: dict[str, Any] = {"workspace": str(empty)}
    if mode == STEP_MODES[2]:
        extra = {"workspace": str(ws), "skills": [str(skills)]}
    elif mode == STEP_MODES[3]:
        extra["sub_agent_tools"] = True
    ctx = Context(memory=False, max_tool_calls=turns + 1, **extra)
    return lambda: graph.ainvoke({"task": "Look the items up."}, context=ctx)


def child_runner(mode: str, children_turns: int, tool: Any, empty: Path) -> Callable[[], Any]:
    from langchain_core.messages import AIMessage

    from smart_agent.config.context import Context
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.runs.background import run_scope
    from smart_agent.testing.fake_models import ScriptedChatModel
    from smart_agent.tools.registry import ToolMeta, ToolRegistry

    def respond(messages: list[Any]) -> AIMessage:
        task = next(m.content for m in messages if m.type == "human")
        tools = sum(1 for m in messages if m.type == "tool")
        last = messages[-1]
        if task.startswith("CHILD"):
            if tools < children_turns:
                return AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": tools}, "id": f"k{tools}"}])
            return AIMessage("child done")
        if last.type == "human":
            name = "sub_agent" if mode == CHILD_MODES[0] else "start_sub_agent"
            return AIMessage("", tool_calls=[{"name": name, "args": {"task": "CHILD: look up"}, "id": "p0"}])
        if str(last.content).startswith("Started background task"):
            found = str(last.content).split()[3].rstrip(":")
            return AIMessage("", tool_calls=[{"name": "check_sub_agent", "args": {"task_id": found, "wait_s": 30},
                                              "id": "p1"}])
        return AIMessage(f"parent: {last.content}")

    registry = ToolRegistry()
    registry.register(tool, ToolMeta(source="user"))
    model = ScriptedChatModel(responses=[respond] * (children_turns + 8))
    graph = build_agent_graph(model=model, registry=registry)
    ctx = Context(memory=False, sub_agent_tools=True, workspace=str(empty))

    async def run() -> Any:
        async with run_scope():
            result = await graph.ainvoke({"task": "Delegate it."}, context=ctx)
        if "child done" not in result["answer"]:
            raise RuntimeError(f"{mode}: {result['answer']}")
        return result

    return run


async def _timed(run: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU: of the whole process, the reading thread included)."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    await run()
    return time.perf_counter() - start, time.process_time() - cpu


async def measure(turns: int, repeat: int, children_turns: int) -> dict[str, list[dict[str, Any]]]:
    sys.path.insert(0, str(HERE))
    import step_overhead  # type: ignore[import-not-found]

    tool = step_overhead.make_tool("async")
    with tempfile.TemporaryDirectory(prefix="smart-agent-skills-bench-") as tmp:
        skills, ws = _setup(Path(tmp))
        empty = Path(tmp) / "empty"
        empty.mkdir()
        steps: dict[str, list[tuple[float, float]]] = {m: [] for m in STEP_MODES}
        runs: dict[str, list[tuple[float, float]]] = {m: [] for m in CHILD_MODES}
        for rnd in range(repeat + 1):  # round 0: warm-up
            for mode in STEP_MODES:
                wall, cpu = await _timed(step_runner(mode, turns, tool, skills, ws, empty))
                if rnd:
                    steps[mode].append((wall / (turns + 1) * 1000, cpu / (turns + 1) * 1000))
            for mode in CHILD_MODES:
                wall, cpu = await _timed(child_runner(mode, children_turns, tool, empty))
                if rnd:
                    runs[mode].append((wall * 1000, cpu * 1000))

    def med(samples: list[tuple[float, float]], i: int) -> float:
        return statistics.median(s[i] for s in samples)

    step_rows = [
        {"turns": turns, "mode": m, "ms_per_step": round(med(steps[m], 0), 3),
         "ratio_create_agent": round(med(steps[m], 0) / med(steps["create_agent"], 0), 3),
         "ratio_loop": round(med(steps[m], 0) / med(steps["loop"], 0), 3),
         "cpu_ms_per_step": round(med(steps[m], 1), 3),
         "cpu_ratio_loop": round(med(steps[m], 1) / med(steps["loop"], 1), 3)}
        for m in STEP_MODES
    ]
    child_rows = [
        {"child_turns": children_turns, "mode": m, "ms_per_run": round(med(runs[m], 0), 2),
         "ratio": round(med(runs[m], 0) / med(runs[CHILD_MODES[0]], 0), 3),
         "cpu_ms_per_run": round(med(runs[m], 1), 2),
         "cpu_ratio": round(med(runs[m], 1) / med(runs[CHILD_MODES[0]], 1), 3)}
        for m in CHILD_MODES
    ]
    return {"steps": step_rows, "children": child_rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--turns", type=int, default=20, help="tool turns of the per-step runs")
    p.add_argument("--repeat", type=int, default=15, help="interleaved rounds (median)")
    p.add_argument("--children", type=int, default=5, help="tool turns of the delegated task")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    os.environ.setdefault("SMART_AGENT_HOME", tempfile.mkdtemp(prefix="smart-agent-bench-"))
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    result = asyncio.run(measure(args.turns, args.repeat, args.children))
    command = (
        f"python benchmarks/skills_bench.py --turns {args.turns} --repeat {args.repeat} --children {args.children}"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**result, "reproduce": command, "python": sys.version.split()[0]}, indent=2) + "\n")
    print(f"## Per step ({args.turns} tool turns, median of {args.repeat})\n")
    print("| run | ms / step | ÷ create_agent | ÷ loop | CPU ms / step | CPU ÷ loop |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in result["steps"]:
        print(f"| {r['mode']} | {r['ms_per_step']:.3f} | {r['ratio_create_agent']:.3f} | {r['ratio_loop']:.3f} | "
              f"{r['cpu_ms_per_step']:.3f} | {r['cpu_ratio_loop']:.3f} |")
    print(f"\n## A delegated task ({args.children} tool turns in the child, median of {args.repeat})\n")
    print("| run | ms / run | ÷ blocking | CPU ms / run | CPU ÷ blocking |\n| --- | ---: | ---: | ---: | ---: |")
    for r in result["children"]:
        print(f"| {r['mode']} | {r['ms_per_run']:.2f} | {r['ratio']:.3f} | {r['cpu_ms_per_run']:.2f} | "
              f"{r['cpu_ratio']:.3f} |")
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
