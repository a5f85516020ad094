"""Benchmark: plan-then-execute (``planner``) against the agent loop (``agent``) on one task.

    python benchmarks/planner_vs_loop.py [--pages 4] [--page-delay 1.0] [--model-latency 0.5] [--repeat 3]

The task: read N web pages (a local stdlib server, each page answering after
``--page-delay`` seconds), save them together to one file, and answer. Every graph
runs over the real ``langchain_openai.ChatOpenAI`` client against the scripted
OpenAI-compatible server, which answers after ``--model-latency`` seconds (a
stand-in for a real model's response time) and counts tokens as ``ceil(chars / 4)``.

Three runs of the same work:

* ``planner`` – one planning call (a DAG: N parallel ``browse_url`` steps, then a
  ``write_file`` that references their outputs), execution without the model, one
  synthesis call;
* ``loop (parallel calls)`` – the agent loop with a model that emits all N
  ``browse_url`` calls in one turn, then ``write_file`` with the pages copied into
  its arguments, then the answer;
* ``loop (one call per turn)`` – the same with a model that calls one tool per turn,
  as many models do;
* ``create_agent (...)`` – LangChain's own ``langchain.agents.create_agent`` with the
  same tools and the same two scripted model behaviours, as the outside baseline.

Ratios are the planner's number divided by each other run's (below 1: the planner
needs less).

What differs is structural, not the scripted model's wit: how many model calls a
run needs, how much text the model has to read (the loop re-sends the growing
conversation every turn) and write (the loop copies the pages through its output;
the planner references them as ``${p0}``), and how much of the tool time overlaps.

Results go to benchmarks/results/planner_vs_loop.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
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

    from smart_agent.context import Context
    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.graphs.planner import build_planner_graph
    from smart_agent.testing.scripted_server import ScriptedOpenAIServer
    from smart_agent.tools.builtins import default_registry

    script = planner_script(urls) if kind == "planner" else loop_script(urls, parallel=kind.endswith("_parallel"))
    registry = default_registry(plugins_folder=Path(workspace) / "no-plugins", entry_points=False)
    with ScriptedOpenAIServer(script, default_delay_s=latency) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="x", model="scripted", stream_usage=True, max_retries=0)
        if kind.startswith("create_agent"):
            from langchain.agents import create_agent

            from smart_agent.context import DEFAULT_SYSTEM_PROMPT

            graph = create_agent(
                model, tools=registry.tools(TOOLS), system_prompt=DEFAULT_SYSTEM_PROMPT, context_schema=Context
            )
        else:
            builder: Callable = build_planner_graph if kind == "planner" else build_agent_graph
            graph = builder(model=model, registry=registry)
        # Every run is offered the same two tools, so tool schemas weigh the same everywhere.
        values: dict[str, Any] = {"model": "openai:scripted", "allow_private_network": True, "workspace": workspace,
                                  "max_parallel_tools": 8, "tools": list(TOOLS)}
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
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=4)
    ap.add_argument("--page-delay", type=float, default=1.0, help="seconds each page takes to answer")
    ap.add_argument("--model-latency", type=float, default=0.5, help="seconds each model call takes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)

    httpd = serve_pages(args.page_delay)
    urls = [f"http://127.0.0.1:{httpd.server_address[1]}/page{i}" for i in range(args.pages)]
    kinds = {
        "planner": "planner",
        "loop_parallel": "loop (parallel calls)",
        "loop_sequential": "loop (one call per turn)",
        "create_agent_parallel": "create_agent (parallel calls)",
        "create_agent_sequential": "create_agent (one call per turn)",
    }
    rows: dict[str, list[dict]] = {k: [] for k in kinds}
    try:
        for _ in range(args.repeat):
            for kind in kinds:
                with tempfile.TemporaryDirectory() as ws:
                    rows[kind].append(asyncio.run(run_one(kind, urls, args.model_latency, ws)))
    finally:
        httpd.shutdown()
        httpd.server_close()

    summary = {}
    for kind, runs in rows.items():
        summary[kind] = {
            "label": kinds[kind],
            "median_s": round(statistics.median(r["seconds"] for r in runs), 3),
            "min_s": round(min(r["seconds"] for r in runs), 3),
            "model_calls": runs[0]["model_calls"],
            "input_tokens": runs[0]["input_tokens"],
            "output_tokens": runs[0]["output_tokens"],
        }
    base = summary["planner"]
    ratios = {
        kind: {
            "wall_time": round(base["median_s"] / s["median_s"], 3),
            "model_calls": round(base["model_calls"] / s["model_calls"], 3),
            "input_tokens": round(base["input_tokens"] / s["input_tokens"], 3),
        }
        for kind, s in summary.items()
        if kind != "planner"
    }
    result = {
        "settings": vars(args) | {"out": None},
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": __import__("os").cpu_count(),
        },
        "results": summary,
        "planner_ratio_to": ratios,
        "runs": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")

    print(
        f"{args.pages} pages x {args.page_delay:g} s, model latency {args.model_latency:g} s, median of {args.repeat} "
        "runs\n"
    )
    print("| run | wall time (s) | model calls | input tokens | output tokens |")
    print("|---|---:|---:|---:|---:|")
    for s in summary.values():
        print(
            f"| {s['label']} | {s['median_s']:.2f} | {s['model_calls']} | {s['input_tokens']} | {s['output_tokens']} |"
        )
    print("\nplanner ÷ other run (below 1: the planner needs less)\n")
    print("| against | wall time | model calls | input tokens |")
    print("|---|---:|---:|---:|")
    for kind, r in ratios.items():
        print(f"| {kinds[kind]} | {r['wall_time']:.2f} | {r['model_calls']:.2f} | {r['input_tokens']:.2f} |")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
