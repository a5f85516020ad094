"""Benchmark: cold start, a new process to its first model request, ``smart-agent run`` against
an equivalent ``create_agent`` script.

    python benchmarks/cold_start.py [--runs 7] [--modes smart-agent,smart-agent+memory]

Each command is a fresh Python process started by this one; the scripted OpenAI-compatible
server runs in this process and notes the moment each request arrives. The figure is the
time from starting the process to the server receiving its first ``/chat/completions``
request: interpreter start-up, imports, building the graph and the model client, the
checkpointer, everything a user waits for before the model is even asked. The process
then gets its answer and exits (its whole wall time is reported too).

* ``create_agent`` (the baseline) - a script a LangChain user would write for the same
  run: ``langchain.agents.create_agent`` with ``ChatOpenAI`` (streaming usage), three
  small tools (read a file, write a file, arithmetic), an ``AsyncSqliteSaver`` checkpointer
  in the data folder and ``astream`` printing the answer;
* ``smart-agent`` - ``python -m smart_agent.cli run TASK --no-memory`` (what the console
  script runs): the agent graph with its built-in tools, the SQLite checkpointer, the
  event stream; long-term memory off, as the baseline has none;
* ``smart-agent+memory`` - the same with the defaults (long-term memory on), in a fresh data
  folder: nothing is stored yet, so the recall opens no store before the first request; the
  run's write after the answer creates it and loads the local embedding model (in the exit and
  CPU figures).

Runs alternate (create_agent, then each smart-agent mode, ``--runs`` rounds, after one
untimed round that warms the file cache and writes every module's bytecode: the processes share
a ``PYTHONPYCACHEPREFIX`` folder of this run, also where ``PYTHONDONTWRITEBYTECODE`` is set, which
would otherwise make smart-agent's own modules compile from source at every start while the
libraries' installed ``.pyc`` files are used); the ratio of each round is taken pair by pair and
the median of those ratios is reported, so a machine that slows down part-way affects both
sides alike. The CPU time (user + system) of the whole process, exit included, is reported
beside it: on a machine that other work keeps busy it varies less than wall time.
``rows()`` returns the rows for ``benchmarks/run_all.py``: ``run``, ``first_request_s``,
``exit_s`` and ``cpu_s`` (medians), ``ratio`` and ``cpu_ratio`` (medians of the per-round
ratios of ``first_request_s`` / ``cpu_s`` to create_agent's; 1.0 for create_agent itself)
and ``runs``.
Results go to benchmarks/results/cold_start.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "cold_start.json"
TASK = "Say hello."
MODES = ("create_agent", "smart-agent", "smart-agent+memory")

CREATE_AGENT_SCRIPT = '''
import asyncio, os, sys
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver


@tool
def read_file(path: str) -> str:
    """Read a text file."""
    return Path(path).read_text(encoding="utf-8")


@tool
def write_file(path: str, content: str) -> str:
    """Write a text file."""
    Path(path).write_text(content, encoding="utf-8")
    return "written"


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def main() -> None:
    model = ChatOpenAI(model=os.environ["MODEL"], stream_usage=True)
    async with AsyncSqliteSaver.from_conn_string(os.environ["DB"]) as saver:
        agent = create_agent(model, tools=[read_file, write_file, add], checkpointer=saver,
                             system_prompt="You are a helpful assistant.")
        config = {"configurable": {"thread_id": "t1"}}
        async for chunk in agent.astream({"messages": [("user", sys.argv[1])]}, config, stream_mode="updates"):
            for update in chunk.values():
                for message in (update or {}).get("messages", []):
                    if message.type == "ai" and message.content:
                        print(message.content)


asyncio.run(main())
'''


class FirstRequests:
    """Arrival times of the scripted server's requests (``time.perf_counter``)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.arrived = threading.Event()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.times.append(time.perf_counter())
        self.arrived.set()
        return {"content": "Hello."}


def command(mode: str, script: Path) -> list[str]:
    if mode == "create_agent":
        return [sys.executable, str(script), TASK]
    cmd = [sys.executable, "-m", "smart_agent.cli", "run", TASK, "--model", "openai:scripted-model"]
    return cmd if mode == "smart-agent+memory" else [*cmd, "--no-memory"]


def one_run(mode: str, script: Path, base_url: str, arrivals: FirstRequests, pycache: Path,
            timeout_s: float = 120) -> dict:
    """Start the mode's process in a fresh folder; seconds to its first request and to its exit.
    Both sides keep their bytecode in ``pycache`` (``PYTHONPYCACHEPREFIX``, written even where
    ``PYTHONDONTWRITEBYTECODE`` is set), as an installed package has its ``.pyc`` files."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "x", "MODEL": "scripted-model",
            "SMART_AGENT_HOME": str(Path(tmp) / "home"), "DB": str(Path(tmp) / "agent.db"),
            "HF_HUB_OFFLINE": "1", "LANGSMITH_TRACING": "false", "PYTHONPYCACHEPREFIX": str(pycache),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        arrivals.arrived.clear()
        seen = len(arrivals.times)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(command(mode, script), cwd=tmp, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=timeout_s)
        end = time.perf_counter()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0 or len(arrivals.times) == seen or "Hello." not in out + err:
            raise RuntimeError(f"{mode} failed (exit {proc.returncode}): {err.strip()[-2000:]}")
        return {"first_request_s": arrivals.times[seen] - start, "exit_s": end - start, "cpu_s": cpu}


def measure(runs: int = 7, modes: Sequence[str] = MODES) -> dict[str, list[dict[str, float]]]:
    from smart_agent.testing.scripted_server import ScriptedOpenAIServer

    arrivals = FirstRequests()
    results: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer([], responder=arrivals) as server:
        script = Path(tmp) / "create_agent_run.py"
        script.write_text(CREATE_AGENT_SCRIPT, encoding="utf-8")
        pycache = Path(tmp) / "pycache"
        for mode in modes:  # warm-up round: file cache, .pyc files
            one_run(mode, script, server.base_url, arrivals, pycache)
        for _ in range(runs):
            for mode in modes:
                results[mode].append(one_run(mode, script, server.base_url, arrivals, pycache))
    return results


def rows(runs: int = 7, modes: Sequence[str] = MODES) -> list[dict[str, Any]]:
    """Rows for ``benchmarks/run_all.py`` (keys in the module docstring); ``modes`` must
    include ``create_agent`` (the baseline)."""
    results = measure(runs, modes)
    base = results["create_agent"]
    table = []
    for mode, rs in results.items():
        def ratio(key: str, rs: list[dict[str, float]] = rs) -> float:
            return round(statistics.median(r[key] / b[key] for r, b in zip(rs, base, strict=True)), 3)

        table.append({
            "run": mode,
            "first_request_s": round(statistics.median(r["first_request_s"] for r in rs), 3),
            "ratio": ratio("first_request_s"),
            "exit_s": round(statistics.median(r["exit_s"] for r in rs), 3),
            "cpu_s": round(statistics.median(r["cpu_s"] for r in rs), 3),
            "cpu_ratio": ratio("cpu_s"),
            "runs": len(rs),
        })
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="timed rounds (default 7)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated (default: all; create_agent always)")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    modes = ["create_agent", *[m.strip() for m in args.modes.split(",") if m.strip() and m.strip() != "create_agent"]]
    if any(m not in MODES for m in modes):
        ap.error("--modes: a comma-separated subset of " + ", ".join(MODES))
    table = rows(args.runs, modes)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "settings": {"runs": args.runs, "modes": modes},
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
        "rows": table,
    }, indent=2) + "\n")
    print(f"process start to the first model request, median of {args.runs} interleaved rounds\n")
    print("| run | first request (s) | ÷ create_agent | process exit (s) | CPU, whole process (s) | ÷ create_agent |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in table:
        print(f"| {r['run']} | {r['first_request_s']:.3f} | {r['ratio']:.2f} | {r['exit_s']:.3f} | {r['cpu_s']:.3f} "
              f"| {r['cpu_ratio']:.2f} |")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
