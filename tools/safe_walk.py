"""A bounded, confined walk of a workspace folder for the search tools (glob, grep).

It starts like every other file access (:mod:`smart_agent.tools.safe_fs`: the path is
judged, then opened component by component from a handle on the workspace root) and
goes down one folder handle at a time with ``O_NOFOLLOW``: a symbolic link is listed
but never followed, a folder swapped for a link during the walk is skipped, protected
folders (data, plugins, ``.git``, ``.smart-agent``) are neither listed nor entered.
Files are opened from the handle of the folder that lists them (:func:`open_entry`),
so a name swapped for a link between the listing and the open is refused too.

The walk is bounded: entries visited, depth and a deadline; :class:`WalkLimits`
records which bound stopped it so the tool can say so.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .guards import ToolError
from .safe_fs import DIR_FLAGS, Guard, link_error, not_found, open_step, walk_to

__all__ = ["MAX_DEPTH", "MAX_WALK_ENTRIES", "Entry", "WalkLimits", "open_entry", "walk"]

MAX_WALK_ENTRIES = 200_000
MAX_DEPTH = 64


@dataclass
class WalkLimits:
    """The bounds of one walk, and which of them stopped it (``stopped``: a one-line reason)."""

    deadline: float  # time.monotonic() value
    max_entries: int = MAX_WALK_ENTRIES
    max_depth: int = MAX_DEPTH
    visited: int = 0
    too_deep: int = 0
    stopped: str | None = None

    def over(self) -> bool:
        if self.stopped:
            return True
        if self.visited >= self.max_entries:
            self.stopped = f"stopped after {self.max_entries} entries; search a smaller folder"
        elif time.monotonic() > self.deadline:
            self.stopped = "stopped at the time limit; search a smaller folder or use a narrower pattern"
        return self.stopped is not None


@dataclass
class Entry:
    """One walked name. ``dir_fd`` (the folder holding it) is open only until the walk moves on."""

    rel: str  # relative to the workspace, '/'-separated
    parts: tuple[str, ...]  # relative to the folder the walk started at
    kind: str  # "file", "dir", "link" or "other"
    dir_fd: int
    name: str
    st: os.stat_result
    guard: Guard = field(repr=False)


def _kind(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    return "file" if stat.S_ISREG(st.st_mode) else "other"


def walk(
    workspace: str | Path, path: str, limits: WalkLimits, *, descend: Callable[[tuple[str, ...]], bool] | None = None,
    protected: bool = True,
) -> Iterator[Entry]:
    """Every entry under ``path`` (or ``path`` itself when it is a file), depth first, sorted by name.

    ``descend(parts)`` says whether a folder is worth entering (a glob prunes with it).
    Raises :class:`ToolError` for a bad start path, like the other file tools. ``protected``: as
    :func:`safe_fs.open_regular`'s.
    """
    guard = Guard(protected)
    with walk_to(workspace, path, create=False, guard=guard) as (dir_fd, parts):
        prefix = "/".join(parts)
        if not parts:
            yield from _walk_dir(dir_fd, "", (), guard, limits, descend, 0)
            return
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise not_found(path) from None
        kind = _kind(st)
        if kind == "link":
            raise link_error(path)
        if kind != "dir":
            yield Entry(prefix, (), kind, dir_fd, name, st, guard)
            return
        sub = open_step(dir_fd, name, DIR_FLAGS, path)
        try:
            guard.check_fd(sub, path)
            yield from _walk_dir(sub, prefix, (), guard, limits, descend, 0)
        finally:
            os.close(sub)


def _walk_dir(
    fd: int, prefix: str, parts: tuple[str, ...], guard: Guard, limits: WalkLimits,
    descend: Callable[[tuple[str, ...]], bool] | None, depth: int,
) -> Iterator[Entry]:
    try:
        names = sorted(os.listdir(fd))
    except OSError:
        return
    for name in names:
        if limits.over():
            return
        limits.visited += 1
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        if guard.hides(name, st):
            continue
        rel = f"{prefix}/{name}" if prefix else name
        here = (*parts, name)
        kind = _kind(st)
        yield Entry(rel, here, kind, fd, name, st, guard)
        if kind != "dir" or (descend is not None and not descend(here)):
            continue
        if depth + 1 >= limits.max_depth:
            limits.too_deep += 1
            continue
        try:  # O_NOFOLLOW: a folder swapped for a link since the stat above is refused here
            sub = open_step(fd, name, DIR_FLAGS, rel)
        except (ToolError, OSError):
            continue
        try:
            guard.check_fd(sub, rel)
        except ToolError:
            os.close(sub)
            continue
        try:
            yield from _walk_dir(sub, rel, here, guard, limits, descend, depth + 1)
        finally:
            os.close(sub)


def open_entry(entry: Entry) -> int | None:
    """Open a walked regular file for reading from its folder's handle (no link followed,
    nothing but a regular file, not a protected one); None when it is no longer that file."""
    try:
        fd = open_step(entry.dir_fd, entry.name, os.O_RDONLY | os.O_NONBLOCK, entry.rel)
    except (ToolError, OSError):
        return None
    try:
        st = entry.guard.check_fd(fd, entry.rel)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except (ToolError, OSError):
        os.close(fd)
        return None
    return fd
