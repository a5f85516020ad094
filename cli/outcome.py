"""A run's outcome as the CLI reports it (``run``, ``chat``, ``resume``): its status, the
``--json`` object, the answer and summary lines, and the exit code.

One rule for every command and graph (:func:`run_status`, :data:`EXIT_CODES`):

=============  ====  ================================================================
status         exit  when
=============  ====  ================================================================
completed      0     the run answered (also at a tool or budget limit)
failed         1     no valid plan, a model error, structured output never valid...
halted         1     a planner step failed under ``on_fail: halt``, or the plan was rejected
interrupted    3     waiting for a person (``smart-agent resume``)
interrupted    130   stopped by Ctrl-C; the thread keeps every finished step
(bad input)    2     a bad flag, file or configuration: one line, nothing ran
=============  ====  ================================================================
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Mapping
from typing import Any

from ..runs.redact import redact_text
from .budget import usage_report, with_total_tokens
from .lines import cached_note
from .summary import RunSummary

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_WAITING = 3  # = review.EXIT_INTERRUPTED
EXIT_CTRL_C = 130

COMPLETED, FAILED, HALTED, INTERRUPTED = "completed", "failed", "halted", "interrupted"
EXIT_CODES = {COMPLETED: EXIT_OK, FAILED: EXIT_FAILURE, HALTED: EXIT_FAILURE, INTERRUPTED: EXIT_WAITING}

# A graph's own ``status`` values that end a run without its work done.
_FAILED_GRAPH_STATUS = {"planning_failed"}
_HALTED_GRAPH_STATUS = {"halted", "plan_invalid", "rejected"}


def run_status(final: Mapping[str, Any]) -> str:
    """The run's status from its final state, for every graph: ``interrupted`` when it waits on
    an interrupt, ``failed`` when the planner found no valid plan, ``halted`` when a halting step
    failed (or a human rejected the plan), else ``completed``."""
    if final.get("__interrupt__"):
        return INTERRUPTED
    graph_status = final.get("status")
    if graph_status in _FAILED_GRAPH_STATUS:
        return FAILED
    if graph_status in _HALTED_GRAPH_STATUS:
        return HALTED
    return COMPLETED


def halt_error(final: Mapping[str, Any]) -> str | None:
    """One line naming the step(s) whose failure halted a planner run (None: no halt)."""
    errors = (final.get("halt") or {}).get("errors") or {}
    if not errors:
        return None
    return "; ".join(f"step {sid!r} failed: {' '.join(str(err).split())}" for sid, err in errors.items())


def _graph_details(final: Mapping[str, Any]) -> dict[str, Any]:
    """What a graph's final state adds to ``--json``: the planner's plan and each step's result
    and status, the fleet's subtasks with their results, the dual graph's assets."""
    out: dict[str, Any] = {}
    if "plan" in final or "step_results" in final:  # planner
        from ..nodes.planner.scheduler import build_trace

        out["plan"] = final.get("plan")
        out["steps"] = build_trace(final.get("plan"), final.get("step_results") or {})
        for key in ("halt", "plan_errors"):
            if final.get(key):
                out[key] = final[key]
    if "subtasks" in final:  # fleet
        results = final.get("results") or {}
        out["subtasks"] = [
            {**s, **{k: v for k, v in (results.get(s.get("id")) or {}).items() if k not in ("usage", "round")}}
            for s in final.get("subtasks") or []
        ]
    if "assets" in final:  # dual
        out["assets"] = list((final.get("assets") or {}).values())
        out["iterations"] = final.get("iterations", 0)
    return out


def result_json(final: dict, thread_id: str, summary: RunSummary) -> dict:
    """The ``--json`` object of a run: ``answer``, ``status``, ``thread_id``, ``usage``,
    ``tool_calls`` (each call; a planner step's with its ``attempts``), ``tool_calls_made``
    (tool executions, retries included), ``steps_run`` and the graph's own details
    (:func:`_graph_details`); ``graph_status`` is the graph's own ``status`` when it has one."""
    status = run_status(final)
    out: dict[str, Any] = {
        "answer": final.get("answer", ""),
        "status": status,
        "thread_id": thread_id,
        "tool_calls": summary.tool_calls,
        "tool_calls_made": final.get("tool_calls_made", summary.tool_executions),
        "steps_run": len(summary.steps),
        "usage": usage_report(final, summary.usage),
    }
    if thread_id and isinstance(final.get("usage"), dict):  # every run of the thread, this one included
        from ..models.usage import thread_total

        out["thread_usage"] = with_total_tokens(thread_total(final))
    if final.get("status") is not None:
        out["graph_status"] = final["status"]
    for key in ("structured_response", "todos", "error"):
        if final.get(key) is not None:
            out[key] = final[key]
    if status == HALTED and not out.get("error"):
        out["error"] = halt_error(final) or "the run halted"
    out.update(_graph_details(final))
    return out


def print_json(obj: dict[str, Any]) -> None:
    """One JSON object on stdout (``--json``)."""
    print(json.dumps(obj, ensure_ascii=False, default=str), flush=True)


def note_thread(exc: BaseException, thread_id: str) -> None:
    """Mark a run's exception with its thread, so main()'s one line names it (to resume or inspect)."""
    with contextlib.suppress(AttributeError, TypeError):
        exc.smart_agent_thread = thread_id  # type: ignore[attr-defined]


def thread_of(exc: BaseException) -> str | None:
    """The thread :func:`note_thread` gave the exception, or None."""
    thread = getattr(exc, "smart_agent_thread", None)
    return thread if isinstance(thread, str) else None


def report_error(args: argparse.Namespace, thread_id: str, summary: RunSummary, exc: BaseException) -> None:
    """A run that raised: with ``--json`` stdout still holds exactly one JSON object (main() reports on
    stderr, naming the thread)."""
    note_thread(exc, thread_id)
    if args.json:
        failed = {**result_json({}, thread_id, summary), "status": FAILED}
        print_json({**failed, "error": {"type": type(exc).__name__, "message": redact_text(str(exc))}})


def report_ctrl_c(args: argparse.Namespace, thread_id: str, summary: RunSummary) -> None:
    """A run stopped by Ctrl-C (the caller re-raises; main() exits 130): what it did so far, and
    how to go on. Every finished step is in the thread's checkpoints (durability "sync")."""
    if args.json:
        print_json({**result_json({}, thread_id, summary), "status": INTERRUPTED, "error": "interrupted (Ctrl-C)"})
    print(
        f"\nsmart-agent: interrupted; thread {thread_id} keeps every finished step: continue with "
        f"`smart-agent resume --thread {thread_id}` or a new run with --thread {thread_id}",
        file=sys.stderr,
        flush=True,
    )


def summary_line(thread_id: str, summary: RunSummary, final: Mapping[str, Any] | None = None) -> str:
    """``(thread ID · N steps · M tool calls · T tokens (K cached) · $C)``: steps only for graphs that have
    them, cached input tokens only when the provider reported some;
    tokens and cost are the run's (``--json``'s ``usage``: a resumed run's include those before its
    pause); "cost unknown" when a model without a price (prices.py) was called."""
    steps = f" · {_count(len(summary.steps), 'step')}" if summary.steps else ""
    usage = usage_report(dict(final or {}), summary.usage)
    cost = usage["cost_usd"]
    return (
        f"(thread {thread_id}{steps} · {_count(summary.tool_executions, 'tool call')} · "
        f"{_count(usage['total_tokens'], 'token')}{cached_note(usage)} · "
        f"{'cost unknown' if cost is None else f'${cost:.4f}'})"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def failure_line(final: Mapping[str, Any], status: str, thread_id: str) -> str:
    """The one stderr line of a failed or halted run; it names the thread (to resume or inspect it)."""
    where = f"(thread {thread_id}; details: --json)"
    if status == HALTED:
        reason = halt_error(final) or final.get("error") or "stopped"
        return redact_text(f"smart-agent: the run halted: {reason} {where}")
    first = next((line for line in str(final.get("error") or "").splitlines() if line.strip()), "no valid plan")
    return redact_text(f"smart-agent: {first.strip().rstrip(':')} {where}")


def report_outcome(
    args: argparse.Namespace, final: dict, thread_id: str, summary: RunSummary, *, answer_shown: bool = False
) -> int:
    """Print a finished run (the answer and summary, or the --json object) and give its exit code
    (:data:`EXIT_CODES`); a run waiting on an interrupt prints what it waits for (cli/review.py).
    ``answer_shown``: the answer streamed on the terminal already (cli/live.py), not printed again."""
    from .review import report_interrupted

    status = run_status(final)
    if status == INTERRUPTED:  # nothing more runs until `smart-agent resume`
        return report_interrupted(args.json, result_json(final, thread_id, summary), thread_id, final["__interrupt__"])
    if args.json:
        print_json(result_json(final, thread_id, summary))
    elif status != FAILED and not answer_shown:  # (a failed run's text is its error: the line below)
        print(final.get("answer", ""))
    if status in (FAILED, HALTED):
        print(failure_line(final, status, thread_id), file=sys.stderr)
    elif not args.json and not args.quiet:
        print("\n" + summary_line(thread_id, summary, final), file=sys.stderr)
    return EXIT_CODES[status]
