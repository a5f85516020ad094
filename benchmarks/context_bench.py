"""Context-management benchmark: a 40-tool-call task with large outputs.

The same scripted model (a local OpenAI-compatible server, real ``langchain-openai``
client, real ``read_file`` tool) reads N files of M characters one after another,
then answers. It runs twice:

* **with** context management: default budget (``context_token_limit`` 24000),
  archive threshold 2000 characters, summarize node — and again with a tight
  budget (8000) where the summarize node has to compact the history;
* **without**: archiving off and a budget too large to ever trigger compaction
  (what a plain agent loop sends).

Prompt tokens are measured on the wire: the raw body of every request / 4 (the
same rule as the scripted server's usage numbers). Summary requests count too.

    python benchmarks/context_bench.py [--calls 40] [--chars 20000] [--context-tokens 24000]

prints a markdown table and saves ``benchmarks/results/context.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import string
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def make_workspace(folder: Path, calls: int, chars: int) -> None:
    rnd = random.Random(42)
    for i in range(calls):
        words = []
        total = 0
        while total < chars:
            w = "".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(2, 10)))
            words.append(w)
            total += len(w) + 1
        text = ""
        for k in range(0, len(words), 14):
            text += " ".join(words[k : k + 14]) + "\n"
        (folder / f"part{i:02d}.txt").write_text(text[:chars], encoding="utf-8")


def make_model(calls: int):
    from smart_agent.history.transcript import SUMMARY_SYSTEM_PROMPT
    from smart_agent.testing.scripted_server import text, tool_call

    state = {"reads": 0, "summaries": 0}

    def respond(req):
        first = req["messages"][0]
        if first.get("role") == "system" and str(first.get("content", "")).startswith(SUMMARY_SYSTEM_PROMPT[:40]):
            state["summaries"] += 1
            return text("Summary: the agent has been reading the report parts in order; each is archived.")
        if state["reads"] < calls:
            state["reads"] += 1
            return tool_call(
                "read_file",
                {"path": f"part{state['reads'] - 1:02d}.txt"},
                content=f"Reading part {state['reads'] - 1}.",
            )
        return text(f"Read all {calls} parts.")

    return respond, state


async def run_mode(mode: str, calls: int, chars: int, context_tokens: int, workspace: Path) -> dict:
    from langchain_openai import ChatOpenAI

    from smart_agent.config.context import Context
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.testing.scripted_server import ScriptedOpenAIServer

    responder, state = make_model(calls)
    with ScriptedOpenAIServer(responder=responder) as srv:
        model = ChatOpenAI(
            base_url=srv.base_url, api_key="bench", model="scripted-model", stream_usage=True, max_retries=0
        )
        graph = build_agent_graph(model=model)
        if mode.startswith("with "):
            ctx = Context(
                workspace=str(workspace), memory=False, max_tool_calls=calls + 5, context_token_limit=context_tokens
            )
        else:
            ctx = Context(
                workspace=str(workspace),
                memory=False,
                max_tool_calls=calls + 5,
                context_token_limit=10_000_000,
                archive_threshold_chars=0,
            )  # the largest allowed: no compaction
        events: list[dict] = []
        t0 = time.perf_counter()
        final = {}
        async for kind, chunk in graph.astream(
            {"task": f"Read part00.txt to part{calls - 1:02d}.txt and report."},
            context=ctx,
            stream_mode=["custom", "values"],
        ):
            if kind == "custom":
                events.append(chunk)
            else:
                final = chunk
        wall = time.perf_counter() - t0
        sizes = [srv.request_chars(i) / 4 for i in range(len(srv.requests))]
    summarize = [e for e in events if e.get("event") == "summarization" and e.get("action") == "summarize"]
    return {
        "mode": mode,
        "context_token_limit": context_tokens if mode.startswith("with ") else None,
        "requests": len(sizes),
        "peak_prompt_tokens": round(max(sizes)),
        "total_prompt_tokens": round(sum(sizes)),
        "summary_model_calls": state["summaries"],
        "compactions": len(summarize),
        "archived_outputs": len(final.get("archived") or {}),
        "tool_calls_made": final.get("tool_calls_made"),
        "answer": final.get("answer"),
        "wall_s": round(wall, 2),
        "state_message_chars": sum(len(str(m.content)) for m in final.get("messages") or []),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--chars", type=int, default=20_000, help="characters of each tool output")
    p.add_argument("--context-tokens", type=int, default=24_000)
    p.add_argument("--tight-tokens", type=int, default=8_000, help="a second, tight budget (0: skip)")
    p.add_argument("--out", default=str(HERE / "results" / "context.json"))
    args = p.parse_args(argv)

    os.environ.setdefault("SMART_AGENT_HOME", tempfile.mkdtemp(prefix="smart-agent-bench-"))
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        make_workspace(ws, args.calls, args.chars)
        runs = [(f"with ({args.context_tokens})", args.context_tokens)]
        if args.tight_tokens:
            runs.append((f"with ({args.tight_tokens})", args.tight_tokens))
        runs.append(("without", 0))
        rows = [asyncio.run(run_mode(m, args.calls, args.chars, limit, ws)) for m, limit in runs]
    without = rows[-1]
    ratio = {
        r["mode"]: {
            "peak": round(without["peak_prompt_tokens"] / r["peak_prompt_tokens"], 2),
            "total": round(without["total_prompt_tokens"] / r["total_prompt_tokens"], 2),
        }
        for r in rows[:-1]
    }
    command = (
        f"python benchmarks/context_bench.py --calls {args.calls} --chars {args.chars} "
        f"--context-tokens {args.context_tokens} --tight-tokens {args.tight_tokens}"
    )
    result = {
        "task": f"{args.calls} sequential read_file calls, {args.chars} characters each, then an answer",
        "context_token_limit": args.context_tokens,
        "token_rule": "request body characters / 4, every request (agent turns and summary calls)",
        "rows": rows,
        "ratio_without_over_with": ratio,
        "python": sys.version.split()[0],
        "reproduce": command,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(f"## Context management: {result['task']}\n")
    print(
        "| mode | requests | peak prompt tokens | total prompt tokens | summary model calls | compactions | archived | "
        "wall s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['requests']} | {r['peak_prompt_tokens']:,} | {r['total_prompt_tokens']:,} | "
            f"{r['summary_model_calls']} | {r['compactions']} | {r['archived_outputs']} | {r['wall_s']} |"
        )
    for mode, r in ratio.items():
        print(f"\nwithout / {mode}: peak ×{r['peak']}, total ×{r['total']}", end="")
    print()
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
