"""Benchmark: plan-then-execute (``planner``) against the agent loop (``agent``) on one task.

    python benchmarks/planner_vs_loop.py [--pages 4,8,16] [--page-delay 1.0] [--model-latency 0.5] [--repeat 3]
                                         [--kinds planner,loop_parallel,...]

The task: read N web pages (a local stdlib server, each page answering after
``--page-delay`` seconds), save them together to one file, and answer. Every graph
runs over the real ``langchain_openai.ChatOpenAI`` client against the scripted
OpenAI-compatible server, which answers after ``--model-latency`` seconds (a
stand-in for a real model's response time) and counts tokens as ``ceil(chars / 4)``.
Each run's ``max_parallel_tools`` is N.

Five runs of the same work (``--kinds``):

* ``planner`` – one planning call (a DAG: N parallel ``browse_url`` steps, then a
  ``write_file`` that references their outputs), execution without the model, one
  synthesis call;
* ``loop_parallel`` – the agent loop with a model that emits all N ``browse_url`` calls
  in one turn, then ``write_file`` with the pages copied into its arguments, then the answer;
* ``loop_sequential`` – the same with a model that calls one tool per turn, as many models do;
* ``create_agent_parallel`` / ``create_agent_sequential`` – LangChain's own
  ``langchain.agents.create_agent`` with the same tools and the same two scripted model
  behaviours, as the outside baseline.

The **physical limit** is what no run can beat: the plan call + the longest tool (all
pages at once) + the synthesis call = 2 × model latency + page delay (2.0 s by default).
Each row gives the median wall time, its ratio to that limit, and ``÷ planner``: how many
times longer than the planner the run took (the planner's own row is 1).

For every N the kinds run in turn (interleaved), ``--repeat`` rounds, in one process, after
one untimed planner run (a process's first fetch builds its SSL context and imports
httpx's transport: cold-start work, measured by ``benchmarks/cold_start.py``).

What differs is structural, not the scripted model's wit: how many model calls a
run needs, how much text the model has to read (the loop re-sends the growing
conversation every turn) and write (the loop copies the pages through its output;
the planner references them as ``${p0}``), and how much of the tool time overlaps.

``rows()`` returns the table rows for ``benchmarks/run_all.py`` (keys in its docstring).
Results go to benchmarks/results/planner_vs_loop.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "planner_vs_loop.json"
TOOLS = ("browse_url", "write_file")
TASK = "Read the {n} pages, save their text together to pages.txt, and tell me what they say."


def _tool_texts(request: dict) -> list[str]:
    from smart_agent.testing.scripted_server import message_text, tool_messages

    return [message_text(m.get("content")) for m in tool_messages(request)]


def planner_script(urls: list[str]) -> list[Any]:
    steps = [{"id": f"p{i}", "tool": "browse_url", "args": {"url": u}} for i, u in enumerate(urls)]
    content = "\n\n".join(f"${{p{i}}}" for i in range(len(urls)))
    steps.append({"id": "save", "tool": "write_file", "args": {"path": "pages.txt", "content": content}})
    return [
        {"tool_calls": [{"name": "submit_plan", "arguments": {"steps": steps}}]},
        {"content": f"The {len(urls)} pages were read and saved to pages.txt; each greets the reader."},
    ]


def loop_script(urls: list[str], *, parallel: bool) -> list[Any]:
    from smart_agent.testing.scripted_server import text, tool_call, tool_calls

    script: list[Any] = []
    if parallel:
        script.append(tool_calls([("browse_url", {"url": u}) for u in urls]))
    else:
        script.extend(tool_call("browse_url", {"url": u}) for u in urls)
    script.append(lambda req: tool_call("write_file", {"path": "pages.txt", "content": "\n\n".join(_tool_texts(req))}))
    script.append(text(f"The {len(urls)} pages were read and saved to pages.txt; each greets the reader."))
    return script


async def run_one(kind: str, urls: list[str], latency: float, workspace: str) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    from smart_agent.config.context import Context
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.graphs.planner import build_planner_graph
    from smart_agent.testing.scripted_server import ScriptedOpenAIServer
    from smart_agent.tools.builtins import default_registry

    script = planner_script(urls) if kind == "planner" else loop_script(urls, parallel=kind.endswith("_parallel"))
    registry = default_registry(plugins_folder=Path(workspace) / "no-plugins", entry_points=False)
    with ScriptedOpenAIServer(script, default_delay_s=latency) as server:
        # An HTTP client of this run's own: each run has its own event loop (asyncio.run), and a
        # server may get the port of an earlier one, whose pooled connections that loop's client holds.
        import openai

        async with openai.DefaultAsyncHttpxClient() as http:  # (closed however the run ends)
            model = ChatOpenAI(
                base_url=server.base_url, api_key="x", model="scripted", stream_usage=True, max_retries=0,
                http_async_client=http,
            )
            if kind.startswith("create_agent"):
                from langchain.agents import create_agent

                from smart_agent.config.context import DEFAULT_SYSTEM_PROMPT

                graph = create_agent(
                    model, tools=registry.tools(TOOLS), system_prompt=DEFAULT_SYSTEM_PROMPT, context_schema=Context
                )
            else:
                builder: Callable = build_planner_graph if kind == "planner" else build_agent_graph
                graph = builder(model=model, registry=registry)
            # Every run is offered the same two tools, so tool schemas weigh the same everywhere.
            values: dict[str, Any] = {
                "model": "openai:scripted", "allow_private_network": True, "workspace": workspace,
                "max_parallel_tools": len(urls), "tools": list(TOOLS),
            }
            if "memory" in Context.__dataclass_fields__:
                values["memory"] = False  # long-term memory is not what is measured here
            ctx = Context(**values)
            usage = {"input_tokens": 0, "output_tokens": 0}
            start = time.perf_counter()
            final: dict = {}
            async for mode, chunk in graph.astream(
                {"task": TASK.format(n=len(urls))}, context=ctx, stream_mode=["custom", "values"]
            ):
                if mode == "custom" and chunk.get("event") == "usage":
                    usage["input_tokens"] += int(chunk.get("input_tokens") or 0)
                    usage["output_tokens"] += int(chunk.get("output_tokens") or 0)
                elif mode == "values":
                    final = chunk
            elapsed = time.perf_counter() - start
            calls = len(server.requests)
            if kind.startswith("create_agent"):  # no usage events: read the AI messages' usage
                for m in final.get("messages", []):
                    u = getattr(m, "usage_metadata", None) or {}
                    usage["input_tokens"] += int(u.get("input_tokens") or 0)
                    usage["output_tokens"] += int(u.get("output_tokens") or 0)
                final = {**final, "answer": final["messages"][-1].content if final.get("messages") else ""}
    saved = (Path(workspace) / "pages.txt").read_text(encoding="utf-8")
    assert all(f"/page{i}" in saved for i in range(len(urls))), "the pages were not all saved"
    assert final.get("answer"), "no answer"
    return {"seconds": elapsed, "model_calls": calls, **usage}


def serve_pages(delay: float):
    import threading
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            time.sleep(delay)
            body = (f"<html><head><title>{self.path}</title></head><body><p>Hello from {self.path}. "
                    + "This page has some ordinary text on it. " * 20 + "</p></body></html>").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


KINDS = {
    "planner": "planner",
    "loop_parallel": "loop (parallel calls)",
    "loop_sequential": "loop (one call per turn)",
    "create_agent_parallel": "create_agent (parallel calls)",
    "create_agent_sequential": "create_agent (one call per turn)",
}


def physical_limit(page_delay: float, model_latency: float) -> float:
    """The least any run can take: the plan call, the longest tool (all pages at once), the synthesis."""
    return model_latency + page_delay + model_latency


def measure(
    pages: int, *, repeat: int = 3, page_delay: float = 1.0, model_latency: float = 0.5,
    kinds: Sequence[str] = tuple(KINDS),
) -> dict[str, list[dict[str, Any]]]:
    """``repeat`` rounds of every kind at ``pages`` pages, interleaved, after one untimed planner run."""
    ThreadingHTTPServer.request_queue_size = 128  # the default 5 drops simultaneous connects (1 s SYN retry)
    httpd = serve_pages(page_delay)
    urls = [f"http://127.0.0.1:{httpd.server_address[1]}/page{i}" for i in range(pages)]
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    try:
        with tempfile.TemporaryDirectory() as ws:  # warm-up: the process's first fetch builds its SSL context
            asyncio.run(run_one("planner", urls, model_latency, ws))
        for _ in range(repeat):
            for kind in kinds:
                with tempfile.TemporaryDirectory() as ws:
                    runs[kind].append(asyncio.run(run_one(kind, urls, model_latency, ws)))
    finally:
        httpd.shutdown()
        httpd.server_close()
    return runs


def summarize(pages: int, runs: dict[str, list[dict[str, Any]]], limit_s: float) -> list[dict[str, Any]]:
    """One row per kind: medians, the ratio to the physical limit and how many times the planner is faster."""
    medians = {kind: statistics.median(r["seconds"] for r in rs) for kind, rs in runs.items()}
    planner = medians.get("planner")
    return [
        {
            "pages": pages,
            "run": KINDS[kind],
            "median_s": round(medians[kind], 3),
            "min_s": round(min(r["seconds"] for r in rs), 3),
            "limit_s": round(limit_s, 3),
            "vs_limit": round(medians[kind] / limit_s, 3),
            "planner_speedup": round(medians[kind] / planner, 2) if planner else None,
            "model_calls": rs[0]["model_calls"],
            "input_tokens": rs[0]["input_tokens"],
            "output_tokens": rs[0]["output_tokens"],
        }
        for kind, rs in runs.items()
    ]


def rows(
    pages: Sequence[int] = (4, 8, 16), repeat: int = 3, page_delay: float = 1.0, model_latency: float = 0.5,
    kinds: Sequence[str] = tuple(KINDS),
) -> list[dict[str, Any]]:
    """The table rows for ``benchmarks/run_all.py``: for each N in ``pages`` and each kind, ``pages``,
    ``run`` (label), ``median_s``, ``min_s``, ``limit_s`` (the physical limit), ``vs_limit``
    (median / limit), ``planner_speedup`` (this run's median / the planner's), ``model_calls``,
    ``input_tokens``, ``output_tokens``. ``kinds`` must include ``planner``."""
    limit = physical_limit(page_delay, model_latency)
    table: list[dict[str, Any]] = []
    for n in pages:
        runs = measure(n, repeat=repeat, page_delay=page_delay, model_latency=model_latency, kinds=kinds)
        table.extend(summarize(n, runs, limit))
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default="4,8,16", help="comma-separated page counts N (default 4,8,16)")
    ap.add_argument("--page-delay", type=float, default=1.0, help="seconds each page takes to answer")
    ap.add_argument("--model-latency", type=float, default=0.5, help="seconds each model call takes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated runs (default: all)")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    pages = [int(p) for p in str(args.pages).split(",") if p.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if "planner" not in kinds or any(k not in KINDS for k in kinds):
        ap.error("--kinds: a comma-separated subset of " + ", ".join(KINDS) + " that includes planner")

    table = rows(pages, args.repeat, args.page_delay, args.model_latency, kinds)
    result = {
        "settings": vars(args) | {"out": None, "pages": pages},
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
        "rows": table,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")

    limit = physical_limit(args.page_delay, args.model_latency)
    print(f"N pages x {args.page_delay:g} s, model latency {args.model_latency:g} s, median of {args.repeat} runs; "
          f"physical limit (plan call + longest tool + synthesis) {limit:g} s\n")
    print("| N | run | wall time (s) | ÷ physical limit | ÷ planner | model calls | input tokens | output tokens |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in table:
        print(f"| {r['pages']} | {r['run']} | {r['median_s']:.2f} | {r['vs_limit']:.2f} | {r['planner_speedup']:.2f} "
              f"| {r['model_calls']} | {r['input_tokens']} | {r['output_tokens']} |")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
