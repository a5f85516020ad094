"""Command-line options: the flags that map onto context fields, and the input checks
(every bad argument is one line on stderr and exit code 2).

* :class:`OneLineParser` - argparse errors as one line (no usage dump, no traceback).
* :func:`utf8_text` - text arguments (the task) must be valid UTF-8; undecodable
  bytes in argv are refused, not replaced.
* :func:`check_tool_names` - ``--tools`` and ``--approve`` names must be registered tools.
* :func:`thread_arg` - ``--thread`` must be a non-empty id.
* :func:`chat_line` - a line of ``chat`` input must be valid UTF-8 (checked per line).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from ..config.checks import shown, text_problem

if TYPE_CHECKING:  # pragma: no cover
    from ..config.context import BaseContext

C = TypeVar("C", bound="BaseContext")

EXIT_USAGE = 2


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (sub-parsers inherit it).

    It also keeps what is added to it through argparse's public methods, for the CLI reference
    (``cli/reference.py``): ``added_arguments`` (its arguments, groups' too, in order) and
    ``added_commands`` (sub-command name -> its help and parser)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.added_arguments: list[argparse.Action] = []
        self.added_commands: dict[str, tuple[str | None, argparse.ArgumentParser]] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.added_arguments.append(action)
        return action

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        group = super().add_mutually_exclusive_group(**kwargs)
        add = group.add_argument

        def add_argument(*args: Any, **kw: Any) -> argparse.Action:
            action = add(*args, **kw)
            self.added_arguments.append(action)
            return action

        setattr(group, "add_argument", add_argument)  # noqa: B010 - an instance's method, recorded
        return group

    def add_subparsers(self, **kwargs: Any) -> Any:
        sub = super().add_subparsers(**kwargs)
        add = sub.add_parser

        def add_parser(name: str, **kw: Any) -> argparse.ArgumentParser:
            parser = add(name, **kw)
            self.added_commands[name] = (kw.get("help"), parser)
            return parser

        setattr(sub, "add_parser", add_parser)  # noqa: B010
        return sub

    def error(self, message: str) -> NoReturn:
        line = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {line} (see {self.prog} --help)\n")


def utf8_text(what: str) -> Callable[[str], str]:
    """An argparse ``type`` refusing text with undecodable bytes or NUL (argv is bytes on POSIX)."""

    def parse(text: str) -> str:
        problem = text_problem(text)
        if problem:
            raise argparse.ArgumentTypeError(f"the {what} {problem}")
        return text

    parse.__name__ = what
    return parse


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
