"""Benchmark: how much a conversation's checkpoints take, against LangChain's ``create_agent``.

    python benchmarks/checkpoints.py [--turns 50] [--chars 20000]

One thread, T user turns (T runs on the same ``thread_id``); in each the in-process
scripted model (``testing/fake_models.py``) calls a tool that returns ``--chars``
characters of text, then answers. Every run is checkpointed by LangGraph's SQLite saver
(``AsyncSqliteSaver``, the CLI's) in a fresh file; the table gives the file's size after
the last turn, the checkpoints written and the checkpointed supersteps per turn:

* ``create_agent`` - ``langchain.agents.create_agent(model, tools=[tool])`` on LangGraph's
  ``AsyncSqliteSaver``;
* ``memory_on`` / ``memory_off`` - ``build_agent_graph`` on the CLI's sessions database
  (``sessions.open_backends``: zlib-compressed checkpoints) with the CLI's durability
  (``sync``) and the run's defaults otherwise (context budget 24,000 tokens, outputs over
  2,000 characters archived in ``$SMART_AGENT_HOME/archive``, not in the checkpoints);
  memory on: the embedded FAISS store in a fresh ``SMART_AGENT_HOME``;
* ``memory_off_plain`` - the same on LangGraph's plain ``AsyncSqliteSaver`` (no compression):
  what fewer checkpointed steps alone give;
* ``exit`` - memory off, ``durability="exit"``: one checkpoint per run (a killed run then
  starts its turn again).

``rows()`` returns the table rows for ``benchmarks/run_all.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "checkpoints.json"
RUNS = {
    "create_agent": "create_agent",
    "memory_on": "smart-agent, memory on (default)",
    "memory_off": "smart-agent, memory off",
    "memory_off_plain": "smart-agent, memory off, plain AsyncSqliteSaver",
    "exit": "smart-agent, memory off, durability exit",
}


def page(n: int, chars: int) -> str:
    """``chars`` characters of varied text (compresses like prose, not like one repeated letter)."""
    words = [f"w{(n * 7919 + i * 104729) % 100003:05d}" for i in range(chars // 7 + 1)]
    return " ".join(words)[:chars]


def make_tool(chars: int) -> Any:
    from langchain_core.tools import StructuredTool

    async def fetch(n: int) -> str:
        """Fetch document n."""
        return page(n, chars)

    return StructuredTool.from_function(coroutine=fetch, name="fetch", description="Fetch document n.")


def script(turns: int) -> list[Any]:
    from langchain_core.messages import AIMessage

    out: list[Any] = []
    for i in range(turns):
        out.append(AIMessage("", tool_calls=[{"name": "fetch", "args": {"n": i}, "id": f"c{i}"}]))
        out.append(f"Document {i} is about item {i}.")
    return out


def db_stats(path: Path) -> dict[str, Any]:
    with sqlite3.connect(path) as conn:
        checkpoints = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        writes = conn.execute("SELECT count(*) FROM writes").fetchone()[0]
    return {"bytes": path.stat().st_size, "checkpoints": checkpoints, "writes": writes}


@asynccontextmanager
async def saver_for(run: str, path: Path) -> AsyncIterator[Any]:
    """LangGraph's plain SQLite saver, or the CLI's sessions database (``open_backends``)."""
    if run in ("create_agent", "memory_off_plain"):
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            yield saver
    else:
        from smart_agent.sessions.store import open_backends

        async with open_backends(str(path)) as backends:
            yield backends.checkpointer


async def run_conversation(run: str, turns: int, chars: int, folder: Path) -> dict[str, Any]:
    from smart_agent.testing.fake_models import ScriptedChatModel

    path = folder / f"{run}.sqlite"
    model = ScriptedChatModel(responses=script(turns))
    tool = make_tool(chars)
    config = {"configurable": {"thread_id": "t1"}}
    async with saver_for(run, path) as saver:
        if run == "create_agent":
            from langchain.agents import create_agent

            agent = create_agent(model, tools=[tool], checkpointer=saver)
            for i in range(turns):
                await agent.ainvoke({"messages": [{"role": "user", "content": f"What is in document {i}?"}]}, config)
        else:
            from smart_agent.config.context import Context
            from smart_agent.graphs.agent import build_agent_graph
            from smart_agent.tools.registry import ToolMeta, ToolRegistry

            registry = ToolRegistry()
            registry.register(tool, ToolMeta(source="user"))
            graph = build_agent_graph(model=model, registry=registry, checkpointer=saver)
            ctx = Context(memory=run == "memory_on")
            durability = "exit" if run == "exit" else "sync"
            for i in range(turns):
                result = await graph.ainvoke(
                    {"task": f"What is in document {i}?"}, config, context=ctx, durability=durability
                )
                if not result.get("answer"):
                    raise RuntimeError(f"{run}: turn {i} gave no answer")
    stats = db_stats(path)
    return {
        "run": run, "label": RUNS[run], "turns": turns, "chars": chars, **stats,
        "checkpoints_per_turn": stats["checkpoints"] / turns,
    }  # fmt: skip


def rows(turns: int = 50, chars: int = 20_000, runs: Sequence[str] = tuple(RUNS)) -> list[dict[str, Any]]:
    """One row per run: ``bytes`` of the SQLite file, ``checkpoints``, ``writes``, and
    ``ratio`` (bytes ÷ create_agent's)."""
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    out = []
    with tempfile.TemporaryDirectory(prefix="smart-agent-checkpoints-") as tmp:
        home = os.environ.get("SMART_AGENT_HOME")
        try:
            for run in runs:
                os.environ["SMART_AGENT_HOME"] = str(Path(tmp) / f"home-{len(out)}")
                out.append(asyncio.run(run_conversation(run, turns, chars, Path(tmp))))
        finally:
            if home is None:
                os.environ.pop("SMART_AGENT_HOME", None)
            else:
                os.environ["SMART_AGENT_HOME"] = home
    base = next((r["bytes"] for r in out if r["run"] == "create_agent"), None)
    for r in out:
        r["ratio"] = round(r["bytes"] / base, 3) if base else None
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=50)
    p.add_argument("--chars", type=int, default=20_000, help="characters of each tool output")
    p.add_argument("--runs", default=",".join(RUNS), help="comma list of runs: %(default)s")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    table = rows(args.turns, args.chars, [r for r in args.runs.split(",") if r in RUNS])
    command = f"python benchmarks/checkpoints.py --turns {args.turns} --chars {args.chars}"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": table, "reproduce": command}, indent=2) + "\n", encoding="utf-8")
    print(f"## Checkpoints after {args.turns} turns with {args.chars:,}-character tool outputs\n")
    print("| run | database | checkpoints | per turn | ÷ create_agent |\n| --- | ---: | ---: | ---: | ---: |")
    for r in table:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        size = f"{r['bytes'] / 1e6:.1f} MB"
        print(f"| {r['label']} | {size} | {r['checkpoints']} | {r['checkpoints_per_turn']:.1f} | {ratio} |")
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
