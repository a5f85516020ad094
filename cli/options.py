"""Command-line options: the flags that map onto context fields, and the input checks
(every bad argument is one line on stderr and exit code 2).

* :class:`OneLineParser` - argparse errors as one line (no usage dump, no traceback).
* :func:`field_int` - an integer flag checked with its context field's type and bounds.
* :func:`existing_dir` - ``--workspace`` must name an existing folder (:func:`add_workspace_args`).
* :func:`utf8_text` - text arguments (the task) must be valid UTF-8; undecodable
  bytes in argv are refused, not replaced.
* :func:`check_tool_names` - ``--tools`` and ``--approve`` names must be registered tools.
* :func:`thread_arg` - ``--thread`` must be a non-empty id.
* :func:`chat_line` - a line of ``chat`` input must be valid UTF-8 (checked per line).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TypeVar

from ..config.checks import shown, text_problem

if TYPE_CHECKING:  # pragma: no cover
    from ..config.context import BaseContext

C = TypeVar("C", bound="BaseContext")

EXIT_USAGE = 2


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (sub-parsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        line = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {line} (see {self.prog} --help)\n")


def field_int(field_name: str) -> Callable[[str], int]:
    """An argparse ``type`` for an integer context field: its type and bounds."""
    from ..config.context import field_problem

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer (got {shown(text)})") from None
        problem = field_problem(field_name, value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = "integer"
    return parse


def utf8_text(what: str) -> Callable[[str], str]:
    """An argparse ``type`` refusing text with undecodable bytes or NUL (argv is bytes on POSIX)."""

    def parse(text: str) -> str:
        problem = text_problem(text)
        if problem:
            raise argparse.ArgumentTypeError(f"the {what} {problem}")
        return text

    parse.__name__ = what
    return parse


def existing_dir(text: str) -> str:
    """``--workspace``: an existing folder, as an absolute path."""
    problem = text_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"the folder name {problem}")
    path = os.path.abspath(text)
    if not os.path.exists(path):
        raise argparse.ArgumentTypeError(f"{shown(text)} does not exist")
    if not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a directory")
    return path


def tool_list(text: str) -> list[str]:
    """``--tools a,b``: comma-separated names (checked against the registry later). No name at
    all (``--tools ""``) is refused: an empty list would mean every tool."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no tool name given (leave --tools out to offer every tool)")
    for name in names:
        problem = text_problem(name)
        if problem:
            raise argparse.ArgumentTypeError(f"the tool name {shown(name)} {problem}")
    return names


def thread_arg(text: str) -> str:
    """``--thread ID``: a non-empty id of valid text (an empty one would start a new thread)."""
    problem = text_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"the thread id {problem}")
    if not text.strip():
        raise argparse.ArgumentTypeError("the thread id is empty (leave --thread out for a new thread)")
    return text


def chat_line(raw: bytes | str) -> tuple[str, str | None]:
    """A line of ``chat`` input (bytes are decoded strictly, whatever the locale) as its
    stripped text, and why it cannot be a turn (None when it can): not valid UTF-8, a NUL
    byte, too long. The caller skips such a line with one error line."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return "", f"is not valid UTF-8 text (byte {exc.start + 1}: {raw[exc.start:exc.start + 1]!r})"
    text = raw.strip()
    return text, text_problem(text)


def check_tool_names(ctx: C, also: Callable[[str], bool] | None = None) -> C:
    """``ctx``; a ``ValueError`` listing the known tools when one of ``ctx.tools`` or of the
    tool names in ``ctx.approve`` is not a registered tool (built-ins, context tools and
    plugins: what a CLI run's graph offers) nor a name ``also`` accepts (MCP tools)."""
    from ..config.checks import APPROVE_SIDE_EFFECTS, approve_tokens

    approve = [n for n in approve_tokens(getattr(ctx, "approve", None) or "none") if n != APPROVE_SIDE_EFFECTS]
    checks = [("--tools", list(ctx.tools or [])), ("--approve", approve)]
    if not any(names for _flag, names in checks):
        return ctx
    from ..tools.builtins import default_registry
    from ..tools.context_tools import with_context_tools

    known = with_context_tools(default_registry()).names()
    for flag, names in checks:
        unknown = [n for n in names if n not in known and not (also and also(n))]
        if unknown:
            raise ValueError(
                f"{flag}: unknown tool(s) {', '.join(map(shown, unknown))}. Known tools: {', '.join(known)}"
            )
    return ctx


def add_workspace_args(p: argparse.ArgumentParser) -> None:
    """Where the file tools work and whether URL tools may reach private addresses (run, chat,
    demo and execute)."""
    p.add_argument(
        "--workspace", type=existing_dir, help="folder the file tools are confined to (default: current folder)"
    )
    p.add_argument(
        "--allow-private-network",
        action="store_true",
        default=None,
        help="let URL tools reach private/loopback addresses",
    )


# -- flags of features that have no module of their own ------------------------------
def add_context_budget_args(p: argparse.ArgumentParser) -> None:
    """Context management (issue 4): token budget, archive, todo planning, structured output."""
    p.add_argument(
        "--context-tokens",
        type=field_int("context_token_limit"),
        help="token budget of every model request (default 24000)",
    )
    p.add_argument(
        "--summary-tokens",
        type=field_int("summary_token_limit"),
        help="largest summary of compacted history, in tokens (default 1000)",
    )
    p.add_argument(
        "--archive-chars",
        type=field_int("archive_threshold_chars"),
        help="archive tool outputs longer than this many characters (default 2000; 0: off)",
    )
    p.add_argument(
        "--todo",
        action="store_true",
        default=None,
        help="planning mode: the model keeps a todo list (manage_todo_list)",
    )
    p.add_argument(
        "--output-schema",
        metavar="FILE",
        help="JSON Schema file: the final answer must be a JSON value valid against it",
    )
    p.add_argument(
        "--max-output-retries",
        type=field_int("max_output_retries"),
        help="invalid structured answers sent back to the model before failing (default 2)",
    )


def context_budget_values(args: argparse.Namespace, values: dict) -> None:
    for flag, field_name in (
        ("context_tokens", "context_token_limit"),
        ("summary_tokens", "summary_token_limit"),
        ("archive_chars", "archive_threshold_chars"),
        ("todo", "use_todo_list"),
        ("max_output_retries", "max_output_retries"),
    ):
        if getattr(args, flag, None) is not None:
            values[field_name] = getattr(args, flag)
    path = getattr(args, "output_schema", None)
    if path:
        from ..config.files import load_json, read_text_file

        what = f"--output-schema {shown(path)}"
        values["output_schema"] = load_json(read_text_file(path, what="--output-schema"), what=what)


def add_reasoning_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reasoning",
        choices=["direct", "two-phase"],
        help="two-phase: a reasoning call first, then an action call offering only the tools it named",
    )


def reasoning_values(args: argparse.Namespace, values: dict) -> None:
    if getattr(args, "reasoning", None):
        values["reasoning"] = args.reasoning.replace("-", "_")
