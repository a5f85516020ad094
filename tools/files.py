"""File tools confined to the run's workspace (``Context.workspace``).

Every open goes through :mod:`smart_agent.tools.safe_fs`: component by component
from a handle on the workspace root, never following a symbolic link, only regular
files, never smart-agent's data or plugins folder nor a ``.git`` folder.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Mapping
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from ..config import settings
from .guards import ToolError, context_value, workspace_of
from .safe_fs import open_dir, open_regular, write_regular

__all__ = [
    "DEFAULT_MAX_WRITE_BYTES",
    "ListFilesArgs",
    "ReadFileArgs",
    "WriteFileArgs",
    "list_files",
    "read_file",
    "write_file",
]

MAX_READ_CHARS = 200_000
MAX_LIST_ENTRIES = 500
DEFAULT_MAX_WRITE_BYTES = 10_000_000
_BINARY_SNIFF_BYTES = 8192
_SKIP_CHUNK_CHARS = 1 << 20
_COUNT_MAX_BYTES = 1 << 30  # read_file's line count stops there ("more than N lines")


def _os_error(action: str, path: str, exc: OSError) -> ToolError:
    return ToolError(f"Could not {action} {path!r}: {exc.strerror or exc}.")


def max_write_bytes_of(runtime: ToolRuntime | None) -> int:
    """The run's ``max_write_bytes`` (default ``$SMART_AGENT_MAX_WRITE_BYTES`` or 10 MB)."""
    value = context_value(runtime, "max_write_bytes", None)
    if value is None:
        value = settings.field_env("max_write_bytes")[1] or DEFAULT_MAX_WRITE_BYTES
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ToolError(f"max_write_bytes must be an integer (got {value!r}).") from None


# -- read_file ------------------------------------------------------------------
class ReadFileArgs(BaseModel):
    """Arguments of read_file."""

    path: str = Field(description="File path relative to the workspace, e.g. 'notes/todo.md'.")
    offset: int = Field(
        default=0, ge=0, description="First line to read, 1-based (0 or 1: from the start); for large files."
    )
    limit: int | None = Field(
        default=None, ge=1, description="Number of lines to read from offset (default: as many as max_chars allows)."
    )
    max_chars: int = Field(
        default=MAX_READ_CHARS, ge=1, le=MAX_READ_CHARS, description="Maximum number of characters to return."
    )
    line_numbers: bool = Field(default=False, description="Prefix every line with its line number and a tab.")


def read_effect(args: Mapping[str, Any]) -> dict[str, Any]:
    """read_file's canonical effect for loop detection (``ToolMeta.canonical``): the window of
    the file it reads (path, first line - 0 and 1 both the start -, lines, characters); the line
    numbers only change how it is shown."""
    offset = args.get("offset", 0)
    if isinstance(offset, int) and not isinstance(offset, bool):
        offset = max(1, offset)
    return {
        "path": args.get("path"), "offset": offset, "limit": args.get("limit"),
        "max_chars": args.get("max_chars", MAX_READ_CHARS),
    }  # fmt: skip


@tool("read_file", args_schema=ReadFileArgs)
def read_file(
    path: str,
    offset: int = 0,
    limit: int | None = None,
    max_chars: int = MAX_READ_CHARS,
    line_numbers: bool = False,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Read a text file from the workspace.

    Without offset/limit: the file's text (up to max_chars). With offset (first line,
    1-based) and/or limit (number of lines): that window of lines, and a last line
    saying which lines were shown, of how many, and the offset to read on from.
    """
    max_chars = max(1, min(max_chars, MAX_READ_CHARS))
    fd, _ = open_regular(workspace_of(runtime), path)
    try:
        raw = os.fdopen(fd, "rb")
    except OSError as exc:
        os.close(fd)
        raise _os_error("read", path, exc) from None
    try:
        with raw:
            if b"\x00" in raw.read(_BINARY_SNIFF_BYTES):
                raise ToolError(f"{path!r} looks like a binary file; read_file only reads text files.")
            raw.seek(0)
            if max(0, offset) <= 1 and limit is None and not line_numbers:
                return _read_text(raw, path, max_chars)
            return _read_lines(raw, path, max(1, offset), limit, max_chars, line_numbers)
    except OSError as exc:
        raise _os_error("read", path, exc) from None


def _read_text(raw: io.BufferedReader, path: str, max_chars: int) -> str:
    """The whole text up to ``max_chars`` (the format of a call without offset/limit)."""
    f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
    text = f.read(max_chars)
    more = bool(f.read(1))
    f.detach()
    if not text:
        return "[The file is empty.]"
    if more:
        whole = text.count("\n")  # complete lines shown; the next one starts at line whole + 1
        if whole == 0:
            return text + (
                f"\n\n[Truncated: line 1 of {path} is longer than {max_chars} characters; showed its beginning. "
                "Call read_file with offset=2 to read the lines after it.]"
            )
        shown = "line 1" if whole == 1 else f"lines 1-{whole}"
        shown += "" if text.endswith("\n") else f" and the beginning of line {whole + 1}"
        text += (
            f"\n\n[Truncated at {max_chars} characters: showed {shown} of {path}. "
            f"Call read_file with offset={whole + 1} to read more.]"
        )
    return text


def _count_lines(raw: io.BufferedReader) -> tuple[int, bool]:
    """Lines of the file (a last line without newline counts) and whether all of it was counted."""
    raw.seek(0)
    lines, scanned, last = 0, 0, b""
    while scanned < _COUNT_MAX_BYTES:
        chunk = raw.read(_SKIP_CHUNK_CHARS)
        if not chunk:
            return lines + (1 if last not in (b"", b"\n") else 0), True
        lines += chunk.count(b"\n")
        scanned += len(chunk)
        last = chunk[-1:]
    return lines, False


def _read_lines(
    raw: io.BufferedReader, path: str, offset: int, limit: int | None, max_chars: int, line_numbers: bool
) -> str:
    """Lines ``offset`` .. ``offset + limit - 1`` (1-based), within ``max_chars``, and a note."""
    total, exact = _count_lines(raw)
    raw.seek(0)
    of_total = f"{total}" if exact else f"more than {total}"
    f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n")
    try:
        number = 1
        while number < offset:  # skip whole lines, reading a bounded chunk at a time
            chunk = f.readline(_SKIP_CHUNK_CHARS)
            if not chunk:
                break
            number += chunk.endswith("\n")
        lines: list[str] = []
        used, cut, more = 0, False, False
        while limit is None or len(lines) < limit:
            room = max_chars - used
            line = f.readline(max(room, 0) + 1)
            if not line:
                break
            if len(line) > room:
                if lines:  # it does not fit: it is the next call's first line
                    more = True
                else:  # a first line longer than max_chars: its beginning
                    lines.append(line[:room])
                    cut = not line.endswith("\n")
                    more = _more_after_line(f) if cut else bool(f.read(1))
                break
            lines.append(line)
            used += len(line)
        else:
            more = bool(f.read(1))
    finally:
        f.detach()
    if not lines:
        if total == 0 and offset == 1:
            return "[The file is empty.]"
        return f"[Nothing to read at line {offset}: {path} has only {of_total} lines.]"
    last = offset + len(lines) - 1
    if line_numbers:
        lines = [f"{n:>6}\t{line}" for n, line in enumerate(lines, offset)]
    body = "".join(lines)
    body += "" if body.endswith("\n") else "\n"
    cut_note = f" (line {last} is longer than {max_chars} characters: only its beginning is shown)" if cut else ""
    if more:
        return body + f"\n[Lines {offset}-{last} of {of_total} in {path}{cut_note}. " \
            f"Call read_file with offset={last + 1} to read more.]"
    return body + f"\n[Lines {offset}-{last} of {of_total} in {path}{cut_note}; the end of the file.]"


def _more_after_line(f: io.TextIOWrapper) -> bool:
    """After a cut line: skip the rest of it and say whether another line follows."""
    while True:
        chunk = f.readline(_SKIP_CHUNK_CHARS)
        if not chunk:
            return False
        if chunk.endswith("\n"):
            return bool(f.read(1))


# -- write_file -----------------------------------------------------------------
class WriteFileArgs(BaseModel):
    """Arguments of write_file."""

    path: str = Field(description="File path relative to the workspace; missing parent folders are created.")
    content: str = Field(description="The complete text content to write (replaces any existing file).")


@tool("write_file", args_schema=WriteFileArgs)
# LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
def write_file(path: str, content: str, *, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
    """Write a text file in the workspace, creating or replacing it (UTF-8)."""
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"Could not write {path!r}: the content is not valid text ({exc.reason}).") from None
    limit = max_write_bytes_of(runtime)
    if len(data) > limit:  # refused before anything is created or opened
        raise ToolError(
            f"Refused: the content is {len(data)} bytes, more than this run's max_write_bytes ({limit}); nothing was "
            "written."
        )
    write_regular(workspace_of(runtime), path, data)
    return f"Wrote {len(content)} characters to {path}"


# -- list_files -----------------------------------------------------------------
class ListFilesArgs(BaseModel):
    """Arguments of list_files."""

    path: str = Field(default=".", description="Folder relative to the workspace; '.' is the workspace itself.")


@tool("list_files", args_schema=ListFilesArgs)
# LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
def list_files(path: str = ".", *, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
    """List the files and folders in a workspace folder (not recursive).

    One entry per line, sorted by name; folders end with '/'. Protected folders
    (.git, smart-agent's data and plugins folders) are not shown.
    """
    fd, guard = open_dir(workspace_of(runtime), path)
    entries = []
    try:
        for name in os.listdir(fd):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                st = None
            if guard.hides(name, st):
                continue
            if st is not None and stat.S_ISDIR(st.st_mode):
                entries.append(f"{name}/")
            elif st is not None and stat.S_ISLNK(st.st_mode):
                entries.append(f"{name} (symbolic link; not followed)")
            else:
                entries.append(name)
    except OSError as exc:
        raise _os_error("list", path, exc) from None
    finally:
        os.close(fd)
    entries.sort()
    if not entries:
        return "[The folder is empty.]"
    shown = entries[:MAX_LIST_ENTRIES]
    if len(entries) > MAX_LIST_ENTRIES:
        shown.append(f"[... and {len(entries) - MAX_LIST_ENTRIES} more entries not shown.]")
    return "\n".join(shown)
