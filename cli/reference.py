"""The flag tables of ``docs/cli.md``, made from the ``smart-agent`` parser.

``docs/cli.md`` is written by hand around blocks this module fills: ``<!-- cli:commands -->``
(every command, one line each) and ``<!-- cli:COMMAND -->`` (``run``, ``memory search``...: the
command's arguments and flags; the flags of the settings link to ``docs/configuration.md``, which
``config/reference.py`` makes from the same declarations).

``python -m smart_agent.cli.reference docs/cli.md`` rewrites the blocks in place;
``tests/unit/cli/test_reference.py`` fails when a block is stale or a command has none.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator

from . import build_parser
from .flags import DEST_PREFIX, REVIEW_FIELDS
from .options import OneLineParser

BLOCK = re.compile(r"<!-- cli:([a-z -]+) -->\n.*?<!-- /cli:\1 -->", re.S)
SETTINGS_LINK = "[configuration.md](configuration.md)"


def commands(parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()) -> Iterator[
    tuple[tuple[str, ...], str | None, argparse.ArgumentParser]
]:
    """Every command and sub-command: (its words, its help, its parser), in the parser's order."""
    parser = parser or build_parser()
    assert isinstance(parser, OneLineParser)
    for name, (help_text, sub) in parser.added_commands.items():
        yield (*path, name), help_text, sub
        yield from commands(sub, (*path, name))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _help(action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    params = dict(vars(action))
    if action.choices is not None:
        params["choices"] = ", ".join(str(c) for c in action.choices)
    return _cell(action.help % params).replace("<", "&lt;").replace(">", "&gt;")


def _metavar(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if isinstance(action.metavar, tuple):
        return " ".join(action.metavar)
    if action.metavar:
        name = action.metavar
    elif action.choices is not None:
        name = "|".join(str(c) for c in action.choices)
    else:
        name = action.dest.upper()
    return f"[{name}]" if action.nargs == "?" else name


def _usage(action: argparse.Action) -> str:
    """``--flag VALUE`` (``-q`` / ``--quiet``), or the positional argument's name."""
    if not action.option_strings:
        return _metavar(action)
    value = _metavar(action)
    flags = " / ".join(action.option_strings)
    return f"{flags} {value}".rstrip()


def _setting_flags(parser: OneLineParser) -> list[argparse.Action]:
    return [a for a in parser.added_arguments if a.dest.startswith(DEST_PREFIX)]


def _every_setting(flags: list[argparse.Action]) -> bool:
    from ..config.context import context_field_names, declaration

    given = {a.dest[len(DEST_PREFIX):] for a in flags}
    wanted = {n for n in context_field_names() if declaration(n).cli and n not in REVIEW_FIELDS}
    return wanted <= given


def command_table(words: tuple[str, ...], parser: argparse.ArgumentParser) -> str:
    """A command's synopsis, its arguments and flags, and which settings it takes."""
    assert isinstance(parser, OneLineParser)
    own = [a for a in parser.added_arguments if a.dest != "help" and not a.dest.startswith(DEST_PREFIX)]
    positional = [_usage(a) for a in own if not a.option_strings]
    synopsis = " ".join(["smart-agent", *words, *positional, *(["[options]"] if len(own) > len(positional) else [])])
    if parser.added_commands:
        synopsis = " ".join(["smart-agent", *words, "|".join(parser.added_commands), "..."])
    out = [f"`{synopsis}`", ""]
    if own:
        out += ["| argument | what it does |", "| --- | --- |"]
        out += [f"| `{_cell(_usage(a))}` | {_help(a) or '—'} |" for a in own]
        out.append("")
    settings = _setting_flags(parser)
    if settings and _every_setting(settings):
        out.append(f"Also a flag for every setting (`--model`, `--max-tool-calls`, ...): {SETTINGS_LINK}.")
    elif settings:
        names = ", ".join(f"`{a.option_strings[0]}`" for a in settings)
        out.append(f"Setting flags ({SETTINGS_LINK}): {names}.")
    return "\n".join(out).rstrip() + "\n"


def commands_table(parser: argparse.ArgumentParser | None = None) -> str:
    """Every command, one line each, with its help."""
    out = ["| command | what it does |", "| --- | --- |"]
    out += [
        f"| [`{' '.join(words)}`](#{'-'.join(words)}) | {_cell(help_text or '').replace('<', '&lt;')} |"
        for words, help_text, _ in commands(parser)
        if len(words) == 1
    ]
    return "\n".join(out) + "\n"


def blocks() -> dict[str, str]:
    """What each block of ``docs/cli.md`` holds, by its name."""
    parser = build_parser()
    out = {"commands": commands_table(parser)}
    for words, _, sub in commands(parser):
        out[" ".join(words)] = command_table(words, sub)
    return out


def fill(text: str) -> str:
    """``text`` with every ``cli:`` block rewritten; a block this module does not know: ValueError."""
    made = blocks()

    def block(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in made:
            raise ValueError(f"docs/cli.md: no command {name!r} for its block")
        return f"<!-- cli:{name} -->\n{made[name]}<!-- /cli:{name} -->"

    return BLOCK.sub(block, text)


def missing(text: str) -> list[str]:
    """The blocks ``text`` lacks (a command without its flag table)."""
    present = {m.group(1) for m in BLOCK.finditer(text)}
    return [name for name in blocks() if name not in present]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m smart_agent.cli.reference docs/cli.md")
    with open(sys.argv[1], encoding="utf-8") as f:
        filled = fill(f.read())
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write(filled)
