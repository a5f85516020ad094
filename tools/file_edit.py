"""``edit_file``: replace an exact piece of text in a workspace file.

The old text must occur exactly once (or ``replace_all``); otherwise the file is left
alone and the error says why, with a hint when the text is close to something in the
file. The write goes through :func:`smart_agent.tools.safe_fs.replace_regular`: the
same refusals as ``write_file`` (links, protected folders, hard links, non-regular
files, ``max_write_bytes``), and the file is replaced atomically.
"""

from __future__ import annotations

import difflib

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from .files import max_write_bytes_of
from .guards import ToolError, workspace_of
from .safe_fs import replace_regular

__all__ = ["EditFileArgs", "edit_file", "not_found_hint"]

_HINT_MAX_LINES = 20_000
_HINT_SHOWN_CHARS = 120


class EditFileArgs(BaseModel):
    """Arguments of edit_file."""

    path: str = Field(description="File path relative to the workspace; the file must exist.")
    old: str = Field(
        description="The exact text to replace, including whitespace and indentation; it must occur exactly once "
        "unless replace_all (give surrounding lines to make it unique)."
    )
    new: str = Field(description="The text to put in its place (may be empty to delete the old text).")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old instead of exactly one.")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _lines(text: str) -> int:
    """How many lines a piece of text touches (a final newline ends its last line)."""
    return text.count("\n") + (0 if text.endswith("\n") else 1) if text else 0


def not_found_hint(text: str, old: str) -> str:
    """Why ``old`` may not have matched: line endings, surrounding whitespace, or the closest line."""
    if "\r\n" in text and "\r" not in old and old.replace("\n", "\r\n") in text:
        return "the file has Windows line endings (\\r\\n): include them in old"
    stripped = old.strip()
    if stripped and stripped != old and stripped in text:
        return f"it occurs at line {_line_of(text, text.index(stripped))} without the leading/trailing whitespace"
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    lines = text.splitlines()
    if not first or len(lines) > _HINT_MAX_LINES:
        return "read the file again and copy the text exactly"
    candidates = {line.strip(): i for i, line in reversed(list(enumerate(lines, 1))) if line.strip()}
    close = difflib.get_close_matches(first, list(candidates), n=1, cutoff=0.6)
    if not close:
        return "read the file again and copy the text exactly"
    shown = close[0] if len(close[0]) <= _HINT_SHOWN_CHARS else close[0][:_HINT_SHOWN_CHARS] + "…"
    return f"the closest line is {candidates[close[0]]}: {shown!r}"


@tool("edit_file", args_schema=EditFileArgs)
def edit_file(
    path: str,
    old: str,
    new: str,
    replace_all: bool = False,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Edit a text file in the workspace: replace an exact piece of text (old) with new.

    old must occur exactly once in the file (or set replace_all); otherwise nothing is
    changed and the error says how many times it was found. Read the file first and
    copy old exactly, with its indentation.
    """
    if not old:
        raise ToolError("old is empty: give the exact text to replace (use write_file to create a file).")
    if old == new:
        raise ToolError("old and new are the same text; nothing to change.")
    done: dict[str, int] = {}

    def edit(data: bytes) -> bytes:
        if b"\x00" in data:
            raise ToolError(f"{path!r} looks like a binary file; edit_file only edits text files.")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text; edit_file only edits UTF-8 text files.") from None
        count = text.count(old)
        if count == 0:
            raise ToolError(f"old text not found in {path!r}; nothing changed ({not_found_hint(text, old)}).")
        if count > 1 and not replace_all:
            raise ToolError(
                f"old text occurs {count} times in {path!r}; nothing changed. Give more context (surrounding "
                "lines) so it occurs once, or set replace_all to replace every occurrence."
            )
        done.update(count=count, line=_line_of(text, text.index(old)))
        result = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        return result.encode("utf-8")

    try:
        new.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"Could not edit {path!r}: new is not valid text ({exc.reason}).") from None
    replace_regular(workspace_of(runtime), path, edit, max_bytes=max_write_bytes_of(runtime))
    count, line = done["count"], done["line"]
    if count == 1:
        before, after = _lines(old), _lines(new)
        return f"Replaced 1 occurrence in {path} at line {line} ({before} line(s) replaced by {after})."
    return f"Replaced {count} occurrences in {path} (the first at line {line})."
