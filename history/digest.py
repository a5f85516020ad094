"""The deterministic digest of compacted history, and the summary message itself.

A digest is one line per step (no model call). It is *lossless* when every step
can be recovered: tool outputs that are archived (``get_tool_response`` reads them
again) or short, and short texts. The summary message carries a header naming the
archived execution ids it covers, so they stay reachable after any number of
compactions.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ..models.messages import message_text as text_of
from ..models.messages import pending_tool_calls
from ..models.prompt_cache import mark_breakpoint
from ..sessions.archive import clip_text
from ..tools.context_tools import GET_TOOL_RESPONSE
from .markers import SUMMARY_KIND, archived_meta, is_summary, mark_of, marker

DIGEST_ITEM_CHARS = 300  # a text this short goes into a digest verbatim
SUMMARY_HEADER = "[Context summary"


def args_text(args: Any, n: int = 80) -> str:
    """A tool call's arguments on one line, each value clipped to ``n`` characters."""
    if not isinstance(args, dict):
        return clip_text(str(args), n, "cut")
    parts = []
    for k, v in args.items():
        if isinstance(v, str):
            parts.append(f"{k}={json.dumps(clip_text(v, n, 'cut'), ensure_ascii=False)}")
        else:
            parts.append(f"{k}={clip_text(json.dumps(v, ensure_ascii=False, default=str), n, 'cut')}")
    return ", ".join(parts)


def covered_ids(messages: Sequence[BaseMessage]) -> list[str]:
    """Execution ids of the archived texts the messages hold or (summaries) cover."""
    ids: list[str] = []
    for m in messages:
        if is_summary(m):
            ids.extend(mark_of(m).get("execution_ids") or [])
        elif isinstance(m, (ToolMessage, HumanMessage)):
            eid = archived_meta(m).get("execution_id")
            if eid:
                ids.append(eid)
    return list(dict.fromkeys(ids))


def summary_body(message: BaseMessage) -> str:
    """A summary message's text without its header line."""
    text = text_of(message)
    return text.split("\n", 1)[1] if text.startswith(SUMMARY_HEADER) and "\n" in text else text


def digest(messages: Sequence[BaseMessage]) -> tuple[list[str], bool]:
    """One line per step of the compacted history, and whether nothing was lost."""
    lines: list[str] = []
    lossless = True

    def short(text: str) -> str:
        nonlocal lossless
        text = " ".join(text.split())
        if len(text) > DIGEST_ITEM_CHARS:
            lossless = False
            return clip_text(text, DIGEST_ITEM_CHARS, "cut")
        return text

    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    for m in messages:
        if is_summary(m):
            body = summary_body(m).strip()
            if body:
                lines.extend(body.splitlines())
        elif isinstance(m, HumanMessage):
            archived = archived_meta(m)
            lines.append(
                f"- user (archived as {archived['execution_id']})" if archived else f"- user: {short(text_of(m))}"
            )
        elif isinstance(m, AIMessage):
            said = text_of(m).strip()
            if said:
                lines.append(f"- assistant: {short(said)}")
            for call in pending_tool_calls(m):
                lines.append(_call_line(call, results.get(call.get("id") or ""), short))
        elif not isinstance(m, ToolMessage):  # a tool result is shown with its call
            lines.append(f"- {m.type}: {short(text_of(m))}")
    return _merge_page_lines(lines), lossless


def _call_line(call: Mapping[str, Any], res: ToolMessage | None, short: Any) -> str:
    name = call.get("name") or "?"
    head = f"- {name}({args_text(call.get('args'))})"
    if res is None:
        return f"{head} → (no result)"
    archived = archived_meta(res)
    status = " error:" if res.status == "error" else ""
    if archived:
        return f"{head} →{status} archived as {archived['execution_id']} ({archived.get('chars', '?')} chars)"
    if name == GET_TOOL_RESPONSE and res.status != "error":
        args = call.get("args") or {}
        start = int(args.get("offset") or 0)
        end = start + len(text_of(res).split("\n\n[Page: ", 1)[0])
        return _PAGE_LINE.format(start=start, end=end, eid=args.get("execution_id"))
    return f"{head} →{status} {short(text_of(res))}"


_PAGE_LINE = "- get_tool_response: read characters {start}-{end} of {eid} (can be read again)"
_PAGE_RE = re.compile(r"^- get_tool_response: read characters (\d+)-(\d+) of (\S+) \(can be read again\)$")


def _merge_page_lines(lines: list[str]) -> list[str]:
    """Consecutive pages of one archived output become one line."""
    out: list[str] = []
    prev = None
    for line in lines:
        m = _PAGE_RE.match(line)
        if m and prev and out and prev.group(3) == m.group(3) and prev.group(2) == m.group(1):
            line = _PAGE_LINE.format(start=prev.group(1), end=m.group(2), eid=m.group(3))
            out[-1] = line
            prev = _PAGE_RE.match(line)
            continue
        out.append(line)
        prev = m
    return out


def fit_lines(lines: list[str], max_chars: int) -> str:
    """Keep the newest lines that fit; say how many older ones were dropped."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > max_chars:
            break
        kept.append(line)
        used += len(line) + 1
    dropped = len(lines) - len(kept)
    body = "\n".join(reversed(kept))
    if dropped:
        body = f"- ({dropped} older steps omitted; their archived outputs are listed above)\n" + body
    return body


def summary_message(
    body: str, compacted: Sequence[BaseMessage], archived: Mapping[str, Mapping[str, Any]], number: int
) -> HumanMessage:
    """The summary that replaces ``compacted``: a header (how many messages, which
    archived execution ids it covers) and ``body``."""
    ids = covered_ids(compacted)
    previous = sum(int(mark_of(m).get("compacted") or 0) for m in compacted if is_summary(m))
    total = previous + sum(1 for m in compacted if not is_summary(m))
    header = f"{SUMMARY_HEADER} #{number}: {total} earlier messages were compacted."
    if ids:
        named = []
        for eid in ids:
            meta = archived.get(eid) or {}
            what = f"{meta.get('tool')}({meta.get('args', '')})" if meta.get("tool") else ""
            named.append(f"{eid} {what}".strip())
        header += " Archived outputs they cover (read any in full with get_tool_response): " + "; ".join(named) + "."
    header += "]"
    return HumanMessage(
        content=f"{header}\n{body}".rstrip(),
        id=f"summary-{uuid.uuid4().hex[:12]}",
        # (the history up to a summary stays as it is until the next compaction: a cache breakpoint)
        additional_kwargs=mark_breakpoint(marker(SUMMARY_KIND, execution_ids=ids, compacted=total)),
    )
