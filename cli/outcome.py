"""A run's outcome as the CLI reports it (``run``, ``chat``, ``resume``): the ``--json``
object, the answer and summary lines, and the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .budget import usage_report
from .render import RunSummary

EXIT_USAGE = 2
EXIT_FAILURE = 1


def result_json(final: dict, thread_id: str, summary: RunSummary) -> dict:
    out = {
        "answer": final.get("answer", ""),
        "thread_id": thread_id,
        "tool_calls": summary.tool_calls,
        "tool_calls_made": final.get(
            "tool_calls_made", len([t for t in summary.tool_calls if t.get("ok") is not None])
        ),
        "usage": usage_report(final, summary.usage),
    }
    for key in ("structured_response", "todos", "status", "error"):
        if final.get(key) is not None:
            out[key] = final[key]
    return out



def print_json(obj: dict[str, Any]) -> None:
    """One JSON object on stdout (``--json``)."""
    print(json.dumps(obj, ensure_ascii=False, default=str), flush=True)


def report_error(args: argparse.Namespace, thread_id: str, summary: RunSummary, exc: BaseException) -> None:
    """A run that raised: with ``--json`` stdout still holds exactly one JSON object (main() reports on stderr)."""
    if args.json:
        print_json({**result_json({}, thread_id, summary), "error": {"type": type(exc).__name__, "message": str(exc)}})


def report_outcome(
    args: argparse.Namespace, final: dict, thread_id: str, summary: RunSummary, *, answer_shown: bool = False
) -> int:
    """Print a finished run (the answer and summary, or the --json object) and give its exit code:
    0, 1 (failed planning), or 3 when the run stopped on an interrupt (cli/review.py).
    ``answer_shown``: the answer streamed on the terminal already (cli/live.py), not printed again."""
    from .review import report_interrupted

    if final.get("__interrupt__"):  # nothing more runs until `smart-agent resume`
        return report_interrupted(args.json, result_json(final, thread_id, summary), thread_id, final["__interrupt__"])
    no_plan = final.get("status") == "planning_failed"  # no valid plan within the bounded attempts
    if args.json:
        print_json(result_json(final, thread_id, summary))
    if no_plan:
        first = next((line for line in str(final.get("error") or "").splitlines() if line.strip()), "no valid plan")
        print(f"smart-agent: {first.strip().rstrip(':')} (details: --json)", file=sys.stderr)
        return EXIT_FAILURE
    if not args.json:
        if not answer_shown:
            print(final.get("answer", ""))
        if not args.quiet:
            print(
                f"\n(thread {thread_id} · {len(summary.tool_calls)} tool calls · {summary.usage['total_tokens']} "
                "tokens)",
                file=sys.stderr,
            )
    return 0

