"""Search tools confined to the workspace: ``glob`` (names) and ``grep`` (contents).

Both walk with :func:`smart_agent.tools.safe_walk.walk` (no link followed, protected
folders neither listed nor entered, bounded entries, depth and time) and bound their
output. ``grep`` validates the pattern with Python's ``re``, bounds its repeat counts
(:mod:`smart_agent.tools.regex_bounds`: compiling ``x{5000000}`` would take 1.5 GB
before any timeout applies) and runs it with the ``regex`` engine (same syntax), whose
searches take a timeout: a pattern with catastrophic backtracking is stopped at the
search's deadline, which comes before the tool's own timeout, so the thread running it
ends too. The bytes read per file and in total are capped, and so is the part of a
very long line that is searched.
"""

from __future__ import annotations

import os
import re
import time
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from .guards import ToolError, context_value, workspace_of
from .regex_bounds import check_regex_bounds
from .safe_walk import MAX_DEPTH, WalkLimits, open_entry, walk

if TYPE_CHECKING:
    import regex

__all__ = ["GlobArgs", "GlobMatcher", "GrepArgs", "glob_files", "grep_files", "parse_glob"]

MAX_GLOB_RESULTS = 500
DEFAULT_GREP_RESULTS = 100
MAX_GREP_RESULTS = 500
MAX_PATTERN_CHARS = 1000
SEARCH_SECONDS = 20.0  # at most; less when the run's tool_timeout_s is shorter (80% of it)
MAX_FILE_BYTES = 5_000_000
MAX_TOTAL_BYTES = 50_000_000
MAX_SCAN_LINE_CHARS = 10_000
MAX_SHOWN_LINE_CHARS = 300
_BINARY_SNIFF_BYTES = 8192


def search_deadline(runtime: ToolRuntime | None) -> float:
    """When a search must stop: before the run's tool timeout, so its thread is never left running."""
    run_timeout = context_value(runtime, "tool_timeout_s", None)
    seconds = SEARCH_SECONDS
    if run_timeout:
        seconds = min(seconds, float(run_timeout) * 0.8)
    return time.monotonic() + seconds


# -- glob patterns ------------------------------------------------------------------
def parse_glob(pattern: str, what: str = "glob pattern") -> tuple[str, ...]:
    """A glob's '/'-separated segments; absolute patterns, '~' and '..' are refused."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ToolError(f"Empty {what}: give one such as '*.py' or 'src/**/*.md'.")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"The {what} is {len(pattern)} characters long; at most {MAX_PATTERN_CHARS}.")
    if "\x00" in pattern:
        raise ToolError(f"Invalid {what} {pattern!r}: it contains a NUL character.")
    if pattern.startswith(("/", "\\", "~")) or os.path.isabs(pattern):
        raise ToolError(f"Refused: {what} {pattern!r} is absolute; give a pattern relative to the workspace.")
    segments: list[str] = []
    for seg in pattern.split("/"):
        if seg == "..":
            raise ToolError(f"Refused: {what} {pattern!r} goes outside the folder ('..'); patterns stay inside it.")
        if seg in ("", ".") or (seg == "**" and segments and segments[-1] == "**"):
            continue
        segments.append(seg)
    if not segments:
        raise ToolError(f"Empty {what}: give one such as '*.py' or 'src/**/*.md'.")
    return tuple(segments)


class GlobMatcher:
    """Matches paths (as tuples of names) against glob segments: ``*``, ``?`` and ``[...]``
    within a name, ``**`` for any number of folders (also none). Case-sensitive; a leading
    dot needs no special pattern (like ``pathlib``)."""

    def __init__(self, segments: tuple[str, ...]) -> None:
        self.segments = segments
        self._cache: dict[tuple[str, ...], frozenset[int]] = {(): self._closure({0})}

    def _closure(self, states: set[int]) -> frozenset[int]:
        todo = list(states)
        while todo:
            i = todo.pop()
            if i < len(self.segments) and self.segments[i] == "**" and i + 1 not in states:
                states.add(i + 1)
                todo.append(i + 1)
        return frozenset(states)

    def _states(self, parts: tuple[str, ...]) -> frozenset[int]:
        known = self._cache.get(parts)
        if known is not None:
            return known
        before = self._states(parts[:-1])
        name, nxt = parts[-1], set()
        for i in before:
            if i < len(self.segments):
                seg = self.segments[i]
                if seg == "**":
                    nxt.add(i)
                elif fnmatchcase(name, seg):
                    nxt.add(i + 1)
        states = self._closure(nxt)
        self._cache[parts] = states
        return states

    def matches(self, parts: tuple[str, ...]) -> bool:
        return len(self.segments) in self._states(parts)

    def may_match_below(self, parts: tuple[str, ...]) -> bool:
        """Whether some path inside the folder ``parts`` can still match (else the walk skips it)."""
        return any(i < len(self.segments) for i in self._states(parts))


def _under(path: str) -> str:
    return "the workspace" if path in ("", ".", "./") else repr(path)


# -- glob -----------------------------------------------------------------------------
class GlobArgs(BaseModel):
    """Arguments of glob."""

    pattern: str = Field(
        description="Glob relative to path: '*' and '?' within a name, '**' for any number of folders, "
        "e.g. '**/*.py' or 'docs/*.md'."
    )
    path: str = Field(default=".", description="Folder to search from, relative to the workspace; '.' is all of it.")


@tool("glob", args_schema=GlobArgs)
# LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
def glob_files(pattern: str, path: str = ".", *, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
    """Find files and folders in the workspace whose path matches a glob pattern.

    Paths are relative to the workspace, sorted, one per line (folders end with '/'),
    at most 500. Symbolic links are shown but never followed; protected folders
    (.git, smart-agent's data) are skipped.
    """
    matcher = GlobMatcher(parse_glob(pattern))
    limits = WalkLimits(search_deadline(runtime))
    found = []
    for entry in walk(workspace_of(runtime), path, limits, descend=matcher.may_match_below):
        if not entry.parts:  # the path itself is a file
            raise ToolError(f"{path!r} is a file, not a folder; give the folder to search in.")
        if not matcher.matches(entry.parts):
            continue
        if entry.kind == "dir":
            found.append(entry.rel + "/")
        elif entry.kind == "link":
            found.append(f"{entry.rel} (symbolic link; not followed)")
        else:
            found.append(entry.rel)
    found.sort()
    notes = _walk_notes(limits)
    if not found:
        return "\n\n".join([f"[No paths match {pattern!r} in {_under(path)}.]", *notes])
    shown = found[:MAX_GLOB_RESULTS]
    if len(found) > MAX_GLOB_RESULTS:
        notes.insert(0, f"[... and {len(found) - MAX_GLOB_RESULTS} more matches not shown; use a narrower pattern.]")
    return "\n".join(shown) + "".join(f"\n\n{n}" for n in notes)


def _walk_notes(limits: WalkLimits) -> list[str]:
    notes = []
    if limits.too_deep:
        notes.append(f"[{limits.too_deep} folders deeper than {MAX_DEPTH} levels were not searched.]")
    if limits.stopped:
        notes.append(f"[Incomplete: the walk {limits.stopped}.]")
    return notes


# -- grep -----------------------------------------------------------------------------
class GrepArgs(BaseModel):
    """Arguments of grep."""

    pattern: str = Field(description="Python regular expression, matched against each line, e.g. 'def \\w+_file'.")
    path: str = Field(default=".", description="File or folder relative to the workspace (folders: recursively).")
    glob: str | None = Field(
        default=None,
        description="Only files matching this glob: without '/' it matches the file name in any folder "
        "('*.py'); with '/' the path relative to path ('src/**/*.md').",
    )
    ignore_case: bool = Field(default=False, description="Match letters case-insensitively.")
    max_results: int = Field(
        default=DEFAULT_GREP_RESULTS, ge=1, le=MAX_GREP_RESULTS, description="Most matching lines to return."
    )


def _compile(pattern: str, ignore_case: bool) -> regex.Pattern[str]:
    import regex  # on the first grep, not at start-up (~15 ms)

    if not isinstance(pattern, str) or not pattern:
        raise ToolError("Empty pattern: give a regular expression such as 'TODO|FIXME'.")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"The pattern is {len(pattern)} characters long; at most {MAX_PATTERN_CHARS}.")
    try:
        re.compile(pattern, re.IGNORECASE if ignore_case else 0)  # the syntax is Python's
        check_regex_bounds(pattern)  # regex.compile unrolls repeats: x{5000000} would take 1.5 GB
        return regex.compile(pattern, regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0))
    except (re.error, regex.error) as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}.") from None
    except (RecursionError, OverflowError, MemoryError, ValueError) as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {type(exc).__name__}.") from None


def _shown(line: str, start: int) -> str:
    if len(line) <= MAX_SHOWN_LINE_CHARS:
        return line
    begin = max(0, min(start - 100, len(line) - MAX_SHOWN_LINE_CHARS))
    end = begin + MAX_SHOWN_LINE_CHARS
    return ("…" if begin else "") + line[begin:end] + ("…" if end < len(line) else "")


class _Search:
    """One grep run: its matches, counters and the reason it stopped early, if any."""

    def __init__(self, compiled: regex.Pattern[str], max_results: int, deadline: float) -> None:
        self.compiled, self.max_results, self.deadline = compiled, max_results, deadline
        self.lines: list[str] = []
        self.more = False
        self.stopped: str | None = None
        self.scanned = 0
        self.counts = {"binary": 0, "links": 0, "partial": 0, "long": 0, "unreadable": 0}

    def file(self, rel: str, fd: int) -> None:
        room = min(MAX_FILE_BYTES, MAX_TOTAL_BYTES - self.scanned)
        with os.fdopen(fd, "rb") as f:
            data = f.read(room + 1)
        if len(data) > room:
            data = data[:room]
            self.counts["partial"] += 1
        self.scanned += len(data)
        if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
            self.counts["binary"] += 1
            return
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, 1):
            line = line.removesuffix("\r")
            if len(line) > MAX_SCAN_LINE_CHARS:
                self.counts["long"] += 1
            try:
                match = self.compiled.search(
                    line[:MAX_SCAN_LINE_CHARS], timeout=max(0.001, self.deadline - time.monotonic())
                )
            except TimeoutError:
                self.stopped = (
                    f"the pattern took too long (at {rel}:{number}); simplify it (nested repetition such as "
                    "'(a+)+' backtracks exponentially)"
                )
                return
            if match is None:
                continue
            if len(self.lines) >= self.max_results:
                self.more = True
                return
            self.lines.append(f"{rel}:{number}: {_shown(line, match.start())}")

    def notes(self, limits: WalkLimits) -> list[str]:
        c, notes = self.counts, []
        if self.more:
            notes.append(
                f"[Showing the first {self.max_results} matches; there are more. Narrow the pattern, the path or "
                f"the glob, or raise max_results (at most {MAX_GREP_RESULTS}).]"
            )
        if self.stopped:
            notes.append(f"[Incomplete: {self.stopped}.]")
        if c["partial"]:
            notes.append(f"[{c['partial']} files were searched only in part (at most {MAX_FILE_BYTES} bytes each, "
                         f"{MAX_TOTAL_BYTES} in all).]")
        if c["long"]:
            notes.append(f"[{c['long']} lines longer than {MAX_SCAN_LINE_CHARS} characters were searched only "
                         "in their beginning.]")
        if c["binary"]:
            notes.append(f"[{c['binary']} binary files skipped.]")
        if c["links"]:
            notes.append(f"[{c['links']} symbolic links not followed.]")
        if c["unreadable"]:
            notes.append(f"[{c['unreadable']} files could not be opened (changed during the search or not "
                         "regular files).]")
        return notes + _walk_notes(limits)


@tool("grep", args_schema=GrepArgs)
def grep_files(
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
    max_results: int = DEFAULT_GREP_RESULTS,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Search the contents of workspace files with a regular expression (Python syntax), line by line.

    Returns 'file:line: text' lines (paths relative to the workspace), at most
    max_results, with notes when the search was cut short. Binary files, symbolic
    links and protected folders are skipped.
    """
    compiled = _compile(pattern, ignore_case)
    max_results = max(1, min(int(max_results), MAX_GREP_RESULTS))
    only = None
    if glob is not None:
        segments = parse_glob(glob, "glob")
        if "/" not in glob.strip("/"):  # a bare name pattern matches in every folder
            segments = ("**", *segments)
        only = GlobMatcher(segments)
    deadline = search_deadline(runtime)
    limits = WalkLimits(deadline)
    search = _Search(compiled, max_results, deadline)
    for entry in walk(workspace_of(runtime), path, limits):
        if entry.kind == "link":
            search.counts["links"] += 1
            continue
        if entry.kind != "file" or (only is not None and entry.parts and not only.matches(entry.parts)):
            continue
        if search.scanned >= MAX_TOTAL_BYTES:
            search.stopped = f"stopped after reading {MAX_TOTAL_BYTES} bytes; search a smaller folder or add a glob"
            break
        fd = open_entry(entry)
        if fd is None:
            search.counts["unreadable"] += 1
            continue
        search.file(entry.rel, fd)
        if search.stopped or search.more or time.monotonic() > deadline:
            if not (search.stopped or search.more):
                search.stopped = "stopped at the time limit; search a smaller folder or add a glob"
            break
    notes = search.notes(limits)
    if not search.lines:
        return "\n\n".join([f"[No matches for {pattern!r} in {_under(path)}.]", *notes])
    return "\n".join(search.lines) + "".join(f"\n\n{n}" for n in notes)
