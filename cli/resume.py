"""``smart-agent resume``: continue a run that stopped on an interrupt (exit code 3).

    smart-agent resume --thread ID (--approve | --reject [MESSAGE] | --edit JSON
                                    | --answer TEXT | --decisions FILE) [--json] [run flags]

The thread's checkpoints record the graph and the context flags of the run that paused
(cli/review.py ``run_metadata``): the resumed run uses the same graph and settings; flags
given to ``resume`` override the recorded ones (``--graph`` may only repeat the recorded
graph; a thread without a record - started outside the CLI - needs ``--graph``). Every
pending request gets the one decision given, unless ``--decisions FILE`` lists one per tool
call. The rest of the run is shown like ``run``'s: events, the answer or the ``--json``
object; exit 0 when it finished, 3 when it paused again, 1 when it failed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..config.checks import shown
from .options import utf8_text
from .review import EXIT_INTERRUPTED, action_requests, interrupt_kind

__all__ = ["EXIT_INTERRUPTED", "file_decisions", "flag_decision", "register_cli", "resume_command"]


def register_cli(subparsers: Any) -> None:
    from .cassette import add_cassette_args
    from .context_args import add_context_args

    p = subparsers.add_parser(
        "resume",
        help="continue a run that paused for review or a question (exit code 3), or was stopped by Ctrl-C (130)",
        description="Continue a paused run on its thread with a decision for every pending request; a run "
        "stopped by Ctrl-C (exit code 130) continues from its last finished step with no decision.",
    )
    decision = p.add_mutually_exclusive_group()
    decision.add_argument("--approve", dest="decide_approve", action="store_true", help="approve every pending call")
    decision.add_argument(
        "--reject",
        dest="decide_reject",
        nargs="?",
        const="",
        type=utf8_text("message"),
        metavar="MESSAGE",
        help="reject every pending call; the model reads MESSAGE",
    )
    decision.add_argument(
        "--edit", dest="decide_edit", metavar="JSON", help="run every pending call with these arguments (the plan, for "
        "the planner's plan approval)",
    )
    decision.add_argument(
        "--answer", dest="decide_answer", type=utf8_text("answer"), metavar="TEXT",
        help="answer the question (or, where a review allows respond, the result of each reviewed call)"
    )
    decision.add_argument(
        "--decisions", dest="decide_file", metavar="FILE", help="JSON: one decision per pending tool call, in order"
    )
    add_context_args(p, review_flags=False)
    add_cassette_args(p)  # --record / --replay the resumed run's model traffic (cli/cassette.py)
    p.set_defaults(handler=resume_command, graph=None)


# -- decisions from flags -----------------------------------------------
def parse_json_arg(text: str, flag: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: not valid JSON ({exc})") from None


def read_decisions_file(path: str) -> Any:
    from ..config.files import load_json, read_text_file

    return load_json(read_text_file(path, what="--decisions"), what=f"--decisions {shown(path)}")


def flag_decision(
    value: Any, *, approve: bool = False, reject: str | None = None, edit: Any = None, answer: str | None = None
) -> Any:
    """The resume value for one interrupt from ``resume``'s flags (exactly one given); every
    review request gets the same decision. A flag that does not fit is a ``ReviewError``."""
    from ..runs.approval import ReviewError, allowed_of, answer_of, check_decisions

    kind = interrupt_kind(value)
    if kind == "review":
        actions, allowed = action_requests(value), allowed_of(value)
        decisions: list[dict[str, Any]]
        if answer is not None:
            if not all("respond" in a for a in allowed):
                raise ReviewError("the run waits for a review of tool calls, not an answer: use --approve, --reject, "
                                  "--edit or --decisions")
            decisions = [{"type": "respond", "message": answer}] * len(actions)  # the answer is each call's result
        elif approve:
            decisions = [{"type": "approve"}] * len(actions)
        elif reject is not None:
            decisions = [{"type": "reject", "message": reject}] * len(actions)
        else:
            if not isinstance(edit, Mapping):
                raise ReviewError(f"--edit: the arguments must be a JSON object (got {shown(edit)})")
            decisions = [{"type": "edit", "edited_action": {"name": a.get("name"), "args": dict(edit)}}
                         for a in actions]
        check_decisions({"decisions": decisions}, actions, allowed)
        return {"decisions": decisions}
    if kind == "plan":
        if approve:
            return {"action": "approve"}
        if reject is not None:
            return {"action": "reject", "reason": reject}
        if edit is not None:
            return {"action": "edit", "plan": edit}
        raise ReviewError("the run waits for approval of its plan, not an answer: use --approve, --reject or --edit")
    if answer is None:
        what = "an answer to a question" if kind == "question" else "input"
        raise ReviewError(f"the run waits for {what}: use --answer TEXT")
    return answer_of(answer) if kind == "question" else answer


def file_decisions(interrupts: Sequence[Any], content: Any) -> list[Any]:
    """One resume value per interrupt from a ``--decisions`` file: for review requests a JSON
    list (or ``{"decisions": [...]}``) with one decision per pending tool call, in order,
    across the pending requests; any other interrupt takes the file's value as it is."""
    from ..runs.approval import ReviewError, allowed_of, check_decisions

    reviews = [i for i in interrupts if interrupt_kind(getattr(i, "value", None)) == "review"]
    if not reviews:
        return [content for _ in interrupts]
    if len(reviews) != len(interrupts):
        raise ReviewError("--decisions answers tool-call reviews; other requests are pending too: "
                          "resume them one kind at a time")
    decisions = content.get("decisions") if isinstance(content, Mapping) else content
    requests = [a for i in reviews for a in action_requests(i.value)]
    allowed = [a for i in reviews for a in allowed_of(i.value)]
    check_decisions({"decisions": decisions}, requests, allowed)  # wrong shape, count or type: a ReviewError
    assert isinstance(decisions, list)
    out, start = [], 0
    for i in reviews:
        n = len(action_requests(i.value))
        out.append({"decisions": decisions[start:start + n]})
        start += n
    return out


async def _recorded(thread_id: str) -> dict[str, Any] | None:
    """The metadata of the thread's latest checkpoint; None when the thread does not exist."""
    from ..sessions.store import open_checkpointer

    async with open_checkpointer() as saver:
        found = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    return None if found is None else dict(found.metadata or {})


def _decided(args: argparse.Namespace) -> bool:
    """Whether a decision flag was given (none: continue a run stopped by Ctrl-C)."""
    return args.decide_approve or any(
        getattr(args, f) is not None for f in ("decide_reject", "decide_edit", "decide_answer", "decide_file")
    )


def _answers(args: argparse.Namespace, pending: list[Any]) -> list[Any]:
    if args.decide_file is not None:
        return file_decisions(pending, read_decisions_file(args.decide_file))
    edit = parse_json_arg(args.decide_edit, "--edit") if args.decide_edit is not None else None
    return [
        flag_decision(
            i.value, approve=args.decide_approve, reject=args.decide_reject, edit=edit, answer=args.decide_answer
        )
        for i in pending
    ]


async def resume_command(args: argparse.Namespace) -> int:
    from langgraph.types import Command

    from .context_args import context_from_args, context_values
    from .review import pending_interrupts, recorded_run, resume_value, run_metadata
    from .run import run_and_report

    thread_id = args.thread
    if not thread_id:
        raise ValueError("resume: --thread ID is required (the thread_id of the paused run)")
    metadata = await _recorded(thread_id)
    if metadata is None:
        raise ValueError(f"resume: thread {thread_id!r} does not exist")
    graph, flags = recorded_run(metadata)
    if graph and args.graph and args.graph != graph:
        raise ValueError(f"resume: thread {thread_id!r} runs the {graph!r} graph, not {args.graph!r}")
    if not (graph or args.graph):
        raise ValueError(f"resume: thread {thread_id!r} has no record of the graph it ran: give --graph")
    args.graph = graph or args.graph
    ctx = context_from_args(args, base=flags)  # the recorded flags, overridden by the ones given now
    config = {"configurable": {"thread_id": thread_id}}

    async def make_input(built: Any) -> Any:  # inside the thread's lock: what is pending now
        pending = await pending_interrupts(built, config)
        if not pending:
            if (await built.aget_state(config)).next and not _decided(args):  # stopped by Ctrl-C: go on
                return None
            raise ValueError(f"resume: thread {thread_id!r} has no paused run waiting for a decision")
        if not _decided(args):
            raise ValueError(
                f"resume: thread {thread_id!r} waits for a decision: give --approve, --reject, --edit, --answer "
                "or --decisions"
            )
        return Command(resume=resume_value(pending, _answers(args, pending)))

    recorded = run_metadata(args.graph, {**flags, **context_values(args)})
    return await run_and_report(args, ctx, thread_id, args.graph, make_input, metadata=recorded)
