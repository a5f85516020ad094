"""Prompt-cache benchmark: how much of each request a provider's prompt cache can serve.

One task - read N files of M characters one after another, then answer - through the real
``langchain-openai`` client against the scripted OpenAI-compatible server, which reports
``cached_tokens`` as OpenAI does (the longest prefix shared with an earlier request of the same
``prompt_cache_key``, from 1024 tokens on, in steps of 128: ``testing/scripted_responses.py``).
Two agents, in the same process, at each context budget:

* **ours**: the agent loop (``build_agent_graph``) at ``context_token_limit`` = the budget, its
  tool outputs archived (views), its history compacted into summaries; **ours responses**: the
  same on the Responses API (``use_responses_api``), consecutive turns chained with
  ``previous_response_id`` (only the new messages are sent);
* **create_agent**: LangChain's ``create_agent`` with ``SummarizationMiddleware`` triggered at
  the budget (its default ``keep``: 20 messages), a ``read_file`` tool returning the whole file,
  the same ``prompt_cache_key`` on every request; **create_agent keep**: the same, keeping half
  the budget in tokens.

Per run: requests; prompt tokens (the server's count: request JSON / 4); **prefix reuse** - the
share of prompt tokens in a prefix shared exactly with an earlier request of the thread; the
**cached** share the server reported (rounded as OpenAI rounds); **uncached** tokens (billed at the
full input price); the run's cost at gpt-4.1-mini's prices (input $0.40, cached input $0.10,
output $1.60 per 1M) with and without the cache discount; requests over the budget; the
request bodies sent (KB).

    python benchmarks/prompt_cache.py [--calls 40] [--chars 20000] [--budgets 8000,24000]

prints a markdown table and saves ``benchmarks/results/prompt_cache.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from context_bench import make_workspace  # noqa: E402  (the same files as the context benchmark)

AGENTS = ("ours", "ours responses", "create_agent", "create_agent keep")
PRICE = {"input": 0.40, "cached_input": 0.10, "output": 1.60}  # gpt-4.1-mini, USD per 1M tokens


def make_responder(calls: int) -> tuple[Any, dict[str, int]]:
    """Reads part00..part{calls-1} one per turn, then answers; answers summary requests (ours and
    SummarizationMiddleware's) with a short summary."""
    from smart_agent.history.transcript import SUMMARY_SYSTEM_PROMPT
    from smart_agent.testing.scripted_server import text, tool_call

    state = {"reads": 0, "summaries": 0}

    def respond(req: dict[str, Any]) -> dict[str, Any]:
        first = req["messages"][0] if req["messages"] else {}
        content = str(first.get("content", ""))
        if content.startswith(SUMMARY_SYSTEM_PROMPT[:40]) or "Context Extraction Assistant" in json.dumps(
            req["messages"][-1:]
        ):
            state["summaries"] += 1
            return text("Summary: the agent has been reading the report parts in order.")
        if state["reads"] < calls:
            state["reads"] += 1
            n = state["reads"] - 1
            return tool_call("read_file", {"path": f"part{n:02d}.txt"}, content=f"Reading part {n}.")
        return text(f"Read all {calls} parts.")

    return respond, state


def middleware_options(agent: str, budget: int) -> dict[str, Any]:
    """``create_agent``: SummarizationMiddleware triggered at the budget with its default ``keep``
    (20 messages); ``create_agent keep``: keeping half the budget in tokens instead."""
    options: dict[str, Any] = {"trigger": ("tokens", budget)}
    if agent.endswith("keep"):
        options["keep"] = ("tokens", budget // 2)
    return options


def plain_read_file(workspace: Path) -> Any:
    from langchain_core.tools import tool

    @tool
    def read_file(path: str) -> str:
        """Read a text file of the workspace."""
        return (workspace / Path(path).name).read_text(encoding="utf-8")

    return read_file


async def run(agent: str, budget: int, calls: int, workspace: Path) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    from smart_agent.testing.scripted_server import ScriptedOpenAIServer

    responder, state = make_responder(calls)
    task = f"Read part00.txt to part{calls - 1:02d}.txt and report."
    config = {"configurable": {"thread_id": f"bench-{agent}-{budget}"}, "recursion_limit": 10 * calls + 50}
    with ScriptedOpenAIServer(responder=responder) as srv:
        model = ChatOpenAI(base_url=srv.base_url, api_key="bench", model="scripted-model", stream_usage=True,
                           max_retries=0, use_responses_api=agent.endswith("responses"))
        t0 = time.perf_counter()
        if agent.startswith("ours"):
            from langgraph.checkpoint.memory import InMemorySaver

            from smart_agent.config.context import Context
            from smart_agent.graphs.agent import build_agent_graph

            graph = build_agent_graph(model=model, checkpointer=InMemorySaver())
            ctx = Context(workspace=str(workspace), memory=False, max_tool_calls=calls + 5,
                          context_token_limit=budget)
            final = await graph.ainvoke({"task": task}, config=config, context=ctx)
            answer = final.get("answer")
        else:
            from langchain.agents import create_agent
            from langchain.agents.middleware import SummarizationMiddleware
            from langchain_core.messages import HumanMessage
            from langgraph.checkpoint.memory import InMemorySaver

            # the same kind of cache hint ours sends
            bound = model.bind(prompt_cache_key=f"bench-{agent.replace(' ', '-')}-{budget}")
            graph = create_agent(bound, tools=[plain_read_file(workspace)], checkpointer=InMemorySaver(),
                                 middleware=[SummarizationMiddleware(model, **middleware_options(agent, budget))])
            final = await graph.ainvoke({"messages": [HumanMessage(task)]}, config=config)
            answer = final["messages"][-1].content
        wall = time.perf_counter() - t0
        usage, shared = srv.reported_usage, srv.shared_prefix_tokens
        keys = {r.get("prompt_cache_key") for r in srv.requests}
        sent = sum(srv.request_chars(i) for i in range(len(srv.requests)))
        chained = sum(1 for r in srv.requests if r.get("previous_response_id"))
    prompt = sum(u["prompt_tokens"] for u in usage)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usage)
    output = sum(u["completion_tokens"] for u in usage)
    cost = (PRICE["input"] * (prompt - cached) + PRICE["cached_input"] * cached + PRICE["output"] * output) / 1e6
    full = (PRICE["input"] * prompt + PRICE["output"] * output) / 1e6
    return {
        "agent": agent, "budget": budget, "requests": len(usage), "summary_calls": state["summaries"],
        "prompt_tokens": prompt, "prefix_reuse": round(sum(shared) / prompt, 3),
        "cached_share": round(cached / prompt, 3),
        "uncached_tokens": prompt - cached, "cost_usd": round(cost, 5), "cost_without_cache_usd": round(full, 5),
        "over_budget": sum(1 for u in usage if u["prompt_tokens"] > budget),
        "peak_prompt_tokens": max(u["prompt_tokens"] for u in usage), "cache_keys": len(keys),
        "sent_kb": round(sent / 1024, 1), "chained_requests": chained,
        "answer": answer, "wall_s": round(wall, 2),
    }


def rows(calls: int = 40, chars: int = 20_000, budgets: tuple[int, ...] = (8000, 24000)) -> list[dict[str, Any]]:
    """Both agents at each budget, in this process (for run_all.py and the CLI below)."""
    os.environ.setdefault("SMART_AGENT_HOME", tempfile.mkdtemp(prefix="smart-agent-bench-"))
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        make_workspace(ws, calls, chars)
        for budget in budgets:
            for agent in AGENTS:
                out.append(asyncio.run(run(agent, budget, calls, ws)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--chars", type=int, default=20_000, help="characters of each file read")
    p.add_argument("--budgets", default="8000,24000", help="context budgets (tokens), comma-separated")
    p.add_argument("--out", default=str(HERE / "results" / "prompt_cache.json"))
    args = p.parse_args(argv)
    budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())
    table = rows(args.calls, args.chars, budgets)
    command = f"python benchmarks/prompt_cache.py --calls {args.calls} --chars {args.chars} --budgets {args.budgets}"
    result = {"task": f"{args.calls} sequential reads of {args.chars} characters, then an answer", "price": PRICE,
              "rows": table, "python": sys.version.split()[0], "reproduce": command}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(f"## Prompt cache: {result['task']}\n")
    print("| agent | budget | requests | prompt tokens | prefix reuse | cached (server) | uncached tokens | "
          "cost | cost without cache | over budget | KB sent |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in table:
        print(f"| {r['agent']} | {r['budget']:,} | {r['requests']} | {r['prompt_tokens']:,} | "
              f"{r['prefix_reuse']:.3f} | {r['cached_share']:.3f} | {r['uncached_tokens']:,} | ${r['cost_usd']:.4f} | "
              f"${r['cost_without_cache_usd']:.4f} | {r['over_budget']} | {r['sent_kb']:,.0f} |")
    print(f"\nreproduce: {command}\nsaved: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
