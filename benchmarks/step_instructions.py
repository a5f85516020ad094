"""Benchmark: per-step overhead of the agent loop against ``create_agent``, in instructions.

    python benchmarks/step_instructions.py [--turns 20,100] [--repeat 3]

The runs of ``benchmarks/step_overhead.py`` (the same script, model and tool), each in its own
process under Valgrind's callgrind, which counts the CPU instructions executed by every thread
of the process while one run goes, after two untimed warm-up runs (the count is switched on
and off around the run with ``callgrind_control``). Unlike wall or CPU time, the count does not
depend on the machine's load, so the ratio to ``create_agent`` can be measured on a busy
machine; it does not see cache misses or waits. It still moves by a few tenths of a percent from
one process to the next (hash seeds, when the collector runs), so each count is the median of
``--repeat`` processes, the modes taken in turn. Needs ``valgrind`` on the PATH.

Memory on is left to ``step_overhead.py``'s clocks: its cost is the local embedding model's
vector arithmetic (and the FAISS write on the memory thread), which counted as instructions
says little about its time (8.3x create_agent's count at 20 turns, 1.3x its wall time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "step_instructions.json"
MODES = ("create_agent", "memory off")


def _child(mode: str, turns: int) -> None:
    """In the process callgrind runs: two warm-up runs, then one counted run."""
    sys.path.insert(0, str(HERE))
    import step_overhead  # type: ignore[import-not-found]

    tool = step_overhead.make_tool("sync")

    async def main() -> None:
        for _ in range(2):
            await step_overhead.runner(mode, turns, tool)()
        run = step_overhead.runner(mode, turns, tool)
        pid = str(os.getpid())
        subprocess.run(["callgrind_control", "-i", "on", pid], capture_output=True, check=True)
        await run()
        subprocess.run(["callgrind_control", "-i", "off", pid], capture_output=True, check=True)

    asyncio.run(main())


def instructions(mode: str, turns: int) -> int:
    """Instructions of one run of ``mode`` at ``turns`` tool turns."""
    with tempfile.TemporaryDirectory(prefix="smart-agent-callgrind-") as tmp:
        env = {**os.environ, "SMART_AGENT_HOME": tmp, "LANGSMITH_TRACING": "false", "HF_HUB_OFFLINE": "1"}
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={tmp}/cg.out",
             sys.executable, __file__, "--child", mode, str(turns)],
            capture_output=True, text=True, env=env, check=True,
        )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if not found:
        raise RuntimeError(f"callgrind printed no count for {mode}:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def available() -> bool:
    """Whether callgrind can count here (``valgrind`` and ``callgrind_control`` on the PATH)."""
    return bool(shutil.which("valgrind") and shutil.which("callgrind_control"))


def rows(turns: tuple[int, ...] = (20, 100), repeat: int = 3) -> list[dict[str, Any]]:
    """Instructions per step of each mode at each number of ``turns`` (the median of ``repeat``
    processes each), and the ratio to ``create_agent``."""
    out: list[dict[str, Any]] = []
    for t in turns:
        counted: dict[str, list[int]] = {mode: [] for mode in MODES}
        for _ in range(max(1, repeat)):
            for mode in MODES:
                counted[mode].append(instructions(mode, t))
        counts = {mode: int(statistics.median(values)) for mode, values in counted.items()}
        for mode in MODES:
            out.append({
                "turns": t, "mode": mode, "instructions_per_step": counts[mode] // (t + 1),
                "ratio": round(counts[mode] / counts["create_agent"], 3),
            })
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", default="20,100", help="comma list of tool turns per run")
    p.add_argument("--repeat", type=int, default=3, help="processes counted per mode (their median)")
    p.add_argument("--out", default=str(RESULTS))
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0
    if not available():
        print("step_instructions: needs valgrind (callgrind) on the PATH", file=sys.stderr)
        return 2
    counted = rows(tuple(int(t) for t in args.turns.split(",") if t.strip()), args.repeat)
    command = f"python benchmarks/step_instructions.py --turns {args.turns} --repeat {args.repeat}"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"rows": counted, "reproduce": command, "python": sys.version.split()[0]}
    out.write_text(json.dumps(record, indent=2) + "\n")
    print("| turns | run | instructions / step | ÷ create_agent |")
    print("| ---: | --- | ---: | ---: |")
    for r in counted:
        print(f"| {r['turns']} | {r['mode']} | {r['instructions_per_step'] / 1e6:.2f} M | {r['ratio']:.2f} |")
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
