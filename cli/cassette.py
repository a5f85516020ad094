"""``--record DIR`` / ``--replay DIR`` (run, chat, resume): the run's model traffic stored into, or
answered from, a cassette folder (smart_agent/cassette, docs/record_replay.md).

* :func:`add_cassette_args` - the two flags (mutually exclusive; ``--replay`` must name an
  existing folder: one line, exit 2);
* :func:`cassette_session` - the session a command wraps its run in (a no-op without the flags).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from ..config.checks import shown, text_problem


def _folder(must_exist: bool) -> Any:
    def parse(text: str) -> str:
        problem = text_problem(text)
        if problem:
            raise argparse.ArgumentTypeError(f"the folder name {problem}")
        path = os.path.abspath(text)
        if must_exist and not os.path.isdir(path):
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a cassette folder (no such directory)")
        if not must_exist and os.path.exists(path) and not os.path.isdir(path):
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a directory")
        return path

    parse.__name__ = "folder"
    return parse


def add_cassette_args(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--record", metavar="DIR", type=_folder(False),
        help="store every model request and response in this cassette folder (created if needed)",
    )  # fmt: skip
    group.add_argument(
        "--replay", metavar="DIR", type=_folder(True),
        help="answer model requests from this cassette folder, without any network (a request it does not hold: "
        "one line naming it, exit 2)",
    )  # fmt: skip


def cassette_session(args: argparse.Namespace) -> contextlib.AbstractAsyncContextManager[Any]:
    """The record or replay session of ``--record`` / ``--replay`` (an ``async with``), or a no-op."""
    from ..cassette import recording, replaying

    if getattr(args, "replay", None):
        return replaying(args.replay)
    if getattr(args, "record", None):
        return recording(args.record)
    return contextlib.nullcontext()
