"""The commands that run graphs (``run``, ``chat``, ``demo``) and list what there is
(``tools``, ``graph``). The flags that build the run's ``Context`` are in cli/context_args.py,
the reporting of a run's outcome (--json object, exit code) in cli/outcome.py."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO

from ..config import settings
from .context_args import context_from_args, context_values
from .live import Lines, make_display
from .options import chat_line
from .outcome import (
    EXIT_FAILURE,
    EXIT_USAGE,
    FAILED,
    HALTED,
    INTERRUPTED,
    failure_line,
    note_thread,
    print_json,
    report_ctrl_c,
    report_error,
    report_outcome,
    result_json,
    run_status,
)
from .render import short
from .summary import RunSummary

if TYPE_CHECKING:  # pragma: no cover
    from ..config.context import BaseContext


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
    on_progress: Callable[[str, Any], None] | None = None,
) -> dict:
    """Stream one run to its end. When it pauses on interrupts (human review, a question,
    the plan's approval), ``ask(interrupts)`` gives the resume value and the run goes on; with
    no ``ask`` or when it returns None the run stops there: the final state then holds the
    pending interrupts under ``"__interrupt__"``. ``metadata`` goes into the thread's
    checkpoints (cli/review.py records the graph and flags for ``resume``). Background tasks the
    run started (``start_sub_agent``) end with it."""
    config: dict[str, Any] = {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": max(1000, 4 * int(getattr(context, "max_tool_calls", 20)) + 50),
    }
    if metadata:
        config["metadata"] = metadata
    from ..runs.background import run_scope
    from .review import run_until_paused

    async with run_scope():  # the run's background sub-agents: cancelled when it ends (runs/background.py)
        return await run_until_paused(
            graph, graph_input, config=config, context=context, on_event=on_event, ask=ask, on_progress=on_progress
        )


def _printer(stream: TextIO, quiet: bool, summary: RunSummary) -> Callable[[dict], None]:
    return Lines(stream, summary, quiet=quiet).on_event


def build_graph(graph_name: str, checkpointer: Any, model: Any = None, store: Any = None, registry: Any = None,
           agents_file: str | None = None, middleware: list[Any] | None = None) -> Any:
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
    if middleware:  # --middleware (cli/middleware.py)
        kwargs["middleware"] = middleware
    return builder(**kwargs)


async def _run_input(args: argparse.Namespace, graph: Any, thread_id: str) -> Any:
    """``{"task": ...}``; a planner thread with unfinished work resumes instead (None)."""
    if args.graph == "planner" and args.thread:
        from .planner import planner_run_input

        return await planner_run_input(graph, thread_id, args.task)
    return {"task": args.task}


def personal_data_handled(text: str, ctx: Any) -> str:
    """A user's input with the run's ``pii`` rules applied before the run starts, so no checkpoint
    ever holds what they remove (``policies/pii.py``; a ``block`` rule: ``ValueError``, exit 2)."""
    if not getattr(ctx, "pii", None):
        return text
    from ..policies.pii import PiiBlocked, redact_text

    try:
        return redact_text(text, ctx)
    except PiiBlocked as exc:
        raise ValueError(f"Refused: {exc}") from None


async def run_command(args: argparse.Namespace) -> int:
    from .review import run_metadata

    ctx = context_from_args(args)
    args.task = personal_data_handled(args.task, ctx)
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
    the outcome (``run`` and ``resume``): the answer or the --json object, and the exit code of
    its status (cli/outcome.py: 0 completed, 1 failed or halted, 3 waiting for a person; Ctrl-C
    ends it with 130 through main())."""
    from ..sessions.thread_lock import thread_lock
    from .agents import recorded_agents_file
    from .backends import open_run_backends
    from .cassette import cassette_session
    from .mcp import open_mcp_registry
    from .middleware import recorded_middleware
    from .review import ask_terminal, on_terminal

    summary = RunSummary()
    event_stream = sys.stderr if args.json else sys.stdout
    # on a terminal: the answer streams and a status line shows what runs (cli/live.py)
    display = make_display(event_stream, summary, quiet=bool(args.quiet), as_json=args.json)
    on_event = display.on_event
    try:
        async with (
            thread_lock(thread_id),  # one run at a time on a thread
            cassette_session(args),  # --record / --replay: the model traffic (cli/cassette.py)
            open_run_backends(ctx) as backends,
            open_mcp_registry(metadata, on_event) as registry,  # MCP sessions: open for this run only
        ):
            graph = build_graph(
                graph_name, backends.checkpointer, store=backends.store, registry=registry,
                agents_file=recorded_agents_file(metadata), middleware=recorded_middleware(metadata),
            )
            final = await run_once(
                graph,
                await make_input(graph),
                context=ctx,
                thread_id=thread_id,
                on_event=on_event,
                ask=display.pausing(ask_terminal if on_terminal(args) else None),
                metadata=metadata,
                on_progress=display.on_progress if display.progress else None,
            )
    except Exception as exc:
        display.close()
        report_error(args, thread_id, summary, exc)
        raise
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: the thread keeps its finished steps
        display.close()
        report_ctrl_c(args, thread_id, summary)
        raise
    display.close()
    return report_outcome(args, final, thread_id, summary, answer_shown=display.answer_shown(final))


async def read_chat_line(stdin: Any, interactive: bool) -> Any:
    """The next stdin line. On a terminal the loop waits for the line (``add_reader``) and reads it
    then, so Ctrl-C at chat's prompt exits at once (130); a read on ``asyncio.to_thread`` would hold
    ``asyncio.run``'s shutdown until a line came (a terminal delivers one line per read, so none
    waits in the buffer). A pipe is read on a thread (lines may wait in the buffer)."""
    if not interactive:
        return await asyncio.to_thread(stdin.readline)
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = stdin.fileno()

    def on_readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, on_readable)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    return stdin.readline()


async def chat_command(args: argparse.Namespace) -> int:
    from ..sessions.thread_lock import thread_lock
    from .agents import recorded_agents_file
    from .backends import open_run_backends
    from .cassette import cassette_session
    from .mcp import open_mcp_registry
    from .middleware import recorded_middleware
    from .review import ask_terminal, interrupt_kind, on_terminal, report_interrupted, resume_value, run_metadata

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

    number = refused = failed = 0

    def answer_line() -> str | None:
        """The next stdin line that can be sent, as a question's answer (None at the end of input);
        a line that cannot is refused with one error line, as a turn's would be."""
        nonlocal number, refused
        while raw := stdin.readline():
            number += 1
            text, problem = chat_line(raw)
            if not problem:
                return text
            refused += 1
            print(f"smart-agent chat: error: input line {number} {problem}; skipped", file=sys.stderr, flush=True)
        return None

    def ask_from_input(pending: list[Any]) -> Any:
        """Not on a terminal: the model's questions (ask_user) are answered by the next stdin lines,
        and the lines after them are the next turns. Anything else (a tool call to approve) is not
        decided from a pipe: None, the turn waits for ``smart-agent resume``."""
        if any(interrupt_kind(getattr(i, "value", None)) != "question" for i in pending):
            return None
        answers = []
        for _ in pending:
            answer = answer_line()
            if answer is None:  # the input ended first: the turn waits for `smart-agent resume --answer`
                return None
            answers.append(answer)
            if not (args.quiet or args.json):
                print(f"  ↳ answered from input line {number}: {short(answer, 200)}", file=sys.stderr, flush=True)
        return resume_value(pending, answers)
    print(f"smart-agent chat · thread {thread_id} · /exit to quit", file=sys.stderr)
    on_start = _printer(sys.stderr, args.quiet or args.json, RunSummary())  # (an MCP server that does not start)
    async with (
        cassette_session(args),  # --record / --replay: the model traffic (cli/cassette.py)
        open_run_backends(ctx) as backends,
        open_mcp_registry(metadata, on_start) as registry,
    ):
        graph = build_graph(
            args.graph, backends.checkpointer, store=backends.store, registry=registry,
            agents_file=recorded_agents_file(metadata), middleware=recorded_middleware(metadata),
        )
        while True:
            if interactive:
                print("you> ", end="", file=sys.stderr, flush=True)
            line = await read_chat_line(stdin, interactive)  # Ctrl-C at the prompt: exit 130 at once
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
            # on a terminal the answer streams after "agent> " and a status line shows what runs (cli/live.py)
            display = make_display(sys.stderr, summary, quiet=bool(args.quiet), as_json=args.json,
                                   answer_stream=sys.stdout, prefix="agent> " if interactive else "")
            try:
                async with thread_lock(thread_id):  # per turn: another run on this thread may go between turns
                    final = await run_once(
                        graph,
                        {"task": personal_data_handled(text, ctx)},
                        context=ctx,
                        thread_id=thread_id,
                        on_event=display.on_event,
                        ask=display.pausing(ask if on_terminal(args) else ask_from_input),
                        metadata=metadata,
                        on_progress=display.on_progress if display.progress else None,
                    )
            except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: exit 130, the thread kept
                display.close()
                report_ctrl_c(args, thread_id, summary)
                raise
            except Exception as exc:  # main() reports it in one line naming the thread
                note_thread(exc, thread_id)
                raise
            finally:
                display.close()  # the status line erased, the streamed answer's line ended
            status = run_status(final)
            if status == INTERRUPTED:  # a call to approve off a terminal, or no line left to answer: `resume`
                result = result_json(final, thread_id, summary)
                return report_interrupted(args.json, result, thread_id, final["__interrupt__"])
            if args.json:
                print_json(result_json(final, thread_id, summary))
            elif status != FAILED and not display.answer_shown(final):  # (streamed: on screen already)
                print(f"agent> {final.get('answer', '')}" if interactive else final.get("answer", ""), flush=True)
            if status in (FAILED, HALTED):  # the next turns still run; the exit code says one failed
                failed += 1
                print(failure_line(final, status, thread_id), file=sys.stderr, flush=True)
    return EXIT_USAGE if refused else EXIT_FAILURE if failed else 0


async def demo_command(args: argparse.Namespace) -> int:
    from ..config.context import Context
    from ..sessions.thread_lock import thread_lock
    from ..testing.demo import DEMO_FILE, DEMO_TASK, demo_responder
    from ..testing.scripted_server import ScriptedOpenAIServer
    from .backends import open_run_backends
    from .review import run_metadata

    # Not under the data home: the file tools refuse smart-agent's own folders (tools/safe_fs.py).
    workspace = os.path.abspath(args.workspace or tempfile.mkdtemp(prefix="smart-agent-demo-"))
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
            graph = build_graph("agent", backends.checkpointer, store=backends.store)
            final = await run_once(
                graph,
                {"task": DEMO_TASK},
                context=ctx,
                thread_id=thread_id,
                on_event=_printer(sys.stdout, False, summary),
                metadata=run_metadata("agent", {}),  # `threads list` shows the demo's graph
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
        from ..config.files import InputFileError, read_text_file

        try:
            print(f"{DEMO_FILE} now contains: {read_text_file(written, what=DEMO_FILE, errors='replace').strip()}")
        except InputFileError as exc:
            print(f"{exc}")
    return 0 if final.get("answer") else EXIT_FAILURE


def _demo_overrides() -> dict:
    """Context fields the offline demo sets beyond the defaults (features extend this)."""
    return {}


#: When the agent loop offers each of its context tools (``tools/context_tools.py``): ``smart-agent tools``.
OFFERED_WHEN = {
    "get_tool_response": "once a large output was archived",
    "manage_todo_list": "with --use-todo-list",
    "read_skill": "when the run has skills",
    "sub_agent": "with --sub-agents",
    "start_sub_agent": "with --sub-agents",
    "check_sub_agent": "with --sub-agents",
    "cancel_sub_agent": "with --sub-agents",
}


def context_tool_rows() -> list[dict[str, Any]]:
    """The agent loop's context tools (``describe()`` rows, each with ``offered``: when)."""
    from ..graphs.sub_agent import SubAgents
    from ..tools.context_tools import CONTEXT_TOOLS
    from ..tools.registry import ToolRegistry

    registry = ToolRegistry()
    for tool, meta in [*CONTEXT_TOOLS, *SubAgents(opt_in=True).entries()]:
        registry.register(tool, meta, replace=True)
    return [{**row, "offered": OFFERED_WHEN.get(row["name"], "when it applies")} for row in registry.describe()]


def tools_command(args: argparse.Namespace) -> int:
    from .mcp import mcp_tool_rows

    rows = mcp_tool_rows(args, _printer(sys.stderr, False, RunSummary()))
    rows += [r for r in context_tool_rows() if r["name"] not in {row["name"] for row in rows}]
    if args.json:
        print(json.dumps([{k: (meta_json(v) if k == "meta" else v) for k, v in r.items()} for r in rows], default=str))
        return 0
    for r in rows:
        meta = r["meta"]
        offered = f"offered {r['offered']}" if r.get("offered") else ""
        flags = ", ".join(x for x in ["side effects" if meta.side_effects else "", meta.source, offered] if x)
        print(f"{r['name']:<18} {short(r['description'], 90)}  ({flags})")
    return 0


def meta_json(meta: Any) -> dict[str, Any]:
    """A ``ToolMeta`` for ``tools --json``: its fields, ``canonical`` as whether the tool has one."""
    return {**meta.__dict__, "canonical": getattr(meta, "canonical", None) is not None}


def graph_command(args: argparse.Namespace) -> int:
    from .agents import checked_agents_file

    graph = build_graph(args.name, None, agents_file=checked_agents_file(args.agents, args.name))
    print(graph.get_graph().draw_mermaid())
    return 0
