"""The reversible tool-output archive.

A tool output longer than the archive threshold enters the conversation as a
short *view* (head, tail, size) plus an execution id; the full text is kept
outside the message list, so it is written once instead of riding in every
checkpoint:

* in ``runtime.store`` (namespace ``("smart_agent", "archive")``) when the graph
  has a store (e.g. under ``langgraph dev``, or a Postgres ``SMART_AGENT_DB``); a store that
  cannot take it raises :class:`ArchiveUnavailable`, never a file written instead (another
  process or replica sharing the store could not read it back);
* otherwise in a content-addressed file store: ``$SMART_AGENT_HOME/archive/ab/<id>.txt``.

Execution ids are content addresses (``ex_`` + 16 hex digits of the SHA-256 of the
text), so the same output archived twice is stored once, and an id means the same
text in every thread. ``get_tool_response`` (tools/context_tools.py) reads it back.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from pathlib import Path
from typing import Any

STORE_NAMESPACE = ("smart_agent", "archive")
ID_PREFIX = "ex_"
ID_PATTERN = re.compile(r"^ex_[0-9a-f]{16}$")
VIEW_HEAD_CHARS = 600
VIEW_TAIL_CHARS = 300

# Marker on a ToolMessage whose content is an archive view.
ARCHIVE_KEY = "smart_agent_archive"


def archive_dir() -> Path:
    from .store import data_home

    return data_home() / "archive"


def execution_id(text: str) -> str:
    return ID_PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _path(eid: str, root: Path | None = None) -> Path:
    return (root or archive_dir()) / eid[3:5] / f"{eid}.txt"


class ArchiveUnavailable(RuntimeError):
    """The run's store could not keep an output (one line; nothing was written elsewhere)."""


class ToolArchive:
    """Put and get archived outputs (``runtime.store`` when given, else files)."""

    def __init__(self, store: Any = None, root: str | Path | None = None) -> None:
        self.store = store
        self.root = Path(root) if root is not None else None

    async def put(self, text: str, meta: dict[str, Any] | None = None) -> str:
        eid = execution_id(text)
        if self.store is not None:
            try:
                await self.store.aput(STORE_NAMESPACE, eid, {"text": text, **(meta or {})}, index=False)
            except Exception as exc:  # no local file instead: every process sharing the store must find it
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())
                raise ArchiveUnavailable(f"the store could not keep the tool output ({reason})") from exc
            return eid
        await asyncio.to_thread(self._write_file, eid, text)
        return eid

    def _write_file(self, eid: str, text: str) -> None:
        path = _path(eid, self.root)
        if path.exists():
            return  # content-addressed: already there
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8", errors="surrogatepass", newline="")
        os.replace(tmp, path)

    async def get(self, eid: str) -> str | None:
        if not ID_PATTERN.match(eid or ""):
            return None
        if self.store is not None:
            try:
                item = await self.store.aget(STORE_NAMESPACE, eid)
            except Exception:
                item = None
            if item is not None:
                return item.value.get("text")
        return await asyncio.to_thread(self._read_file, eid)

    def _read_file(self, eid: str) -> str | None:
        path = _path(eid, self.root)
        if not path.exists():
            return None
        return path.read_text(encoding="utf-8", errors="surrogatepass")


def view_chars(page: int) -> tuple[int, int]:
    """The head and tail characters the view of an output shows under a budget whose tool
    messages carry at most ``page`` characters (``tokens.page_chars``): ``VIEW_HEAD_CHARS`` and
    ``VIEW_TAIL_CHARS``, less under a small budget (a 24th and a 48th of a page: 333 and 166 at
    8000 tokens). A view stays in every request until the next compaction, so under a small
    budget its size is most of what each turn adds to the request (docs/cost.md)."""
    return min(VIEW_HEAD_CHARS, max(100, page // 24)), min(VIEW_TAIL_CHARS, max(50, page // 48))


def make_view(
    text: str, eid: str, tool: str, page: int, head: int = VIEW_HEAD_CHARS, tail: int = VIEW_TAIL_CHARS
) -> str:
    """The short view of an archived output that goes into the conversation."""
    lines = text.count("\n") + 1
    omitted = max(0, len(text) - head - tail)
    header = (
        f"[Large output archived · execution_id: {eid} · tool: {tool} · {len(text)} chars, {lines} lines. "
        f"Showing the first {min(head, len(text))} and last {min(tail, max(0, len(text) - head))} characters. "
        f'Read it all with get_tool_response(execution_id="{eid}", offset=0) — pages of up to {page} chars.]'
    )
    if omitted <= 0:
        return f"{header}\n{text}"
    return f"{header}\n{text[:head]}\n[… {omitted} characters omitted …]\n{text[len(text) - tail:]}"


def clip_text(text: str, max_chars: int, note: str = "cut to fit the context budget") -> str:
    """Deterministic head + tail clipping with a note saying how much was cut."""
    if len(text) <= max_chars:
        return text
    marker = f"\n[… {{n}} characters {note} …]\n"
    room = max(0, max_chars - len(marker.format(n=len(text))))
    head = room * 2 // 3
    tail = room - head
    cut = len(text) - head - tail
    return text[:head] + marker.format(n=cut) + (text[len(text) - tail:] if tail else "")
