"""``smart-agent plan`` / ``smart-agent execute`` and the planner's ``run`` flags.

    smart-agent plan TASK [--save plan.json] [--model M] [--tools a,b] [--json]
        Ask the model for a plan, validate it (errors go back to the model, up to
        --max-plan-attempts), print it and optionally save it. Nothing is executed.

    smart-agent execute plan.json [--workspace DIR] [--allow-private-network] [--json]
        Validate and run a saved plan deterministically, without any model: the same
        plan and the same tool outputs give the same trace. ``--thread ID`` keeps the
        run in the session database, so an interrupted execution resumes where it
        stopped (finished steps are not re-run).

Importing this module is cheap (argparse only); the graph and tools load in the handlers.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable
from typing import Any, TextIO

from .backends import add_db_arg, add_durability_arg
from .flags import add_setting_args, setting_values
from .mcp import add_mcp_args, mcp_names, mcp_values, open_mcp_registry
from .options import check_tool_names, thread_arg, utf8_text
from .review import format_plan, prompt_for_approval

__all__ = ["format_plan", "prompt_for_approval", "register_cli"]  # the plan prompt lives in review.py

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

#: The context fields whose flags ``plan`` takes (those of ``run`` that bear on planning) and ``execute``.
PLAN_SETTINGS = (
    "model", "tools", "max_plan_attempts", "workspace", "allow_private_network", "memory", "model_timeout_s",
    "model_max_retries",
)
EXECUTE_SETTINGS = ("workspace", "allow_private_network", "max_parallel_tools", "max_tool_calls", "approve")


def register_cli(subparsers: Any) -> None:
    """Add ``plan`` and ``execute`` to the ``smart-agent`` sub-command parser."""
    p = subparsers.add_parser(
        "plan",
        help="compile a task into a validated plan (nothing runs); --save writes it for `execute`",
        description="Ask the model for a plan (a DAG of tool steps), validate it and print or save it.",
    )
    p.add_argument("task", type=utf8_text("task"), help="the task, in plain language")
    p.add_argument("--save", metavar="PATH", help="write the plan as JSON to PATH")
    p.add_argument(
        "--method",
        choices=("tool", "structured", "text"),
        default="tool",
        help="how the plan is requested (default: a submit_plan tool)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    # The flags of `run` that bear on planning (a command line of `run` works for `plan --save`):
    add_setting_args(p, PLAN_SETTINGS)
    add_mcp_args(p)
    p.set_defaults(handler=plan_command)

    p = subparsers.add_parser(
        "execute",
        help="run a saved plan deterministically, without a model",
        description="Validate and execute a plan file: parallel steps, retries, timeouts, on_fail; no model calls.",
    )
    p.add_argument("plan_file", metavar="PLAN", help="plan JSON file ('-' for stdin)")
    add_setting_args(p, EXECUTE_SETTINGS)
    p.add_argument(
        "--thread", type=thread_arg, help="keep the execution in the session database under this id; rerun to resume it"
    )
    add_db_arg(p)
    add_durability_arg(p)
    p.add_argument("--json", action="store_true", help="print the trace as one JSON object on stdout")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print step events")
    add_mcp_args(p)
    p.set_defaults(handler=execute_command)


# -- `run --graph planner --thread T` on a thread with unfinished work ----------------------
async def planner_run_input(graph: Any, thread_id: str, task: str, *, out: TextIO | None = None) -> Any:
    """The input of a planner run on ``thread_id``: ``{"task": task}``, or None to resume.

    When the thread's latest checkpoint still has nodes to run (a run that was killed,
    crashed or paused for approval) and its task is ``task``, the run resumes from that
    checkpoint: finished steps keep their results and are never executed again. A
    different task on such a thread is refused with a ValueError (exit 2): starting it
    would silently drop the unfinished run.
    """
    snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    if not snapshot.next:
        return {"task": task}
    pending = str((snapshot.values or {}).get("task") or "")
    if pending.strip() != task.strip():
        raise ValueError(
            f"thread {thread_id!r} has an unfinished planner run for another task ({pending[:80]!r}); "
            "run that same command again to resume it, or use another --thread"
        )
    done = sum(
        1 for r in ((snapshot.values or {}).get("step_results") or {}).values() if (r or {}).get("status") == "ok"
    )
    print(f"resuming the unfinished planner run on thread {thread_id} ({done} finished step(s) are kept, not re-run)",
          file=out or sys.stderr, flush=True)
    return None


# -- handlers --------------------------------------------------------------------------------
def _registry():
    from ..tools.builtins import default_registry

    return default_registry()


async def plan_command(args: argparse.Namespace) -> int:
    from ..config.context import PlannerContext
    from ..models.chat import load_chat_model, model_options
    from ..nodes.planner.common import select_registry
    from ..nodes.planner.plan import make_plan
    from .review import run_metadata

    values = setting_values(args)
    mcp: dict[str, Any] = {}
    mcp_values(args, mcp)  # --mcp-config: the servers' tools may be planned (their sessions open while planning)
    ctx = check_tool_names(PlannerContext(**values), also=mcp_names(mcp))  # unknown --tools: one line, exit 2
    model = load_chat_model(ctx.model, **model_options(ctx))
    async with open_mcp_registry(run_metadata("plan", mcp)) as with_mcp:
        registry = select_registry(with_mcp or _registry(), ctx.tools)
        if not ctx.memory:  # as a run offers them: only while its memory is on
            registry = _without_tag(registry, "memory")
        result = await make_plan(
            args.task, model=model, registry=registry, max_attempts=ctx.max_plan_attempts, method=args.method
        )
    if result.plan is None:
        if args.json:
            print(json.dumps({"plan": None, "attempts": result.attempts, "errors": result.errors}, ensure_ascii=False))
        else:
            print(f"smart-agent: no valid plan after {result.attempts} attempt(s):", file=sys.stderr)
            for err in result.errors:
                print(f"  - {err}", file=sys.stderr)
        return EXIT_FAILED
    plan = result.plan.model_dump(exclude_defaults=True)
    text = json.dumps(plan, indent=2, ensure_ascii=False)
    if args.save:
        with open(args.save, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    if args.json:
        print(json.dumps({"plan": plan, "attempts": result.attempts, "saved": args.save}, ensure_ascii=False))
    elif args.save:
        print(f"Plan with {len(plan['steps'])} step(s) saved to {args.save} ({result.attempts} attempt(s)):")
        print(format_plan(result.plan.model_dump()))
    else:
        print(text)
    return EXIT_OK


def _without_tag(registry: Any, tag: str) -> Any:
    from ..tools.registry import ToolRegistry

    kept = ToolRegistry()
    for tool in registry.tools():
        if tag not in registry.meta(tool.name).tags:
            kept.register(tool, registry.meta(tool.name))
    return kept


def _read_plan(path: str) -> Any:
    """The plan file's JSON (``-``: standard input), read with ``inputs.py``'s bounds."""
    from ..config.files import load_json, read_stream_bytes, read_text_file

    if path == "-":
        raw = read_stream_bytes(sys.stdin.buffer, what="plan (standard input)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"plan (standard input): not UTF-8 text (byte {exc.start})") from None
        return load_json(text, what="plan (standard input)")
    return load_json(read_text_file(path, what="plan"), what=f"plan {path}")


def _step_printer(stream: TextIO) -> Callable[[dict], None]:
    from .render import format_event

    def on_event(ev: dict) -> None:
        if ev.get("event") in ("step_start", "step_result"):
            print(format_event(ev), file=stream, flush=True)

    return on_event


def execution_json(final: dict) -> dict[str, Any]:
    """The deterministic result of an execution (no timings, no timestamps)."""
    from ..nodes.planner.scheduler import build_trace

    trace = build_trace(final.get("plan"), final.get("step_results") or {})
    return {
        "status": final.get("status"),
        "answer": final.get("answer", ""),
        "errors": final.get("plan_errors") or [],
        "trace": trace,
    }


async def execute_command(args: argparse.Namespace) -> int:
    from ..config.checks import approve_tokens
    from ..config.context import PlannerContext
    from ..graphs.planner import build_executor_graph
    from .review import ask_terminal, on_terminal, report_interrupted, run_metadata, run_until_paused

    plan = _read_plan(args.plan_file)
    values = setting_values(args)
    mcp: dict[str, Any] = {}
    mcp_values(args, mcp)  # --mcp-config: recorded with the flags, so `resume` reopens the servers
    ctx = check_tool_names(PlannerContext(**values), also=mcp_names(mcp))  # unknown --approve tools: one line, exit 2
    if not args.thread and approve_tokens(ctx.approve):  # a step may pause: keep it resumable
        args.thread = f"execute-{uuid.uuid4().hex[:8]}"
    on_event = (lambda ev: None) if (args.quiet or args.json) else _step_printer(sys.stderr)

    async def run(graph: Any, config: dict) -> dict:
        graph_input: Any = {"plan": plan}
        if args.thread:
            snapshot = await graph.aget_state(config)
            if snapshot.next:  # an unfinished execution on this thread: resume it
                print(f"resuming execution {args.thread} (finished steps are kept)", file=sys.stderr)
                graph_input = None
        ask = ask_terminal if on_terminal(args) else None  # a step waiting for approval: asked, or exit 3
        return await run_until_paused(graph, graph_input, config=config, context=ctx, on_event=on_event, ask=ask)

    metadata = run_metadata("execute", {**values, **mcp})  # `smart-agent resume` continues it
    config = {"configurable": {"thread_id": args.thread or "execute"}, "recursion_limit": 10_000, "metadata": metadata}
    async with open_mcp_registry(metadata) as with_mcp:
        registry = with_mcp or _registry()
        if args.thread:
            from ..sessions.thread_lock import thread_lock
            from .backends import open_run_backends

            async with thread_lock(args.thread), open_run_backends() as backends:  # one run at a time on a thread
                graph = build_executor_graph(
                    registry=registry, checkpointer=backends.checkpointer, store=backends.store
                )
                final = await run(graph, config)
        else:
            final = await run(build_executor_graph(registry=registry), config)

    result = execution_json(final)
    if final.get("__interrupt__"):  # nothing more runs until `smart-agent resume --thread`
        return report_interrupted(args.json, {**result, "thread_id": args.thread}, args.thread, final["__interrupt__"])
    if args.json:
        print(json.dumps(result, ensure_ascii=False, default=str))
    else:
        print(result["answer"])
    if result["status"] == "planning_failed":
        return EXIT_USAGE
    failed = any(e["status"] != "ok" for e in result["trace"])
    return EXIT_FAILED if failed or result["status"] != "done" else EXIT_OK
