"""File tools confined to the run's workspace (``Context.workspace``)."""

from __future__ import annotations

from pathlib import Path

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from smart_agent.tools.guards import ToolError, resolve_in_workspace, workspace_of

__all__ = [
    "ListFilesArgs",
    "ReadFileArgs",
    "WriteFileArgs",
    "list_files",
    "read_file",
    "write_file",
]

MAX_READ_CHARS = 200_000
MAX_LIST_ENTRIES = 500
_BINARY_SNIFF_BYTES = 8192
_SKIP_CHUNK_CHARS = 1 << 20


def _os_error(action: str, path: str, exc: OSError) -> ToolError:
    return ToolError(f"Could not {action} {path!r}: {exc.strerror or exc}.")


def _existing(runtime: ToolRuntime | None, path: str) -> Path:
    target = resolve_in_workspace(workspace_of(runtime), path)
    if not target.exists():
        raise ToolError(f"Not found: {path!r} does not exist in the workspace (use list_files to see what does).")
    return target


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
    runtime: ToolRuntime = None,  # type: ignore[assignment]  # injected; None outside a graph
) -> str:
    """Read a text file from the workspace.

    Returns up to max_chars characters starting at offset. When the file is
    longer, a note at the end says which offset to use to read the next part.
    """
    offset = max(0, offset)
    max_chars = max(1, min(max_chars, MAX_READ_CHARS))
    target = _existing(runtime, path)
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory, not a file; use list_files to see its contents.")
    try:
        with target.open("rb") as raw:
            if b"\x00" in raw.read(_BINARY_SNIFF_BYTES):
                raise ToolError(f"{path!r} looks like a binary file; read_file only reads text files.")
        with target.open("r", encoding="utf-8", errors="replace", newline="") as f:
            skipped = 0
            while skipped < offset:
                chunk = f.read(min(_SKIP_CHUNK_CHARS, offset - skipped))
                if not chunk:
                    break
                skipped += len(chunk)
            text = f.read(max_chars)
            more = bool(f.read(1))
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
def write_file(path: str, content: str, *, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
    """Write a text file in the workspace, creating or replacing it (UTF-8)."""
    target = resolve_in_workspace(workspace_of(runtime), path)
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; give a file path.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8", newline="")
    except OSError as exc:
        raise _os_error("write", path, exc) from None
    return f"Wrote {len(content)} characters to {path}"


# -- list_files -----------------------------------------------------------------
class ListFilesArgs(BaseModel):
    """Arguments of list_files."""

    path: str = Field(default=".", description="Folder relative to the workspace; '.' is the workspace itself.")


@tool("list_files", args_schema=ListFilesArgs)
def list_files(path: str = ".", *, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
    """List the files and folders in a workspace folder (not recursive).

    One entry per line, sorted by name; folders end with '/'.
    """
    target = _existing(runtime, path)
    if not target.is_dir():
        raise ToolError(f"{path!r} is a file, not a folder; use read_file to read it.")
    try:
        entries = sorted(f"{child.name}/" if child.is_dir() else child.name for child in target.iterdir())
    except OSError as exc:
        raise _os_error("list", path, exc) from None
    if not entries:
        return "[The folder is empty.]"
    shown = entries[:MAX_LIST_ENTRIES]
    if len(entries) > MAX_LIST_ENTRIES:
        shown.append(f"[... and {len(entries) - MAX_LIST_ENTRIES} more entries not shown.]")
    return "\n".join(shown)
