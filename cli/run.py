"""The commands that run graphs (``run``, ``chat``, ``demo``) and list what there is
(``tools``, ``graph``), with the ``run``/``chat`` flags that build the run's ``Context``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TextIO

from .. import settings
from .backends import add_db_arg
from .budget import add_budget_args, budget_values, usage_report
from .options import (
    add_context_budget_args,
    add_reasoning_args,
    add_workspace_args,
    chat_line,
    check_tool_names,
    context_budget_values,
    field_int,
    reasoning_values,
    tool_list,
)
from .render import RunSummary, format_event, short

if TYPE_CHECKING:  # pragma: no cover
    from ..context import BaseContext

EXIT_USAGE = 2
EXIT_FAILURE = 1


# --------------------------------------------------------------------------- context
CONTEXT_FLAGS: dict[str, str] = {
    "model": "model",
    "system_prompt": "system_prompt",
    "max_tool_calls": "max_tool_calls",
    "max_parallel_tools": "max_parallel_tools",
    "loop_limit": "loop_limit",
    "workspace": "workspace",
    "allow_private_network": "allow_private_network",
    "tools": "tools",
    "model_timeout": "model_timeout_s",
    "model_retries": "model_max_retries",
    "tool_retries": "tool_retries",
    "fallback_model": "fallback_models",
}


def add_context_args(p: argparse.ArgumentParser, *, review_flags: bool = True) -> None:
    p.add_argument("--graph", default="agent", help="which graph runs the task (agent, planner, dual, fleet)")
    p.add_argument("--model", help="chat model as provider:model (default: $SMART_AGENT_MODEL or openai:gpt-4o-mini)")
    p.add_argument("--system-prompt", help="replace the system prompt")
    p.add_argument("--thread", help="thread id: continue an earlier session of that id")
    p.add_argument(
        "--max-tool-calls", type=field_int("max_tool_calls"), help="hard bound on tool executions per run (default 20)"
    )
    p.add_argument(
        "--max-parallel-tools",
        type=field_int("max_parallel_tools"),
        help="tool calls of one turn run at once (default 5)",
    )
    p.add_argument(
        "--loop-limit",
        type=field_int("loop_limit"),
        help="the same tool call this many times in a row: a notice, once more: finalize (default 3, 0: off)",
    )
    add_workspace_args(p)
    add_db_arg(p)
    p.add_argument("--tools", type=tool_list, help="comma-separated tool names to offer")
    p.add_argument(
        "--model-timeout",
        type=float,
        metavar="S",
        help="seconds a model request may wait for the service (default 120)",
    )
    p.add_argument(
        "--model-retries", type=int, metavar="N", help="retries of a timed-out or unreachable model request (default 2)"
    )
    p.add_argument(
        "--tool-retries",
        type=field_int("tool_retries"),
        metavar="N",
        help="extra attempts of a tool call that failed transiently (timeout, connection; default 0)",
    )
    p.add_argument(
        "--fallback-model",
        action="append",
        metavar="SPEC",
        help="provider:model tried next when a model call fails with a provider error (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout; events go to stderr")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print events")
    for add_args, _values in _feature_context_hooks():
        if review_flags or add_args.__name__ != "add_review_context_args":  # `resume` has its own --approve
            add_args(p)


def _feature_context_hooks() -> list[
    tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace, dict], None]]
]:
    """Each feature's (add its flags, map them onto Context fields) pair."""
    from .agents import add_agents_args, agents_values
    from .mcp import add_mcp_args, mcp_values
    from .memory import add_memory_context_args, memory_context_values
    from .planner import add_planner_context_args, planner_context_values
    from .review import add_review_context_args, review_context_values

    return [
        (add_context_budget_args, context_budget_values),
        (add_memory_context_args, memory_context_values),
        (add_planner_context_args, planner_context_values),
        (add_reasoning_args, reasoning_values),
        (add_budget_args, budget_values),
        (add_review_context_args, review_context_values),
        (add_mcp_args, mcp_values),
        (add_agents_args, agents_values),  # after MCP: an agent may name the servers' tools
    ]


def context_values(args: argparse.Namespace) -> dict[str, Any]:
    """The context fields the flags give (all graphs' fields; what a thread records for `resume`)."""
    values: dict[str, Any] = {}
    for flag, field_name in CONTEXT_FLAGS.items():
        v = getattr(args, flag, None)
        if v is not None:
            values[field_name] = v
    if values.get("workspace"):
        values["workspace"] = os.path.abspath(values["workspace"])
    for _add_args, to_values in _feature_context_hooks():
        to_values(args, values)
    return values


def context_from_args(args: argparse.Namespace, base: dict[str, Any] | None = None) -> BaseContext:
    """The run's context, of the class of the graph it runs (``--graph``, default agent):
    flags that graph has no field for are ignored, as they always were by its nodes.
    ``base``: field values the flags override (a resumed thread's recorded flags)."""
    from ..context import GRAPH_CONTEXTS, Context
    from .mcp import mcp_names

    schema: type[BaseContext] = GRAPH_CONTEXTS.get(getattr(args, "graph", None) or "agent", Context)
    names = {f.name for f in fields(schema)}
    values = {**(base or {}), **context_values(args)}
    return check_tool_names(schema(**{k: v for k, v in values.items() if k in names}), also=mcp_names(values))


# --------------------------------------------------------------------------- running
async def run_once(
    graph: Any,
    graph_input: Any,
    *,
    context: Any,
    thread_id: str,
    on_event: Callable[[dict], None],
    ask: Callable[[list[Any]], Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict:
    """Stream one run to its end. When it pauses on interrupts (human review, a question,
    the plan's approval), ``ask(interrupts)`` gives the resume value and the run goes on; with
    no ``ask`` or when it returns None the run stops there: the final state then holds the
    pending interrupts under ``"__interrupt__"``. ``metadata`` goes into the thread's
    checkpoints (cli/review.py records the graph and flags for ``resume``)."""
    config: dict[str, Any] = {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": max(1000, 4 * int(getattr(context, "max_tool_calls", 20)) + 50),
    }
    if metadata:
        config["metadata"] = metadata
    from .review import run_until_paused

    return await run_until_paused(graph, graph_input, config=config, context=context, on_event=on_event, ask=ask)


def _printer(stream: TextIO, quiet: bool, summary: RunSummary) -> Callable[[dict], None]:
    def on_event(ev: dict) -> None:
        summary.add(ev)
        if quiet:
            return
        line = format_event(ev)
        if line:
            print(line, file=stream, flush=True)

    return on_event


def _build(graph_name: str, checkpointer: Any, model: Any = None, store: Any = None, registry: Any = None,
           agents_file: str | None = None) -> Any:
    from ..graphs import get_builder

    if graph_name == "execute":  # a saved plan's execution (cli/planner.py) that `smart-agent resume` continues
        from ..graphs.planner import build_executor_graph

        return build_executor_graph(checkpointer=checkpointer, store=store, registry=registry)
    builder = get_builder(graph_name)
    kwargs: dict[str, Any] = {"checkpointer": checkpointer}
    if registry is not None:  # the run's tools with its MCP servers' (cli/mcp.py)
        kwargs["registry"] = registry
    if store is not None:  # Postgres: memory and the archive on the database's store
        kwargs["store"] = store
    if model is not None:
        kwargs["model"] = model
    if agents_file and graph_name == "agent":  # --agents: the agent graph runs the file's team (cli/agents.py)
        kwargs["agents_file"] = agents_file
    return builder(**kwargs)


def result_json(final: dict, thread_id: str, summary: RunSummary) -> dict:
    out = {
        "answer": final.get("answer", ""),
        "thread_id": thread_id,
        "tool_calls": summary.tool_calls,
        "tool_calls_made": final.get(
            "tool_calls_made", len([t for t in summary.tool_calls if t.get("ok") is not None])
        ),
        "usage": usage_report(final, summary.usage),
    }
    for key in ("structured_response", "todos", "status", "error"):
        if final.get(key) is not None:
            out[key] = final[key]
    return out


async def _run_input(args: argparse.Namespace, graph: Any, thread_id: str) -> Any:
    """``{"task": ...}``; a planner thread with unfinished work resumes instead (None)."""
    if args.graph == "planner" and args.thread:
        from .planner import planner_run_input

        return await planner_run_input(graph, thread_id, args.task)
    return {"task": args.task}


async def run_command(args: argparse.Namespace) -> int:
    from .review import run_metadata

    ctx = context_from_args(args)
    thread_id = args.thread or str(uuid.uuid4())
    metadata = run_metadata(args.graph, context_values(args))
    return await run_and_report(
        args, ctx, thread_id, args.graph, lambda graph: _run_input(args, graph, thread_id), metadata=metadata
    )


async def run_and_report(
    args: argparse.Namespace,
    ctx: BaseContext,
    thread_id: str,
    graph_name: str,
    make_input: Callable[[Any], Awaitable[Any]],
    *,
    metadata: dict[str, Any],
) -> int:
    """Run ``graph_name`` on the thread (its lock held) from ``make_input(graph)`` and print
    the outcome (``run`` and ``resume``): the answer or the --json object; exit 0, 1 (failed
    planning), or 3 when the run stopped on an interrupt (asked on a terminal instead)."""
    from ..thread_lock import thread_lock
    from .agents import recorded_agents_file
    from .backends import open_run_backends
    from .mcp import open_mcp_registry
    from .review import ask_terminal, on_terminal, report_interrupted

    summary = RunSummary()
    event_stream = sys.stderr if args.json else sys.stdout
    on_event = _printer(event_stream, args.quiet or False, summary)
    try:
        async with (
            thread_lock(thread_id),  # one run at a time on a thread
            open_run_backends() as backends,
            open_mcp_registry(metadata, on_event) as registry,  # MCP sessions: open for this run only
        ):
            graph = _build(
                graph_name, backends.checkpointer, store=backends.store, registry=registry,
                agents_file=recorded_agents_file(metadata),
            )
            final = await run_once(
                graph,
                await make_input(graph),
                context=ctx,
                thread_id=thread_id,
                on_event=on_event,
                ask=ask_terminal if on_terminal(args) else None,
                metadata=metadata,
            )
    except Exception as exc:
        if args.json:  # stdout still holds exactly one JSON object; main() reports on stderr
            failed = {**result_json({}, thread_id, summary), "error": {"type": type(exc).__name__, "message": str(exc)}}
            print(json.dumps(failed, ensure_ascii=False, default=str))
        raise
    if final.get("__interrupt__"):  # nothing more runs until `smart-agent resume`
        return report_interrupted(args.json, result_json(final, thread_id, summary), thread_id, final["__interrupt__"])
    no_plan = final.get("status") == "planning_failed"  # no valid plan within the bounded attempts
    if args.json:
        print(json.dumps(result_json(final, thread_id, summary), ensure_ascii=False, default=str))
    if no_plan:
        first = next((line for line in str(final.get("error") or "").splitlines() if line.strip()), "no valid plan")
        print(f"smart-agent: {first.strip().rstrip(':')} (details: --json)", file=sys.stderr)
        return EXIT_FAILURE
    if not args.json:
        print(final.get("answer", ""))
        if not args.quiet:
            print(
                f"\n(thread {thread_id} · {len(summary.tool_calls)} tool calls · {summary.usage['total_tokens']} "
                "tokens)",
                file=sys.stderr,
            )
    return 0


async def chat_command(args: argparse.Namespace) -> int:
    from ..thread_lock import thread_lock
    from .agents import recorded_agents_file
    from .backends import open_run_backends
    from .mcp import open_mcp_registry
    from .review import ask_terminal, on_terminal, report_interrupted, run_metadata

    ctx = context_from_args(args)
    thread_id = args.thread or str(uuid.uuid4())
    interactive = sys.stdin.isatty()
    stdin = getattr(sys.stdin, "buffer", sys.stdin)  # bytes: each line is decoded strictly (chat_line)
    metadata = run_metadata(args.graph, context_values(args))

    def read_line() -> str:  # decisions are read from the same stdin as the turns
        raw = stdin.readline()
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw

    def ask(pending: list[Any]) -> Any:
        return ask_terminal(pending, read=read_line)
    number = refused = 0
    print(f"smart-agent chat · thread {thread_id} · /exit to quit", file=sys.stderr)
    on_start = _printer(sys.stderr, args.quiet or args.json, RunSummary())  # (an MCP server that does not start)
    async with open_run_backends() as backends, open_mcp_registry(metadata, on_start) as registry:
        graph = _build(
            args.graph, backends.checkpointer, store=backends.store, registry=registry,
            agents_file=recorded_agents_file(metadata),
        )
        while True:
            if interactive:
                print("you> ", end="", file=sys.stderr, flush=True)
            line = await asyncio.to_thread(stdin.readline)
            if not line:
                break
            number += 1
            text, problem = chat_line(line)
            if problem:  # skipped with one line; the exit code says some input was refused
                refused += 1
                print(f"smart-agent chat: error: input line {number} {problem}; skipped", file=sys.stderr, flush=True)
                continue
            if not text:
                continue
            if text in {"/exit", "/quit"}:
                break
            summary = RunSummary()
            async with thread_lock(thread_id):  # per turn: another run on this thread may go between turns
                final = await run_once(
                    graph,
                    {"task": text},
                    context=ctx,
                    thread_id=thread_id,
                    on_event=_printer(sys.stderr, args.quiet or args.json, summary),
                    ask=ask if on_terminal(args) else None,
                    metadata=metadata,
                )
            if final.get("__interrupt__"):  # not a terminal: the turn waits for `smart-agent resume`
                result = result_json(final, thread_id, summary)
                return report_interrupted(args.json, result, thread_id, final["__interrupt__"])
            if args.json:
                print(json.dumps(result_json(final, thread_id, summary), ensure_ascii=False, default=str), flush=True)
            else:
                print(f"agent> {final.get('answer', '')}" if interactive else final.get("answer", ""), flush=True)
    return EXIT_USAGE if refused else 0


async def demo_command(args: argparse.Namespace) -> int:
    from ..context import Context
    from ..sessions import data_home
    from ..testing.demo import DEMO_FILE, DEMO_TASK, demo_responder
    from ..testing.scripted_server import ScriptedOpenAIServer
    from ..thread_lock import thread_lock
    from .backends import open_run_backends

    workspace = os.path.abspath(args.workspace or data_home() / "demo-workspace")
    os.makedirs(workspace, exist_ok=True)
    with ScriptedOpenAIServer(responder=demo_responder, model="scripted-demo") as server:
        # Only this process talks to the scripted server: the real OpenAI client over HTTP.
        settings.use_openai_server(server.base_url, "scripted-demo-key")
        print("smart-agent demo — SCRIPTED MODEL: a rule-based OpenAI-compatible server bundled with", flush=True)
        print(
            f"smart-agent, running offline at {server.base_url}. Real client, real tools, real checkpointer.",
            flush=True,
        )
        print(f"workspace: {workspace}\n\ntask: {DEMO_TASK}\n", flush=True)
        ctx = Context(model="openai:scripted-demo", workspace=workspace, **_demo_overrides())
        thread_id = args.thread or f"demo-{uuid.uuid4().hex[:8]}"
        summary = RunSummary()
        async with thread_lock(thread_id), open_run_backends() as backends:
            graph = _build("agent", backends.checkpointer, store=backends.store)
            final = await run_once(
                graph,
                {"task": DEMO_TASK},
                context=ctx,
                thread_id=thread_id,
                on_event=_printer(sys.stdout, False, summary),
            )
            state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    written = os.path.join(workspace, DEMO_FILE)
    print(f"\nanswer: {final.get('answer', '')}")
    print(
        f"\n{len(summary.tool_calls)} tool calls, {summary.usage['model_calls']} model calls, "
        f"{summary.usage['total_tokens']} tokens; {len(state.values.get('messages', []))} messages checkpointed in "
        f"thread {thread_id}."
    )
    if os.path.exists(written):
        with open(written, encoding="utf-8") as fh:
            print(f"{DEMO_FILE} now contains: {fh.read().strip()}")
    return 0 if final.get("answer") else EXIT_FAILURE


def _demo_overrides() -> dict:
    """Context fields the offline demo sets beyond the defaults (features extend this)."""
    return {}


def tools_command(args: argparse.Namespace) -> int:
    from .mcp import mcp_tool_rows

    rows = mcp_tool_rows(args, _printer(sys.stderr, False, RunSummary()))
    if args.json:
        print(json.dumps([{k: (v.__dict__ if k == "meta" else v) for k, v in r.items()} for r in rows], default=str))
        return 0
    for r in rows:
        meta = r["meta"]
        flags = ", ".join(x for x in ["side effects" if meta.side_effects else "", meta.source] if x)
        print(f"{r['name']:<18} {short(r['description'], 90)}  ({flags})")
    return 0


def graph_command(args: argparse.Namespace) -> int:
    from .agents import checked_agents_file

    graph = _build(args.name, None, agents_file=checked_agents_file(args.agents, args.name))
    print(graph.get_graph().draw_mermaid())
    return 0
