"""Benchmark: per-step overhead of the agent loop against LangChain's ``create_agent``.

    python benchmarks/step_overhead.py [--turns 20,100] [--repeat 5] [--tool sync|async]

One in-process scripted chat model (``testing/fake_models.py``, no HTTP, answers at once, on
the event loop as the real clients' async calls do: :func:`scripted_model`) calls one tool per
turn for T turns and then answers; the tool returns 200 characters at once. So a run's wall
time is the framework's own work: building each request, calling the model object, running the
tool call, routing, the state updates. Three runs of the same script with the same single tool:

* ``create_agent`` - ``langchain.agents.create_agent(model, tools=[tool])``, the baseline;
* ``memory off`` - ``build_agent_graph`` offering only that tool, ``memory=False``;
* ``memory on`` - the same with the run's defaults (long-term memory on, the embedded FAISS
  store in a fresh ``SMART_AGENT_HOME``, the local embedding model loaded before timing);
* ``create_agent+limits`` (``--modes``) - ``create_agent`` with the middleware that does at each
  step what the loop does by default: ``SummarizationMiddleware`` (it measures the request against
  a budget; its trigger is never reached), ``ToolCallLimitMiddleware`` and
  ``ModelCallLimitMiddleware``. A comparison at equal features; the targets are against plain
  ``create_agent``;
* ``create_agent+hooks`` and ``memory off+hooks`` (``--modes``) - each with the same user
  middleware: pass-through ``@before_model``, ``@after_model``, ``@wrap_model_call`` and
  ``@wrap_tool_call`` hooks (the loop runs ``after_model`` in a node of its own, as
  ``create_agent`` does). ``memory off+hooks`` is also given as a ratio to ``create_agent+hooks``;
* ``langgraph floor`` (``--modes``) - LangGraph alone on the loop's state schema: a resolver, an
  agent node calling the model and a tools node calling the tool, each followed by a conditional
  edge as the loop's (and create_agent's) nodes are, with none of the loop's per-step duties
  (budget, limits, loop detection, usage, events, reply guards). The floor both frameworks build on;
  ``langgraph floor 3 keys`` is the same on a state of three keys.

No checkpointer on either side. Every round runs the three once, in turn (interleaved), in
one process, after one untimed warm-up run each; a step is one model call (T + 1 per run).
Wall time runs to the answer; CPU time (of the whole process) also counts the memory write a
memory-on run leaves on the memory thread, waited for before the next run starts.
The ratio is the median ms/step of a graph over create_agent's median; "rounds" gives the
lowest and highest ratio of a single round (a run over the create_agent run beside it), the
spread one comparison alone would show. ``rows()`` returns the table rows for
``benchmarks/run_all.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "step_overhead.json"
MODES = ("create_agent", "memory off", "memory on")
# create_agent with the middleware that gives it what the loop does at every step by default: the
# request measured against a context budget (SummarizationMiddleware, its trigger never reached),
# a tool-call budget and a model-call budget. Run with --modes; the target is against create_agent.
LIMITS = "create_agent+limits"
# The floor under both: LangGraph alone running the same script over the loop's state schema
# (resolver, agent and tools nodes routed by conditional edges after each node, as the loop's
# and create_agent's are), with none of the loop's per-step duties. What a step costs before any
# framework work (``--modes``).
FLOOR = "langgraph floor"
# The floor on a state of three keys (messages, task, answer) instead of the loop's: what the size
# of the loop's state costs LangGraph (``--modes``).
FLOOR_SMALL = "langgraph floor 3 keys"
# The same user middleware on both sides (``--modes``): pass-through before_model, after_model,
# wrap_model_call and wrap_tool_call hooks, what running a user's middleware costs each framework.
HOOKS_BASE, HOOKS = "create_agent+hooks", "memory off+hooks"
OUTPUT = "x" * 200


def make_tool(kind: str = "sync") -> Any:
    """The one tool every run offers: ``lookup(n)`` returning 200 characters."""
    from langchain_core.tools import StructuredTool

    def lookup(n: int) -> str:
        """Look up item n."""
        return f"item {n}: {OUTPUT}"

    async def alookup(n: int) -> str:
        """Look up item n."""
        return f"item {n}: {OUTPUT}"

    if kind == "async":
        return StructuredTool.from_function(coroutine=alookup, name="lookup", description="Look up item n.")
    return StructuredTool.from_function(func=lookup, name="lookup", description="Look up item n.")


def script(turns: int) -> list[Any]:
    """T turns that each call ``lookup`` (different arguments: no loop detection), then an answer.
    Each reply reports its token usage, as the providers' replies do (OpenAI, Anthropic, Ollama):
    without it smart-agent estimates the tokens of every request for the run's usage."""
    from langchain_core.messages import AIMessage

    def usage(i: int) -> Any:
        return {"input_tokens": 100 + 80 * i, "output_tokens": 20, "total_tokens": 120 + 80 * i}

    calls = [
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": i}, "id": f"c{i}"}], usage_metadata=usage(i))
        for i in range(turns)
    ]
    return [*calls, AIMessage(f"Looked up {turns} items.", usage_metadata=usage(turns))]


def floor_graph(model: Any, tool: Any, small: bool = False) -> Any:
    """:data:`FLOOR`'s graph: the model called with the conversation and the tool bound, the tool
    called with the model's arguments; after each node a conditional edge (an async function, run
    on the event loop as the loop's routes are) picks the next one. ``small``: on a state of three
    keys (:data:`FLOOR_SMALL`), else on the loop's."""
    from typing import Annotated

    from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from smart_agent.state import AgentState, merge_messages

    # (the functional form, whose types are evaluated here: the class form's would be looked up
    # as text in this module's globals)
    fields = {"messages": Annotated[list[AnyMessage], merge_messages], "task": str, "answer": str}
    small_state = TypedDict("small_state", fields, total=False)  # type: ignore[misc]

    bound = model.bind_tools([tool])

    async def resolver(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [HumanMessage(state["task"])]}

    async def agent(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    async def tools(state: dict[str, Any]) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        out = await tool.ainvoke(call["args"])
        return {"messages": [ToolMessage(out, tool_call_id=call["id"])]}

    async def to_agent(state: dict[str, Any]) -> str:
        return "agent"

    async def after_agent(state: dict[str, Any]) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    builder = StateGraph(small_state if small else AgentState)
    builder.add_node("resolver", resolver)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "resolver")
    builder.add_conditional_edges("resolver", to_agent, ["agent"])
    builder.add_conditional_edges("agent", after_agent, ["tools", END])
    builder.add_conditional_edges("tools", to_agent, ["agent"])
    return builder.compile()


def pass_through_hooks() -> list[Any]:
    """:data:`HOOKS`' middleware: one hook of each kind that a step runs, changing nothing."""
    from langchain.agents.middleware import after_model, before_model, wrap_model_call, wrap_tool_call

    @before_model
    def before(state: Any, runtime: Any) -> None:
        return None

    @after_model
    def after(state: Any, runtime: Any) -> None:
        return None

    @wrap_model_call
    async def around_model(request: Any, handler: Any) -> Any:
        return await handler(request)

    @wrap_tool_call
    async def around_tool(request: Any, handler: Any) -> Any:
        return await handler(request)

    return [before, after, around_model, around_tool]


def scripted_model(turns: int) -> Any:
    """The scripted model of a run of ``turns`` tool turns, answering on the event loop.

    LangChain runs a chat model without an async implementation (the scripted one's replies are
    sync) on the loop's default executor: every call would also pay a thread hop, which a real
    client's async HTTP call does not. Both frameworks paid it alike, so it only diluted the ratio
    (``benchmarks/step_breakdown.py --executor-model`` measures with it)."""
    return _on_loop_model()(responses=script(turns))


@functools.cache
def _on_loop_model() -> Any:
    from smart_agent.testing.fake_models import ScriptedChatModel

    class OnLoopScriptedModel(ScriptedChatModel):
        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            return self._generate(messages, stop=stop, **kwargs)

    return OnLoopScriptedModel


def runner(mode: str, turns: int, tool: Any) -> Callable[[], Any]:
    """A coroutine function running ``mode`` once on a fresh model and graph (built outside the timing)."""
    model = scripted_model(turns)
    if mode in (FLOOR, FLOOR_SMALL):
        floor = floor_graph(model, tool, small=mode == FLOOR_SMALL)
        return lambda: floor.ainvoke({"task": "Look the items up."})
    if mode in ("create_agent", LIMITS, HOOKS_BASE):
        from langchain.agents import create_agent
        from langchain.agents.middleware import (
            ModelCallLimitMiddleware,
            SummarizationMiddleware,
            ToolCallLimitMiddleware,
        )

        middleware = [
            SummarizationMiddleware(model, trigger=("tokens", 10**9)),
            ToolCallLimitMiddleware(run_limit=turns + 1),
            ModelCallLimitMiddleware(run_limit=turns + 2),
        ] if mode == LIMITS else pass_through_hooks() if mode == HOOKS_BASE else []
        agent = create_agent(model, tools=[tool], middleware=middleware)
        return lambda: agent.ainvoke({"messages": [{"role": "user", "content": "Look the items up."}]})
    from smart_agent.config.context import Context
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.tools.registry import ToolMeta, ToolRegistry

    registry = ToolRegistry()
    registry.register(tool, ToolMeta(source="user"))
    graph = build_agent_graph(model=model, registry=registry, middleware=pass_through_hooks() if mode == HOOKS else ())
    ctx = Context(memory=mode == "memory on", max_tool_calls=turns + 1)
    return lambda: graph.ainvoke({"task": "Look the items up."}, context=ctx)


async def timed(mode: str, turns: int, tool: Any) -> tuple[float, float]:
    """Wall and CPU seconds of one run (the graph and model are built before the clocks start).

    Wall time ends with the answer; CPU time also counts the memory write the run left on the
    memory thread (``memory/background.py``), waited for here: it is this run's work, and it
    would otherwise run during (and be charged to) the next run, often create_agent's."""
    from smart_agent.memory import background

    run = runner(mode, turns, tool)
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    result = await run()
    elapsed = time.perf_counter() - start
    background.wait()
    cpu = time.process_time() - cpu
    messages = result.get("messages") or []
    if len(messages) < 2 * turns + 2:  # the task, T calls and T results, the answer
        raise RuntimeError(f"{mode}: the run ended early ({len(messages)} messages)")
    return elapsed, cpu


async def measure(turns: int, repeat: int, tool_kind: str, modes: Sequence[str] = MODES) -> list[dict[str, Any]]:
    tool = make_tool(tool_kind)
    for mode in modes:  # warm-up: imports, the embedding model, the memory store
        await timed(mode, turns, tool)
    wall: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(repeat):
        for mode in modes:
            w, c = await timed(mode, turns, tool)
            wall[mode].append(w)
            cpu[mode].append(c)
    steps = turns + 1

    def per_step(samples: list[float]) -> float:
        return statistics.median(samples) / steps * 1000

    out = []
    for mode in modes:
        ms, cpu_ms = per_step(wall[mode]), per_step(cpu[mode])
        # Each round's own ratio (its run over the create_agent run next to it): how far one
        # round's comparison strays from the medians' ratio.
        rounds = [w / base for w, base in zip(wall[mode], wall["create_agent"], strict=True)]
        out.append({
            "turns": turns,
            "mode": mode,
            "ms_per_step": round(ms, 3),
            "ratio": round(ms / per_step(wall["create_agent"]), 3),
            **({"ratio_to_hooks_base": round(ms / per_step(wall[HOOKS_BASE]), 3)}
               if mode == HOOKS and HOOKS_BASE in wall else {}),
            "round_ratios": f"{min(rounds):.2f}–{max(rounds):.2f}",
            "cpu_ms_per_step": round(cpu_ms, 3),
            "cpu_ratio": round(cpu_ms / per_step(cpu["create_agent"]), 3),
            "runs_ms": [round(s * 1000, 1) for s in wall[mode]],
        })
    return out


def rows(
    turns: Sequence[int] = (20, 100), repeat: int = 5, tool: str = "sync", modes: Sequence[str] = MODES,
    processes: int = 1,
) -> list[dict[str, Any]]:
    """The benchmark's rows (``turns``, ``mode``, ``ms_per_step``, ``ratio`` to create_agent).
    ``processes`` > 1: the medians of that many processes, one after the other (:func:`across`)."""
    if processes > 1:
        return across(processes, turns, repeat, tool, modes)
    os.environ.setdefault("SMART_AGENT_HOME", tempfile.mkdtemp(prefix="smart-agent-bench-"))
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    result: list[dict[str, Any]] = []
    for t in turns:
        result += asyncio.run(measure(t, repeat, tool, modes))
    return result


def across(
    processes: int, turns: Sequence[int], repeat: int, tool: str, modes: Sequence[str]
) -> list[dict[str, Any]]:
    """The rows of ``processes`` runs of this script, each a process of its own: per row, the median
    of the processes' ``ms_per_step`` and ratios (``process_ratios``: each one's). The median of one
    process's rounds moves by a few percent from one process to the next (its memory layout, its
    hash seed, the machine's load then), more than the rounds within it do."""
    runs: list[list[dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="step-overhead-") as tmp:
        for i in range(processes):
            out = Path(tmp) / f"{i}.json"
            command = [
                sys.executable, str(Path(__file__).resolve()), "--turns", ",".join(map(str, turns)),
                "--repeat", str(repeat), "--tool", tool, "--modes", ",".join(modes), "--out", str(out),
            ]  # fmt: skip
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            runs.append(json.loads(out.read_text())["rows"])
    combined = []
    for at, first in enumerate(runs[0]):
        same = [run[at] for run in runs]
        rounds = [float(x) for r in same for x in r["round_ratios"].split("–")]
        combined.append({
            "turns": first["turns"],
            "mode": first["mode"],
            "ms_per_step": round(statistics.median(r["ms_per_step"] for r in same), 3),
            "ratio": round(statistics.median(r["ratio"] for r in same), 3),
            "process_ratios": [r["ratio"] for r in same],
            **({"ratio_to_hooks_base": round(statistics.median(r["ratio_to_hooks_base"] for r in same), 3)}
               if "ratio_to_hooks_base" in first else {}),
            "round_ratios": f"{min(rounds):.2f}–{max(rounds):.2f}",
            "cpu_ms_per_step": round(statistics.median(r["cpu_ms_per_step"] for r in same), 3),
            "cpu_ratio": round(statistics.median(r["cpu_ratio"] for r in same), 3),
            "runs_ms": [x for r in same for x in r["runs_ms"]],
        })  # fmt: skip
    return combined


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", default="20,100", help="comma list of tool turns per run")
    p.add_argument("--repeat", type=int, default=5, help="interleaved rounds (median)")
    p.add_argument("--processes", type=int, default=1, help="that many processes, one after another (median)")
    p.add_argument("--tool", choices=("sync", "async"), default="sync", help="the tool's kind (default: sync)")
    p.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"comma list of runs (create_agent always included; also {LIMITS}, {FLOOR}, "
        f"'{FLOOR_SMALL}', {HOOKS_BASE}, {HOOKS})",
    )
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    turns = [int(t) for t in args.turns.split(",") if t.strip()]
    known = (*MODES, LIMITS, FLOOR, FLOOR_SMALL, HOOKS_BASE, HOOKS)
    modes = ["create_agent", *(m for m in args.modes.split(",") if m in known and m != "create_agent")]
    table = rows(turns, args.repeat, args.tool, modes, max(1, args.processes))
    command = f"python benchmarks/step_overhead.py --turns {args.turns} --repeat {args.repeat} --tool {args.tool}"
    if args.processes > 1:
        command += f" --processes {args.processes}"
    if modes != list(MODES):
        command += f' --modes "{",".join(modes[1:])}"'
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": table, "reproduce": command, "python": sys.version.split()[0]}, indent=2) + "\n")
    within = f"median of {args.repeat}" + (f" rounds, of {args.processes} processes" if args.processes > 1 else "")
    print(f"## Per-step overhead ({args.tool} tool, {within})\n")
    print("| turns | run | ms / step | ÷ create_agent | rounds: ÷ create_agent | CPU ms / step | ÷ create_agent |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in table:
        print(
            f"| {r['turns']} | {r['mode']} | {r['ms_per_step']:.2f} | {r['ratio']:.3f} | {r['round_ratios']} | "
            f"{r['cpu_ms_per_step']:.2f} | {r['cpu_ratio']:.3f} |"
        )
    for r in table:
        if "process_ratios" in r and r["mode"] != "create_agent":
            print(f"\n{r['turns']} turns, {r['mode']}: each process ÷ create_agent = "
                  + ", ".join(f"{x:.3f}" for x in r["process_ratios"]))
    for r in table:
        if "ratio_to_hooks_base" in r:
            print(f"\n{r['turns']} turns: {HOOKS} ÷ {HOOKS_BASE} = {r['ratio_to_hooks_base']:.3f}")
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
