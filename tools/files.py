"""File tools confined to the run's workspace (``Context.workspace``).

Every open goes through :mod:`smart_agent.tools.safe_fs`: component by component
from a handle on the workspace root, never following a symbolic link, only regular
files, never smart-agent's data or plugins folder nor a ``.git`` folder.
"""

from __future__ import annotations

import io
import os
import stat

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from .. import settings
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
        default=0, ge=0, description="Character offset to start reading at (for paging through long files)."
    )
    max_chars: int = Field(
        default=MAX_READ_CHARS, ge=1, le=MAX_READ_CHARS, description="Maximum number of characters to return."
    )


@tool("read_file", args_schema=ReadFileArgs)
def read_file(
    path: str,
    offset: int = 0,
    max_chars: int = MAX_READ_CHARS,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Read a text file from the workspace.

    Returns up to max_chars characters starting at offset. When the file is
    longer, a note at the end says which offset to use to read the next part.
    """
    offset = max(0, offset)
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
            f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            skipped = 0
            while skipped < offset:
                chunk = f.read(min(_SKIP_CHUNK_CHARS, offset - skipped))
                if not chunk:
                    break
                skipped += len(chunk)
            text = f.read(max_chars)
            more = bool(f.read(1))
            f.detach()
    except OSError as exc:
        raise _os_error("read", path, exc) from None
    if not text:
        if offset == 0:
            return "[The file is empty.]"
        return f"[Nothing to read at offset {offset}: the file has only {skipped} characters.]"
    if more:
        end = offset + len(text)
        text += (
            f"\n\n[Truncated: showed characters {offset}-{end} of {path}. "
            f"Call read_file with offset={end} to read more.]"
        )
    return text


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
