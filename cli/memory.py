"""``smart-agent memory list|search QUERY|forget ID|stats|export FILE|import FILE`` and the memory run flags.

Every command works on the store ``memory.service.open_memory_store`` opens, through
``memory/backend.py`` and ``memory/transfer.py``. Importing this module is cheap (argparse
only): the store, FAISS and the embedding model load inside the handlers, and only ``search``
and ``import`` embed anything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from ..runs.events import clip
from .backends import add_db_arg

EXIT_NOT_FOUND = 2  # an id that names no memory of the user is bad input (the CLI's rule, as threads)
EXIT_REFUSED = 2  # the memory file is not a smart-agent memory database
MAX_DAMAGE_LINES = 20  # damaged memories named one a line on stderr; the rest counted


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--user", default=None, help="user id whose memories to use (default: $SMART_AGENT_USER_ID or 'default')"
    )
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    add_db_arg(p)


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``memory`` with its sub-commands to the ``smart-agent`` parser."""
    p = subparsers.add_parser(
        "memory",
        help="inspect and edit long-term memory ($SMART_AGENT_HOME/memory)",
        description="Long-term memory of smart-agent: one namespace per user, stored in $SMART_AGENT_HOME/memory.",
    )
    sub = p.add_subparsers(dest="memory_command", required=True)

    q = sub.add_parser("list", help="list memories, newest first")
    _common(q)
    q.add_argument("--k", "--limit", dest="k", type=int, default=50, help="how many to show (default 50)")
    q.set_defaults(handler=_guarded(_list))

    q = sub.add_parser("search", help="semantic search (same ranking as recall)")
    q.add_argument("query", help="what to search for")
    _common(q)
    q.add_argument("--k", type=int, default=5, help="how many results (default 5)")
    q.add_argument("--embedding-model", default=None, help="'local' (default) or provider:model")
    q.set_defaults(handler=_guarded(_search))

    q = sub.add_parser("forget", help="delete one memory by id")
    q.add_argument("id", help="the memory's id (memory list shows it)")
    _common(q)
    q.set_defaults(handler=_guarded(_forget))

    q = sub.add_parser("stats", help="counts, sizes and settings")
    _common(q)
    q.set_defaults(handler=_guarded(_stats))

    q = sub.add_parser("export", help="write the user's memories to a JSON Lines file (no vectors)")
    q.add_argument("file", help="FILE.jsonl to write ('-': standard output)")
    _common(q)
    q.set_defaults(handler=_guarded(_export))

    q = sub.add_parser("import", help="add memories from a JSON Lines file (embeddings recomputed)")
    q.add_argument("file", help="FILE.jsonl written by 'memory export' ('-': standard input)")
    _common(q)
    q.add_argument("--embedding-model", default=None, help="'local' (default) or provider:model")
    q.set_defaults(handler=_guarded(_import))
    return p


# -- run/chat flags -----------------------------------------------------------------
# -- handlers -------------------------------------------------------------------------
def _guarded(handler: Any) -> Any:
    """A refused memory file ends the command with its one-line message and exit 2."""

    def run(args: argparse.Namespace) -> int:
        from ..memory.integrity import MemoryUnavailable

        try:
            return handler(args)
        except MemoryUnavailable as exc:
            print(f"smart-agent: {exc}", file=sys.stderr)
            return EXIT_REFUSED

    return run


def _user(args: argparse.Namespace) -> tuple[tuple[str, str], str]:
    from ..config import settings
    from ..memory.store import user_namespace

    user = args.user or settings.field_env("user_id")[1] or "default"
    return user_namespace(user), user


def _on_store(args: argparse.Namespace, work: Any, embedding_model: str | None = None) -> int:
    """Run ``await work(store, namespace, user)`` on the store the memory commands use."""
    from ..memory.service import open_memory_store

    ns, user = _user(args)

    async def main() -> int:
        async with open_memory_store(embedding_model) as store:
            take = getattr(store, "take_notices", None)
            for note in take() if callable(take) else []:  # the folder worked around or repaired
                print(f"smart-agent: warning: {note}", file=sys.stderr)
            return int(await work(store, ns, user))

    return asyncio.run(main())


def _skipped(store: Any, ns: tuple[str, ...], shown: set[str]) -> list[dict[str, Any]]:
    """The user's damaged memories the command left out (not in ``shown``), each named on one
    stderr line (integrity.py: one damaged row costs that row, never the command)."""
    found = store.damaged(ns) if callable(getattr(store, "damaged", None)) else []
    skipped = [{"id": d["key"], "reason": d["reason"]} for d in found if d["key"] not in shown]
    for d in skipped[:MAX_DAMAGE_LINES]:
        print(
            f"smart-agent: warning: skipped damaged memory {d['id']}: {d['reason']} "
            f"('smart-agent memory forget {d['id']}' deletes it)",
            file=sys.stderr,
        )
    if len(skipped) > MAX_DAMAGE_LINES:
        print(
            f"smart-agent: warning: skipped {len(skipped) - MAX_DAMAGE_LINES} more damaged memories "
            "('smart-agent memory stats --json' lists them)",
            file=sys.stderr,
        )
    return skipped


def _where(store: Any) -> str:
    return str(getattr(store, "path", None) or type(store).__name__)


def _row(item: Any, now: float) -> dict[str, Any]:
    from ..memory.ranking import memory_times
    from ..memory.store import humanize_age
    from ..memory.transfer import record_of

    rec = record_of(item)
    return {
        "id": item.key,
        "text": rec["text"],
        "importance": item.value.get("importance"),
        "merges": item.value.get("merges", 0),
        "kind": item.value.get("kind"),
        "age": humanize_age(now - memory_times(item)[1]),
        "created_at": rec["created_at"],
        "updated_at": rec["updated_at"],
    }


def _one_line(text: str, n: int = 100) -> str:
    return clip(" ".join(str(text).replace("\n", " | ").split()), n)


def _list(args: argparse.Namespace) -> int:
    from ..memory.backend import list_memories

    async def work(store: Any, ns: tuple[str, ...], user: str) -> int:
        items, total = await list_memories(store, ns)
        skipped = _skipped(store, ns, {i.key for i in items})
        now = time.time()
        rows = [_row(i, now) for i in items[: max(1, args.k)]]
        if args.json:
            print(json.dumps({"user": user, "total": total, "memories": rows, "damaged": skipped}, ensure_ascii=False))
            return 0
        if not rows:
            print(f"No memories for user {user!r} (in {_where(store)}).")
            return 0
        for r in rows:
            imp = r["importance"] if isinstance(r["importance"], (int, float)) else 0.5
            print(f"{r['id']}  {r['age']:>15}  imp {imp:.2f}  merges {r['merges']}  {_one_line(r['text'])}")
        print(f"({len(rows)} of {total} memories of user {user!r})", file=sys.stderr)
        return 0

    return _on_store(args, work)


def _search(args: argparse.Namespace) -> int:
    from ..memory.backend import recall

    async def work(store: Any, ns: tuple[str, ...], user: str) -> int:
        found = await recall(store, ns, args.query, max(1, args.k))
        skipped = _skipped(store, ns, {r.key for r in found})
        now = time.time()
        rows = [r.to_dict(now) for r in found]
        if args.json:
            print(
                json.dumps({"user": user, "query": args.query, "results": rows, "damaged": skipped}, ensure_ascii=False)
            )
            return 0
        if not rows:
            print(f"No memories of user {user!r} match.")
            return 0
        for r in rows:
            print(
                f"{r['key']}  score {r['score']:.3f}  sim {r['similarity']:.3f}  {r['age']:>15}  "
                f"{_one_line(r['text'])}"
            )
        return 0

    return _on_store(args, work, args.embedding_model)


def _forget(args: argparse.Namespace) -> int:
    from ..memory.backend import forget

    async def work(store: Any, ns: tuple[str, ...], user: str) -> int:
        ok = await forget(store, ns, args.id)
        if args.json:
            print(json.dumps({"user": user, "id": args.id, "deleted": ok}))
        elif ok:
            print(f"Forgot memory {args.id} of user {user!r}.")
        else:
            print(f"No memory {args.id!r} for user {user!r}.", file=sys.stderr)
        return 0 if ok else EXIT_NOT_FOUND

    return _on_store(args, work)


def _export(args: argparse.Namespace) -> int:
    from ..memory.transfer import export_records

    async def work(store: Any, ns: tuple[str, ...], user: str) -> int:
        records = await export_records(store, ns)
        _skipped(store, ns, {r["key"] for r in records})
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        if args.file == "-":
            sys.stdout.write(lines)
        else:
            try:
                with open(args.file, "w", encoding="utf-8") as f:
                    f.write(lines)
            except OSError as exc:
                print(f"smart-agent: cannot write {args.file}: {exc.strerror or exc}", file=sys.stderr)
                return EXIT_REFUSED
        summary = {"user": user, "file": args.file, "exported": len(records)}
        if args.json and args.file != "-":
            print(json.dumps(summary))
        else:
            print(f"Exported {len(records)} memories of user {user!r} to {args.file}.", file=sys.stderr)
        return 0

    return _on_store(args, work)


def _import(args: argparse.Namespace) -> int:
    from ..config.files import InputFileError, read_bytes_file, read_stream_bytes
    from ..memory.transfer import ImportLineError, import_records, parse_records

    name = "standard input" if args.file == "-" else args.file
    try:
        if args.file == "-":
            raw = read_stream_bytes(sys.stdin.buffer, what="memory import: standard input")
        else:
            raw = read_bytes_file(args.file, what="memory import: file")
        records = parse_records(raw.decode("utf-8").splitlines())
    except InputFileError as exc:
        print(f"smart-agent: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_REFUSED
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        print(f"smart-agent: {name}: line {line}: not UTF-8 text", file=sys.stderr)
        return EXIT_REFUSED
    except ImportLineError as exc:
        print(f"smart-agent: {name}: {exc}", file=sys.stderr)
        return EXIT_REFUSED

    async def work(store: Any, ns: tuple[str, ...], user: str) -> int:
        count = await import_records(store, ns, records)
        if args.json:
            print(json.dumps({"user": user, "file": args.file, "imported": count}))
        else:
            print(f"Imported {count} memories for user {user!r} into {_where(store)}.")
        return 0

    return _on_store(args, work, args.embedding_model)


def _stats(args: argparse.Namespace) -> int:
    async def work(store: Any, ns: tuple[str, ...], user: str) -> int:
        if not callable(getattr(store, "stats", None)):
            raise ValueError(f"memory stats: only for the FAISS store, not {_where(store)} (use memory list)")
        return _print_stats(args, await asyncio.to_thread(store.stats), store.count(ns), user)

    return _on_store(args, work)


def _print_stats(args: argparse.Namespace, stats: dict[str, Any], user_count: int, user: str) -> int:
    stats["user"] = user
    stats["user_items"] = user_count
    if args.json:
        print(json.dumps(stats, ensure_ascii=False))
        return 0
    print(f"folder:          {stats['path']}")
    print(f"embedding model: {stats['embedding_model']} (dim {stats['dim']})")
    print(
        f"memories:        {user_count} for user {user!r}, {stats['items']} in all ({len(stats['namespaces'])} "
        "namespaces)"
    )
    print(f"merges:          {sum(n['merges'] for n in stats['namespaces'])}")
    print(
        f"cap:             {stats['max_items_per_namespace']} per namespace; dedupe at cosine >= "
        f"{stats['dedupe_threshold']}"
    )
    r = stats["ranking"]
    print(
        f"ranking:         {r['w_similarity']}·similarity + {r['w_recency']}·recency (half-life {r['half_life_days']} "
        f"d) + {r['w_importance']}·importance"
    )
    print(
        f"disk:            {stats['db_bytes'] + stats['index_bytes']:,} bytes (SQLite {stats['db_bytes']:,}, FAISS "
        f"{stats['index_bytes']:,})"
    )
    damaged = stats["damaged"]
    shown = "; ".join(f"{d['key']}: {d['reason']}" for d in damaged[:5]) + (" …" if len(damaged) > 5 else "")
    print(f"damaged rows:    {len(damaged)} (skipped by recall and search)" + (f": {shown}" if damaged else ""))
    return 0
