"""Benchmark: memory under concurrency -- the agent graph with memory on against ``create_agent``.

    python benchmarks/memory_concurrency.py [--concurrency 1,8,32] [--rounds 7] [--turns 5]

One process, one event loop. Every run is one ``ainvoke`` on its own thread id (both graphs
compiled with an ``InMemorySaver``), all runs of a batch started together with
``asyncio.gather``. The model is the same scripted chat model for both (in-process, no HTTP):
each call sleeps ``--latency`` (50 ms) on the event loop, then asks for ``lookup(n)`` until the
run has made ``--turns`` tool calls, then answers. Modes, interleaved batch by batch:

* ``create_agent`` -- ``langchain.agents.create_agent(model, tools=[lookup], checkpointer=...)``,
  the baseline;
* ``memory on`` -- ``build_agent_graph(model=..., registry=[lookup], checkpointer=...)`` with the
  run's defaults: long-term memory on, the embedded FAISS store in a fresh ``SMART_AGENT_HOME``,
  the local embedding model (loaded before timing). Each run's task is distinct (a new sentence
  per run), so every run embeds its own query and leaves its own memory behind;
* ``memory off`` (``--modes``) -- the same graph with ``memory=False``;
* ``memory on (recall in threads)`` (``--modes``) -- memory on with every recall's search on the
  memory threads (``nodes.memory.RECALL_ON_LOOP = False``), as before the search moved to the
  run's loop: the two compared in one process;
* ``memory on (one embedding call)`` (``--modes``) -- memory on with the embedder taking every
  waiting query into one model call (``memory.vectors.CALL_TEXTS`` unbounded) instead of calls of
  a few, as before: the two compared in one process.

``--jitter J``: each model call sleeps ``latency`` ± ``J`` seconds (uniform, seeded) instead of
exactly ``latency``, as a real model's replies vary: runs that start together then drift apart.

Per batch: ``answered`` is the time until every run of the batch has returned its answer;
``sustained`` runs on until the work the runs left behind is done too (the memory writes and
consolidation the memory thread still has queued: ``memory.service.drain()``), i.e. until the
process is idle again, and the next batch starts only then. Throughput = runs / time; the
ratio is create_agent's median batch time over the mode's (so above 1 is faster). Latency: each
run's own time from the batch start to its answer; p95 over the runs of all rounds. Medians of
``--rounds`` interleaved rounds, after one untimed warm-up batch of each mode.

``rows()`` gives the rows for ``benchmarks/run_all.py``; results go to
``benchmarks/results/memory_concurrency.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "memory_concurrency.json"
MODES = ("create_agent", "memory on")
IN_THREADS = "memory on (recall in threads)"
ONE_CALL = "memory on (one embedding call)"
OUTPUT = "x" * 200
SUBJECTS = ("Ada", "Bob", "the client", "my sister", "the landlord", "our team", "the intern", "Grandma")
THINGS = ("green tea", "the budget", "a trip to Lisbon", "Rust", "the flaky tests", "jazz", "the tax return",
          "dark mode", "the invoice from March", "French lessons", "the garden shed", "the database migration")


def make_model(turns: int, latency: float, jitter: float = 0.0) -> Any:
    """A chat model that sleeps ``latency`` seconds per call (± ``jitter``, uniform, seeded; on the
    loop), then calls ``lookup`` until the conversation's last human message has ``turns`` tool
    results after it, then answers."""
    import random

    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    def reply(messages: Sequence[Any]) -> AIMessage:
        done = 0
        for msg in reversed(messages):
            if isinstance(msg, HumanMessage):
                break
            done += isinstance(msg, ToolMessage)
        usage = {"input_tokens": 100 + 80 * done, "output_tokens": 20, "total_tokens": 120 + 80 * done}
        if done < turns:
            call = {"name": "lookup", "args": {"n": done}, "id": f"call_{done}", "type": "tool_call"}
            return AIMessage("", tool_calls=[call], usage_metadata=usage)  # type: ignore[arg-type]
        return AIMessage(f"Looked up {turns} items.", usage_metadata=usage)  # type: ignore[arg-type]

    rng = random.Random(7)

    def pause() -> float:
        return latency + rng.uniform(-jitter, jitter) if jitter else latency

    class SleepyModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "sleepy-scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            time.sleep(pause())
            return ChatResult(generations=[ChatGeneration(message=reply(messages))])

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            await asyncio.sleep(pause())
            return ChatResult(generations=[ChatGeneration(message=reply(messages))])

    return SleepyModel()


def make_tool() -> Any:
    from langchain_core.tools import StructuredTool

    async def lookup(n: int) -> str:
        """Look up item n."""
        return f"item {n}: {OUTPUT}"

    return StructuredTool.from_function(coroutine=lookup, name="lookup", description="Look up item n.")


_task_numbers = itertools.count()


def task() -> str:
    """A new task sentence for each run (so each run embeds its own query and writes its own memory)."""
    i = next(_task_numbers)
    return (f"Look up the {i % 97 + 2} items {SUBJECTS[i % len(SUBJECTS)]} ordered about "
            f"{THINGS[(i // len(SUBJECTS)) % len(THINGS)]}, order number {i}.")


def runner(mode: str, model: Any, tool: Any) -> Callable[[str], Any]:
    """``run(thread_id)``: one ``ainvoke`` of ``mode``'s graph (compiled once per mode)."""
    from langgraph.checkpoint.memory import InMemorySaver

    if mode == "create_agent":
        from langchain.agents import create_agent

        agent = create_agent(model, tools=[tool], checkpointer=InMemorySaver())
        return lambda tid: agent.ainvoke(
            {"messages": [{"role": "user", "content": task()}]}, {"configurable": {"thread_id": tid}}
        )
    from smart_agent.config.context import Context
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.memory import vectors
    from smart_agent.tools.registry import ToolMeta, ToolRegistry

    registry = ToolRegistry()
    registry.register(tool, ToolMeta(source="user"))
    graph = build_agent_graph(model=model, registry=registry, checkpointer=InMemorySaver())
    ctx = Context(memory=mode != "memory off", max_tool_calls=100)
    on_loop = mode != IN_THREADS
    call_texts = 1 << 30 if mode == ONE_CALL else vectors.CALL_TEXTS
    from smart_agent.nodes import memory as memory_nodes

    def run(tid: str) -> Any:
        memory_nodes.RECALL_ON_LOOP = on_loop  # (one mode's batch runs at a time)
        vectors.CALL_TEXTS = call_texts
        return graph.ainvoke({"task": task()}, {"configurable": {"thread_id": tid}}, context=ctx)

    return run


_thread_ids = itertools.count()


async def batch(run: Callable[[str], Any], n: int, turns: int) -> dict[str, Any]:
    """One batch of ``n`` concurrent runs: answered and sustained seconds, each run's latency."""
    from smart_agent.memory.service import drain

    latencies: list[float] = []

    async def one() -> None:
        result = await run(f"bench-{next(_thread_ids)}")
        latencies.append(time.perf_counter() - start)
        if len(result.get("messages") or []) < 2 * turns + 2:
            raise RuntimeError(f"a run ended early: {result.get('messages')}")

    gc.collect()
    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    answered = time.perf_counter() - start
    await asyncio.to_thread(drain)  # the memory work the runs left behind (none for create_agent)
    sustained = time.perf_counter() - start
    return {"answered": answered, "sustained": sustained, "latencies": latencies}


async def measure(
    concurrency: Sequence[int], rounds: int, turns: int, latency: float, modes: Sequence[str], jitter: float = 0.0
) -> list[dict[str, Any]]:
    tool = make_tool()
    model = make_model(turns, latency, jitter)
    runs = {m: runner(m, model, tool) for m in modes}
    for m in modes:  # warm-up: imports, the embedding model, the memory store
        await batch(runs[m], max(concurrency), turns)
    out = []
    for n in concurrency:
        got: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for r in range(rounds):
            order = modes if r % 2 == 0 else list(reversed(modes))  # interleaved, alternating first
            for m in order:
                got[m].append(await batch(runs[m], n, turns))
        base = got["create_agent"]
        base_answered = statistics.median(b["answered"] for b in base)
        base_sustained = statistics.median(b["sustained"] for b in base)
        base_p95 = _p95([x for b in base for x in b["latencies"]])
        for m in modes:
            answered = statistics.median(b["answered"] for b in got[m])
            sustained = statistics.median(b["sustained"] for b in got[m])
            lat = [x for b in got[m] for x in b["latencies"]]
            rounds_ratio = [b0["sustained"] / b["sustained"] for b, b0 in zip(got[m], base, strict=True)]
            out.append({
                "concurrency": n,
                "mode": m,
                "answered_s": round(answered, 3),
                "sustained_s": round(sustained, 3),
                "runs_per_s": round(n / sustained, 1),
                "throughput_ratio_answered": round(base_answered / answered, 3),
                "throughput_ratio_sustained": round(base_sustained / sustained, 3),
                "round_ratios_sustained": f"{min(rounds_ratio):.2f}–{max(rounds_ratio):.2f}",
                "p95_latency_s": round(_p95(lat), 3),
                "p95_latency_ratio": round(_p95(lat) / base_p95, 3),
            })
    return out


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def rows(
    concurrency: Sequence[int] = (1, 8, 32), rounds: int = 7, turns: int = 5, latency: float = 0.05,
    modes: Sequence[str] = MODES, jitter: float = 0.0,
) -> list[dict[str, Any]]:
    """The benchmark's rows (``concurrency``, ``mode``, throughput and latency ratios to create_agent)."""
    os.environ.setdefault("SMART_AGENT_HOME", tempfile.mkdtemp(prefix="smart-agent-bench-"))
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return asyncio.run(measure(concurrency, rounds, turns, latency, modes, jitter))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--concurrency", default="1,8,32", help="comma list of concurrent runs per batch")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median)")
    p.add_argument("--turns", type=int, default=5, help="tool calls per run (then the answer)")
    p.add_argument("--latency", type=float, default=0.05, help="seconds the model sleeps per call")
    p.add_argument("--jitter", type=float, default=0.0, help="± seconds around --latency (uniform, seeded)")
    p.add_argument("--modes", default=",".join(MODES),
                   help=f"create_agent, memory on, memory off, {IN_THREADS}, {ONE_CALL}")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    conc = [int(c) for c in args.concurrency.split(",") if c.strip()]
    known = ("memory on", "memory off", IN_THREADS, ONE_CALL)
    modes = ["create_agent", *(m for m in args.modes.split(",") if m in known)]
    load_before = os.getloadavg()
    table = rows(conc, args.rounds, args.turns, args.latency, modes, args.jitter)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    command = (f"python benchmarks/memory_concurrency.py --concurrency {args.concurrency} --rounds {args.rounds} "
               f"--turns {args.turns} --latency {args.latency}"
               + (f" --jitter {args.jitter}" if args.jitter else "") + f" --modes \"{','.join(modes)}\"")
    result = {
        "rows": table, "reproduce": command, "python": platform.python_version(), "cpus": os.cpu_count(),
        "peak_rss_mb": round(rss_mb), "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"## Memory under concurrency ({args.turns} tool turns, {args.latency * 1000:.0f} ms model, "
          f"median of {args.rounds} interleaved rounds)\n")
    print("| runs | mode | answered | sustained | runs/s | ÷ create_agent (answered) | ÷ create_agent (sustained) "
          "| rounds | p95 latency | ÷ create_agent |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for r in table:
        print(f"| {r['concurrency']} | {r['mode']} | {r['answered_s']:.3f} s | {r['sustained_s']:.3f} s | "
              f"{r['runs_per_s']} | {r['throughput_ratio_answered']:.2f}x | {r['throughput_ratio_sustained']:.2f}x | "
              f"{r['round_ratios_sustained']} | {r['p95_latency_s']:.3f} s | {r['p95_latency_ratio']:.2f}x |")
    print(f"\npeak RSS {result['peak_rss_mb']} MB; load average {result['load_average_before'][0]} before, "
          f"{result['load_average_after'][0]} after")
    print(f"reproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
