"""``smart-agent memory list|search QUERY|forget ID|stats`` and the memory run flags.

Importing this module is cheap (argparse only): the store, FAISS and the
embedding model load inside the handlers, and only ``search`` embeds anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from ..events import clip

EXIT_NOT_FOUND = 1
EXIT_REFUSED = 2  # the memory file is not a smart-agent memory database


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--user", default=None, help="user id whose memories to use (default: $SMART_AGENT_USER_ID or 'default')"
    )
    p.add_argument("--json", action="store_true", help="print JSON on stdout")


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
    q.add_argument("query")
    _common(q)
    q.add_argument("--k", type=int, default=5, help="how many results (default 5)")
    q.add_argument("--embedding-model", default=None, help="'local' (default) or provider:model")
    q.set_defaults(handler=_guarded(_search))

    q = sub.add_parser("forget", help="delete one memory by id")
    q.add_argument("id")
    _common(q)
    q.set_defaults(handler=_guarded(_forget))

    q = sub.add_parser("stats", help="counts, sizes and settings")
    _common(q)
    q.set_defaults(handler=_guarded(_stats))
    return p


# -- run/chat flags -----------------------------------------------------------------
def add_memory_context_args(p: argparse.ArgumentParser) -> None:
    """Flags for ``run``/``chat`` that map onto the memory context fields."""
    p.add_argument("--user", dest="user_id", default=None, help="user id for long-term memory (default 'default')")
    p.add_argument(
        "--no-memory", dest="memory", action="store_false", default=None, help="do not recall or write long-term memory"
    )
    p.add_argument("--memory-k", type=int, default=None, help="memories recalled into the prompt (default 5)")
    p.add_argument(
        "--embedding-model", default=None, help="memory embeddings: 'local' (default, offline) or provider:model"
    )


def memory_context_values(args: argparse.Namespace, values: dict) -> None:
    for name in ("memory", "memory_k", "user_id", "embedding_model"):
        v = getattr(args, name, None)
        if v is not None:
            values[name] = v


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


def _open(args: argparse.Namespace, embedding_model: str | None = None):
    from .. import settings
    from ..memory.store import FaissMemoryStore, user_namespace

    user = args.user or settings.field_env("user_id")[1] or "default"
    spec = embedding_model or settings.field_env("embedding_model")[1] or "local"
    return FaissMemoryStore(embeddings=spec), user_namespace(user), user


def _row(item: Any, now: float) -> dict[str, Any]:
    from ..memory.store import humanize_age

    v = item.value
    return {
        "id": item.key,
        "text": v.get("text") if isinstance(v.get("text"), str) else json.dumps(v, ensure_ascii=False),
        "importance": v.get("importance"),
        "merges": v.get("merges", 0),
        "kind": v.get("kind"),
        "age": humanize_age(now - item.updated_at.timestamp()),
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }


def _one_line(text: str, n: int = 100) -> str:
    return clip(" ".join(str(text).replace("\n", " | ").split()), n)


def _list(args: argparse.Namespace) -> int:
    store, ns, user = _open(args)
    with store:
        items = store.search(ns, limit=max(1, args.k))
        total = store.count(ns)
    now = time.time()
    rows = [_row(i, now) for i in items]
    if args.json:
        print(json.dumps({"user": user, "total": total, "memories": rows}, ensure_ascii=False))
        return 0
    if not rows:
        print(f"No memories for user {user!r} (in {store.path}).")
        return 0
    for r in rows:
        imp = r["importance"] if isinstance(r["importance"], (int, float)) else 0.5
        print(f"{r['id']}  {r['age']:>15}  imp {imp:.2f}  merges {r['merges']}  {_one_line(r['text'])}")
    print(f"({len(rows)} of {total} memories of user {user!r})", file=sys.stderr)
    return 0


def _search(args: argparse.Namespace) -> int:
    store, ns, user = _open(args, args.embedding_model)
    with store:
        found = store.recall(ns, args.query, max(1, args.k))
    now = time.time()
    rows = [r.to_dict(now) for r in found]
    if args.json:
        print(json.dumps({"user": user, "query": args.query, "results": rows}, ensure_ascii=False))
        return 0
    if not rows:
        print(f"No memories of user {user!r} match.")
        return 0
    for r in rows:
        print(f"{r['key']}  score {r['score']:.3f}  sim {r['similarity']:.3f}  {r['age']:>15}  {_one_line(r['text'])}")
    return 0


def _forget(args: argparse.Namespace) -> int:
    store, ns, user = _open(args)
    with store:
        ok = store.forget(ns, args.id)
    if args.json:
        print(json.dumps({"user": user, "id": args.id, "deleted": ok}))
    elif ok:
        print(f"Forgot memory {args.id} of user {user!r}.")
    else:
        print(f"No memory {args.id!r} for user {user!r}.", file=sys.stderr)
    return 0 if ok else EXIT_NOT_FOUND


def _stats(args: argparse.Namespace) -> int:
    store, ns, user = _open(args)
    with store:
        stats = store.stats()
        user_count = store.count(ns)
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
