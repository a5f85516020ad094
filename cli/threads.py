"""``smart-agent threads list|show ID|delete ID|export ID``: the sessions in the database.

Works on the checkpointer ``sessions.open_backends`` opens (``--db`` / ``$SMART_AGENT_DB``:
a SQLite file or Postgres). A thread's summary comes from its latest top-level checkpoint:
the graph its last CLI run recorded (``review.run_metadata``), the time of that checkpoint,
its first user line and its message count. ``delete`` removes every checkpoint of the
thread (``delete_thread``) while holding the thread's run lock, so a run on it finishes
first; the tool-output archive is content-addressed and shared by all threads (an id means
the same text everywhere), so it holds nothing of one thread alone to drop.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from ..runs.events import clip
from .backends import add_db_arg
from .budget import usage_line, with_total_tokens

EXIT_NOT_FOUND = 2  # an id that names no thread is bad input (the CLI's rule; resume says the same)


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``threads`` with its sub-commands to the ``smart-agent`` parser."""
    p = subparsers.add_parser(
        "threads",
        help="list, show, export or delete sessions (threads)",
        description="The sessions of the sessions database (--db, $SMART_AGENT_DB, else $SMART_AGENT_HOME).",
    )
    sub = p.add_subparsers(dest="threads_command", required=True)

    q = sub.add_parser("list", help="every thread: id, graph, last activity, first user line, messages")
    q.add_argument("--json", action="store_true", help="print one JSON list on stdout")
    add_db_arg(q)
    q.set_defaults(handler=list_command)

    q = sub.add_parser("show", help="a thread's conversation, readable")
    q.add_argument("thread_id", metavar="ID", help="the thread's id")
    add_db_arg(q)
    q.set_defaults(handler=show_command)

    q = sub.add_parser("export", help="a thread as one JSON object (messages, graph, state)")
    q.add_argument("thread_id", metavar="ID", help="the thread's id")
    add_db_arg(q)
    q.set_defaults(handler=export_command)

    q = sub.add_parser("delete", help="delete a thread's history (the next run on that id starts afresh)")
    q.add_argument("thread_id", metavar="ID", help="the thread's id")
    add_db_arg(q)
    q.set_defaults(handler=delete_command)
    return p


# -- reading the checkpointer ---------------------------------------------------------------
@asynccontextmanager
async def _saver() -> AsyncIterator[Any]:
    from ..sessions.store import open_backends

    async with open_backends() as backends:
        yield backends.checkpointer


async def thread_ids(saver: Any) -> list[str]:
    """The ids of every thread in ``saver`` (one SQL query on SQLite and Postgres; other
    savers: their checkpoint listing)."""
    query = "SELECT DISTINCT thread_id FROM checkpoints"
    conn = getattr(saver, "conn", None)
    module = type(saver).__module__
    if module.startswith("langgraph.checkpoint.sqlite"):
        await saver.setup()
        async with conn.execute(query) as cur:  # type: ignore[union-attr]
            return sorted(str(row[0]) for row in await cur.fetchall())
    if module.startswith("langgraph.checkpoint.postgres"):
        if hasattr(conn, "connection"):  # a pool
            async with conn.connection() as c:  # type: ignore[union-attr]
                rows = await (await c.execute(query)).fetchall()
        else:
            rows = await (await conn.execute(query)).fetchall()  # type: ignore[union-attr]
        return sorted(str(r["thread_id"] if isinstance(r, Mapping) else r[0]) for r in rows)
    seen: dict[str, None] = {}
    async for tup in saver.alist(None):
        seen.setdefault(str(tup.config["configurable"]["thread_id"]), None)
    return sorted(seen)


async def latest(saver: Any, thread_id: str) -> Any:
    """The thread's latest top-level checkpoint tuple, or None when there is no such thread."""
    return await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})


def _messages(values: Mapping[str, Any]) -> list[Any]:
    return list(values.get("messages") or [])


def first_user_line(values: Mapping[str, Any]) -> str:
    """The first line of the thread's first user message (or of its task)."""
    from langchain_core.messages import HumanMessage

    from ..models.messages import message_text

    text = next((message_text(m) for m in _messages(values) if isinstance(m, HumanMessage)), "")
    text = (text or str(values.get("task") or "")).strip()
    return text.splitlines()[0] if text else ""


def summary(thread_id: str, tup: Any) -> dict[str, Any]:
    """``threads list``'s row of one thread."""
    from ..models.usage import thread_total
    from .review import recorded_run

    values = tup.checkpoint.get("channel_values") or {}
    graph, _flags = recorded_run(tup.metadata)
    return {
        "thread_id": thread_id,
        "graph": graph,
        "updated_at": tup.checkpoint.get("ts"),
        "first_user_line": first_user_line(values),
        "messages": len(_messages(values)),
        "usage": with_total_tokens(thread_total(values)),  # every run of the thread
    }


def message_record(message: Any) -> dict[str, Any]:
    """One message as plain JSON: role, text, and its tool calls or tool-call id."""
    from ..models.messages import message_text

    role = {"human": "user", "ai": "assistant"}.get(getattr(message, "type", ""), getattr(message, "type", "?"))
    out: dict[str, Any] = {"role": role, "content": message_text(message)}
    for key in ("name", "tool_call_id"):
        if getattr(message, key, None):
            out[key] = getattr(message, key)
    calls = getattr(message, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"id": c.get("id"), "name": c.get("name"), "args": c.get("args")} for c in calls]
    return out


def thread_export(thread_id: str, tup: Any) -> dict[str, Any]:
    """``threads export``: the summary, the messages and the other values of the latest state,
    with every credential redacted (redact.py: a URL's password in a tool call's arguments or an
    error, a key parameter, a credential-named field, the environment's key values)."""
    values = tup.checkpoint.get("channel_values") or {}
    others = {
        k: v for k, v in values.items()
        if k != "messages" and not k.startswith(("__", "branch:")) and _jsonable(v)
    }  # fmt: skip
    return _redacted({
        **summary(thread_id, tup),
        "checkpoint_id": tup.config["configurable"].get("checkpoint_id"),
        "conversation": [message_record(m) for m in _messages(values)],
        "values": others,
    })


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def conversation_lines(values: Mapping[str, Any]) -> list[str]:
    """The conversation as ``user:`` / ``assistant:`` lines, tool calls as ``→ name(args)``
    and their results as ``← name: text`` (clipped), credentials redacted (redact.py)."""
    lines: list[str] = []
    for record in (_redacted(message_record(m)) for m in _messages(values)):  # before anything is clipped
        role, text = record["role"], record["content"].strip()
        if role == "tool":
            lines.append(f"  ← {record.get('name') or 'tool'}: {clip(' '.join(text.split()), 160)}")
            continue
        if text:
            head, *rest = text.splitlines()
            lines.append(f"{role}: {head}")
            lines.extend(f"  {line}" for line in rest)
        for call in record.get("tool_calls") or []:
            args = json.dumps(call.get("args"), ensure_ascii=False, default=str)
            lines.append(f"  → {call.get('name')}({clip(args, 160)})")
    if not lines and values.get("task"):  # a graph that keeps no messages (e.g. `execute`)
        lines.append(f"user: {values['task']}")
    if values.get("answer") and not any(line.startswith("assistant:") for line in lines):
        lines.append(f"assistant: {values['answer']}")
    return _redacted(lines)


# -- commands ---------------------------------------------------------------------------------
def _not_found(thread_id: str) -> int:
    print(f"smart-agent: no thread {thread_id!r} in the sessions database (see `smart-agent threads list`)",
          file=sys.stderr)
    return EXIT_NOT_FOUND


async def list_command(args: argparse.Namespace) -> int:
    async with _saver() as saver:
        rows = []
        for tid in await thread_ids(saver):
            tup = await latest(saver, tid)
            if tup is not None:
                rows.append(summary(tid, tup))
    rows.sort(key=lambda r: str(r["updated_at"] or ""), reverse=True)
    rows = _redacted(rows)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    if not rows:
        print("no threads yet (runs with --thread ID, and chat, keep theirs here)")
        return 0
    print("\n".join(table_lines(rows)))
    return 0


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """``threads list`` as a table: a header, then one row per thread, columns aligned."""
    cells = [["thread", "graph", "last activity", "messages", "first user line"]] + [
        [str(r["thread_id"]), r["graph"] or "-", str(r["updated_at"] or "")[:19].replace("T", " "),
         str(r["messages"]), clip(r["first_user_line"] or "", 60)]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(4)]
    padded = [[c.rjust(w) if i == 3 else c.ljust(w) for i, (c, w) in enumerate(zip(row[:4], widths, strict=True))]
              for row in cells]
    return ["  ".join([*cols, row[4]]).rstrip() for cols, row in zip(padded, cells, strict=True)]


async def show_command(args: argparse.Namespace) -> int:
    async with _saver() as saver:
        tup = await latest(saver, args.thread_id)
    if tup is None:
        return _not_found(args.thread_id)
    row = summary(args.thread_id, tup)
    print(f"thread {row['thread_id']} · graph {row['graph'] or '?'} · {row['messages']} messages · {row['updated_at']}")
    print(f"used by its runs: {usage_line(row['usage'])}")
    for line in conversation_lines(tup.checkpoint.get("channel_values") or {}):
        print(line)
    return 0


async def export_command(args: argparse.Namespace) -> int:
    async with _saver() as saver:
        tup = await latest(saver, args.thread_id)
    if tup is None:
        return _not_found(args.thread_id)
    print(json.dumps(thread_export(args.thread_id, tup), ensure_ascii=False, default=str))
    return 0


def _redacted(value: Any) -> Any:
    from ..runs.redact import redact_value

    return redact_value(value)


async def delete_command(args: argparse.Namespace) -> int:
    from ..sessions.thread_lock import thread_lock

    async with _saver() as saver:
        if await latest(saver, args.thread_id) is None:
            return _not_found(args.thread_id)
        async with thread_lock(args.thread_id):  # a run on the thread finishes first
            await saver.adelete_thread(args.thread_id)
    print(f"deleted thread {args.thread_id}")
    return 0
