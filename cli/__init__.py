"""The ``smart-agent`` command line: every piece of CLI code lives in this package, and
nothing outside it imports it.

    smart-agent run TASK [--graph agent|planner|...] [--thread ID] [--json] ...
    smart-agent chat [--thread ID] ...          (Assistant mode: one stdin line per turn)
    smart-agent demo                            (offline, against a bundled scripted model)
    smart-agent tools | smart-agent graph [NAME] [--agents FILE]
    smart-agent agents validate FILE | list [--agents FILE]   (cli/agents.py)
    smart-agent plan | execute                  (cli/planner.py)
    smart-agent resume --thread ID --approve|--reject|--edit|--answer|--decisions
                                                (cli/resume.py: a run paused on an interrupt, exit 3)
    smart-agent memory list|search|forget|stats|export|import (cli/memory.py)
    smart-agent threads list|show ID|export ID|delete ID (cli/threads.py)
    smart-agent doctor                          (cli/doctor.py: model, data folder, memory, database)
    smart-agent eval SUITE [--compare A B] ...  (cli/eval.py, cli/eval_run.py; smart_agent/evaluation)
    smart-agent serve [--host H] [--port P] [--workers N]
                                                (cli/serve.py: the LangGraph API for langgraph.json's
                                                graphs; replicas on Postgres + Redis)

Events stream live to stderr (to stdout in human mode); with ``--json`` stdout
holds exactly one JSON object. On a terminal the answer streams and a status line shows
what runs (``live.py``).

* ``options.py`` - argument types and checks (one line, exit 2), feature flags;
* ``lines.py`` - one line per event type (a unit test fails for a type without one);
  ``render.py`` - a child's tag on its lines; ``summary.py`` - what the run did;
* ``live.py`` - what a run shows as it goes: the event lines, and on a terminal the streamed
  answer and the status line;
* ``run.py`` - run, chat, demo, tools, graph; ``context_args.py`` - the flags that build
  the ``Context``; ``outcome.py`` - a run's --json object, answer lines and exit code;
* ``planner.py``, ``memory.py`` - the features' commands and flags;
* ``review.py`` - runs that pause for a person (review, questions): prompts, exit 3;
  ``resume.py`` - ``smart-agent resume``;
* ``cassette.py`` - ``--record DIR`` / ``--replay DIR``: a run's model traffic stored in or
  answered from a cassette (smart_agent/cassette).

Importing the package is cheap (argparse only); graphs, tools and models load in the
handlers.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import Any, Protocol

from ..config import settings
from . import run
from .backends import check_data_folders, use_db_arg
from .cassette import add_cassette_args
from .context_args import add_context_args, context_from_args
from .mcp import add_mcp_args
from .options import OneLineParser, thread_arg, utf8_text
from .outcome import EXIT_FAILURE, EXIT_USAGE, result_json
from .render import RunSummary, format_event
from .run import run_once

__all__ = [
    "EXIT_FAILURE", "EXIT_USAGE", "RunSummary", "add_context_args", "build_parser", "context_from_args",
    "format_event", "main", "result_json", "run_once",
]


EXAMPLES = """examples:
  smart-agent doctor                                  check the model, data folder, memory and database
  smart-agent run "What is 37*43?"                    one task with the agent loop
  smart-agent run "Compare a.txt and b.txt" --graph planner --json
  smart-agent chat --thread work                      a conversation; run it again to continue it
  smart-agent threads list                            the sessions; threads show|export|delete ID
  smart-agent serve --port 8123                       the graphs over the LangGraph API (docs/deploy.md)
  smart-agent run "Split this goal" --graph fleet --max-workers 2
  smart-agent demo                                    offline, against a bundled scripted model

smart-agent COMMAND --help shows a command's options."""
RUN_EXAMPLES = """examples:
  smart-agent run "What is 37*43?"
  smart-agent run "Summarise README.md" --model anthropic:claude-sonnet-4-5 --tools read_file
  smart-agent run "Fetch both pages and compare them" --graph planner --json > result.json
  smart-agent run "Review every module" --graph fleet --max-workers 2 --thread review
  smart-agent run "Tidy the notes folder" --approve side-effects --workspace notes

exit codes: 0 done, 1 the run failed, 2 bad input or configuration, 3 waiting for a person, 130 interrupted (Ctrl-C)"""
CHAT_EXAMPLES = """examples:
  smart-agent chat --thread work                 type a line per turn; /exit ends
  printf 'I am Ada\\nWho am I?\\n' | smart-agent chat --thread ada --quiet
  smart-agent threads show work                  read the conversation later"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("smart-agent")
    except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
        return "unknown"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"smart-agent {_version()}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; for one of the core commands (``CORE_COMMANDS``; ``main`` passes argv's first
    word) only that command's: a run neither imports the other commands' modules nor builds their flags."""
    parser = OneLineParser(
        prog="smart-agent",
        description="Autonomous agents on LangGraph.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)  # looked up only when asked (package metadata scan)
    sub = parser.add_subparsers(dest="command", required=True)
    if command in CORE_COMMANDS:
        CORE_COMMANDS[command](sub)
        return parser
    for add_command in CORE_COMMANDS.values():
        add_command(sub)
    for register in _feature_cli_hooks():
        register(sub)
    return parser


class Subcommands(Protocol):
    """What ``ArgumentParser.add_subparsers()`` returns, as the commands use it."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def _add_run(sub: Subcommands) -> None:
    p = sub.add_parser(
        "run",
        help="run one task (Runner mode)",
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", type=utf8_text("task"), help="the task, in plain language")
    add_context_args(p)
    add_cassette_args(p)
    p.set_defaults(handler=run.run_command)


def _add_chat(sub: Subcommands) -> None:
    p = sub.add_parser(
        "chat",
        help="a conversation (Assistant mode): one stdin line per user turn",
        epilog=CHAT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_context_args(p)
    add_cassette_args(p)
    p.set_defaults(handler=run.chat_command)


def _add_demo(sub: Subcommands) -> None:
    p = sub.add_parser("demo", help="run the agent offline against a bundled scripted model")
    p.add_argument("--workspace", help="folder for the demo's files (default: a new temporary folder)")
    p.add_argument("--thread", type=thread_arg, help="thread id for the demo session")
    p.set_defaults(handler=run.demo_command)


def _add_tools(sub: Subcommands) -> None:
    p = sub.add_parser("tools", help="list the registered tools (built-ins, plugins, --mcp-config servers)")
    p.add_argument("--json", action="store_true", help="print one JSON list on stdout")
    add_mcp_args(p)
    p.set_defaults(handler=run.tools_command)


def _add_graph(sub: Subcommands) -> None:
    p = sub.add_parser("graph", help="print a graph as Mermaid")
    p.add_argument("name", nargs="?", default="agent", help="the graph to draw: agent (default), planner, dual, fleet")
    p.add_argument("--agents", metavar="FILE", help="draw the agent graph of this agents file's team")
    p.set_defaults(handler=run.graph_command)


CORE_COMMANDS: dict[str, Callable[[Subcommands], None]] = {
    "run": _add_run, "chat": _add_chat, "demo": _add_demo, "tools": _add_tools, "graph": _add_graph,
}


def _feature_cli_hooks() -> list[Callable]:
    """Sub-commands contributed by features (memory, planner...)."""
    from .agents import register_cli as register_agents_cli
    from .doctor import register_cli as register_doctor_cli
    from .eval import register_cli as register_eval_cli
    from .memory import register_cli as register_memory_cli
    from .planner import register_cli as register_planner_cli
    from .resume import register_cli as register_resume_cli
    from .serve import register_cli as register_serve_cli
    from .threads import register_cli as register_threads_cli

    return [
        register_memory_cli, register_planner_cli, register_resume_cli, register_agents_cli, register_threads_cli,
        register_doctor_cli, register_eval_cli, register_serve_cli,
    ]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    from ..models.chat import ModelConfigError
    from ..nodes.resolver import InputError
    from ..replies.structured import StructuredOutputError

    handler = args.handler
    try:
        checked = args.command != "doctor"  # (doctor reports a bad data folder or database itself)
        if checked:
            check_data_folders()
        use_db_arg(args, check=checked)
        result = handler(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return int(result or 0)
    except ModelConfigError as exc:
        _error_line(f"smart-agent: model not available: {' '.join(str(exc).split())}")
        return EXIT_USAGE
    except StructuredOutputError as exc:
        _error_line(f"smart-agent: structured output failed: {exc}{_on_thread(exc, ' (thread {})')}")
        return EXIT_FAILURE
    except (InputError, ValueError) as exc:  # bad input: one line (a message may quote text with newlines)
        _error_line("smart-agent: " + " ".join(str(exc).split()))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clean message; the traceback on demand
        if settings.debug():
            raise
        where = _on_thread(exc, "thread {}; ")
        _error_line(f"smart-agent: {type(exc).__name__}: {exc} ({where}set SMART_AGENT_DEBUG=1 for the traceback)")
        return EXIT_FAILURE


def _error_line(line: str) -> None:
    """The error a command ended with, on stderr, without credentials (redact.py: an error may
    quote a URL with its password, a header, a key)."""
    from ..runs.redact import redact_text

    print(redact_text(line), file=sys.stderr)


def _on_thread(exc: BaseException, form: str) -> str:
    """``form`` filled with the thread of a run that raised (cli/outcome.note_thread), else ''."""
    from .outcome import thread_of

    thread = thread_of(exc)
    return form.format(thread) if thread else ""

