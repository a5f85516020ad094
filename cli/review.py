"""A run that pauses for a person: human review of tool calls, ``ask_user`` questions, the
planner's plan approval - any LangGraph interrupt of any graph.

* :func:`pending_interrupts` - what a thread waits for (``StateSnapshot.interrupts``);
* :func:`resume_value` - the ``Command(resume=...)`` value answering all of them;
* :func:`ask_terminal` - on a terminal: show each request and read the decision
  (``[a]pprove / [e]dit / [r]eject``, those the request allows, or the answer to a question; the plan approval:
  :func:`prompt_for_approval`);
* :func:`run_until_paused` - stream a run, asking or stopping at each interrupt;
* :func:`interrupted_json` / :func:`interrupted_message` - what a run that stopped on an
  interrupt prints (exit code :data:`EXIT_INTERRUPTED`).

The formats are runs/approval.py's (LangChain's HumanInTheLoopMiddleware) and
nodes/planner/approve.py's. The ``resume`` command and the decisions it builds from its
flags are cli/resume.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from .lines import format_plan  # the plan's lines, as its event shows them

#: Exit code of a run that stopped on an interrupt: it waits for ``smart-agent resume``.
EXIT_INTERRUPTED = 3
#: Checkpoint metadata key recording how a thread's runs were started (graph, flags).
RUN_METADATA = "smart_agent"

Read = Callable[[], str]


# -- what a thread waits for ----------------------------------------------------------
async def pending_interrupts(graph: Any, config: Mapping[str, Any]) -> list[Any]:
    """The interrupts the thread's latest checkpoint waits for (LangGraph ``Interrupt``
    objects: ``.id``, ``.value``), subgraphs' and parallel branches' included."""
    if graph.checkpointer is None:
        return []
    snapshot = await graph.aget_state(config)
    return list(snapshot.interrupts or ())


async def run_until_paused(
    graph: Any,
    graph_input: Any,
    *,
    config: dict[str, Any],
    context: Any,
    on_event: Callable[[dict], None],
    ask: Callable[[list[Any]], Any] | None = None,
    on_progress: Callable[[str, Any], None] | None = None,
) -> dict:
    """Stream a run (custom events to ``on_event``) to its end, and resume it with
    ``ask(interrupts)`` each time it pauses. With no ``ask``, or when it returns None, the
    run stops there: the final state then holds the pending interrupts under
    ``"__interrupt__"``. (``run``, ``chat``, ``resume`` through ``run.run_once``; ``execute``.)
    ``on_progress`` also gets the ``messages`` (model tokens) and ``tasks`` (nodes starting and
    ending) stream parts: a terminal's live display (cli/live.py)."""
    from langgraph.types import Command

    from ..config import settings

    final: dict = {}
    while True:
        async for mode, chunk in graph.astream(
            graph_input,
            config=config,
            context=context,
            stream_mode=["custom", "values", *(["messages", "tasks"] if on_progress else [])],
            durability=settings.durability() if graph.checkpointer else None,  # --durability
        ):
            if mode == "custom" and isinstance(chunk, dict) and "event" in chunk:
                on_event(chunk)
            elif on_progress is not None and mode in ("messages", "tasks"):
                on_progress(mode, chunk)
            elif mode == "values" and isinstance(chunk, dict):
                final = chunk
        final = {k: v for k, v in final.items() if k != "__interrupt__"}
        pending = await pending_interrupts(graph, config)
        if not pending:
            return final
        decision = ask(pending) if ask is not None else None
        if decision is None:
            return {**final, "__interrupt__": pending}
        graph_input = Command(resume=decision)


def interrupt_kind(value: Any) -> str:
    """'review', 'question', 'plan' or 'other'."""
    from ..runs.approval import is_question, is_review_request

    if is_review_request(value):
        return "review"
    if is_question(value):
        return "question"
    if isinstance(value, Mapping) and value.get("type") == "plan_approval":
        return "plan"
    return "other"


def resume_value(interrupts: Sequence[Any], answers: Sequence[Any]) -> Any:
    """The ``Command(resume=...)`` value giving ``answers[i]`` to ``interrupts[i]``: a map by
    interrupt id (LangGraph resumes several pending interrupts at once this way)."""
    if len(interrupts) == 1 and not getattr(interrupts[0], "id", None):
        return answers[0]
    return {i.id: a for i, a in zip(interrupts, answers, strict=True)}


def action_requests(value: Any) -> list[Mapping[str, Any]]:
    return [a if isinstance(a, Mapping) else {} for a in (value.get("action_requests") or [])]


# -- output of a run that stopped on an interrupt ----------------------------------------
def interrupts_json(interrupts: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"id": getattr(i, "id", None), "value": getattr(i, "value", i)} for i in interrupts]


def interrupted_json(result: Mapping[str, Any], interrupts: Sequence[Any]) -> dict[str, Any]:
    """``--json`` of a run waiting on ``interrupts``: the run's usual keys (``result``, from
    ``result_json``), ``status: interrupted`` and the pending interrupts."""
    return {**result, "status": "interrupted", "interrupts": interrupts_json(interrupts)}


def resume_hint(thread_id: str, interrupts: Sequence[Any]) -> str:
    kinds = {interrupt_kind(getattr(i, "value", None)) for i in interrupts}
    options = []
    if kinds & {"review", "plan"}:
        options.append("--approve | --reject [MESSAGE] | --edit JSON")
    if kinds & {"question", "other"}:
        options.append("--answer TEXT")
    if kinds & {"review", "other"}:
        options.append("--decisions FILE")
    return f"smart-agent resume --thread {shlex.quote(thread_id)} ({' | '.join(options)})"


def describe(value: Any) -> list[str]:
    """Readable lines for one pending interrupt."""
    kind = interrupt_kind(value)
    if kind == "review":
        lines = []
        for n, action in enumerate(action_requests(value), start=1):
            args = json.dumps(action.get("args") or {}, ensure_ascii=False, sort_keys=True)
            lines.append(f"  {n}. {action.get('name')}({args})")
        return lines
    if kind == "question":
        return [f"  ? {value['question']}"]
    if kind == "plan":
        return [f"  plan for: {value.get('task', '')}", format_plan(value.get("plan") or {})]
    return ["  " + json.dumps(value, ensure_ascii=False, default=str)]


def interrupted_message(thread_id: str, interrupts: Sequence[Any]) -> str:
    """The human message (stderr) of a run that stopped on ``interrupts``."""
    counts = {"review": 0, "question": 0, "plan": 0, "other": 0}
    for i in interrupts:
        value = getattr(i, "value", None)
        kind = interrupt_kind(value)
        counts[kind] += len(action_requests(value)) if kind == "review" else 1
    what = []
    if counts["review"]:
        what.append(f"{counts['review']} tool call(s) wait for review")
    if counts["question"]:
        what.append(f"{counts['question']} question(s) wait for an answer")
    if counts["plan"]:
        what.append("the plan waits for approval")
    if counts["other"]:
        what.append(f"{counts['other']} request(s) wait for input")
    lines = [f"smart-agent: paused on thread {thread_id}: {'; '.join(what)}; nothing more runs until resumed."]
    for i in interrupts:
        lines.extend(describe(getattr(i, "value", None)))
    lines.append(f"continue with: {resume_hint(thread_id, interrupts)}")
    return "\n".join(lines)


def report_interrupted(as_json: bool, result: Mapping[str, Any], thread_id: str, interrupts: Sequence[Any]) -> int:
    """Print what a run that stopped on ``interrupts`` waits for: with ``--json`` one JSON
    object on stdout (``result``: the run's usual keys), else the message on stderr."""
    if as_json:
        print(json.dumps(interrupted_json(result, interrupts), ensure_ascii=False, default=str), flush=True)
    else:
        print(interrupted_message(thread_id, interrupts), file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


# -- the planner's plan approval (nodes/planner/approve.py) ---------------------------------
def prompt_for_approval(
    request: dict[str, Any],
    *,
    read: Callable[[], str] | None = None,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Show a ``plan_approval`` interrupt and read the decision: [a]pprove, [e]dit FILE, [r]eject REASON.

    Returns the resume value for ``Command(resume=...)``. ``read`` returns one input line.
    """
    out = out or sys.stderr
    read = read or (lambda: sys.stdin.readline())
    print(f"\nPlan{' (revised)' if request.get('replan') else ''} for: {request.get('task', '')}", file=out)
    print(format_plan(request.get("plan") or {}), file=out)
    for err in request.get("errors") or []:
        print(f"  ! {err}", file=out)
    while True:
        print("approve? [a]pprove / [e]dit PLAN.json / [r]eject [reason]: ", end="", file=out, flush=True)
        line = read()
        if not line:
            return {"action": "reject", "reason": "no answer (end of input)"}
        word, _, rest = line.strip().partition(" ")
        word = word.lower()
        if word in ("a", "approve", "y", "yes"):
            return {"action": "approve"}
        if word in ("r", "reject", "n", "no"):
            return {"action": "reject", "reason": rest.strip() or "rejected at the prompt"}
        if word in ("e", "edit") and rest.strip():
            from ..config.files import InputFileError, load_json, read_text_file

            name = os.path.expanduser(rest.strip())
            try:
                return {"action": "edit", "plan": load_json(read_text_file(name, what="plan"), what=f"plan {name}")}
            except InputFileError as exc:
                print(f"  cannot read {rest.strip()}: {exc}", file=out)
                continue
        print("  answer a, e FILE or r [reason]", file=out)


# -- deciding on a terminal --------------------------------------------------------------
def edit_json(current: Any, *, read: Read, out: TextIO, what: str = "arguments") -> Any:
    """``current`` edited by the user: in ``$VISUAL``/``$EDITOR`` when set (a temporary JSON
    file), else one line of JSON read from the terminal. Bad JSON: said, and None."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor:
        fd, path = tempfile.mkstemp(suffix=".json", prefix="smart-agent-edit-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(current, fh, indent=2, ensure_ascii=False)
                fh.write("\n")
            subprocess.run([*shlex.split(editor), path], check=False)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        finally:
            os.unlink(path)
    else:
        print(f"  new {what} as one line of JSON: ", end="", file=out, flush=True)
        text = read()
    try:
        return json.loads(text)
    except ValueError as exc:
        print(f"  not valid JSON ({exc}); try again", file=out, flush=True)
        return None


_CHOICES = {"approve": "[a]pprove", "edit": "[e]dit", "reject": "[r]eject [message]", "respond": "re[s]pond TEXT"}
_WORDS = {"approve": ("a", "approve", "y", "yes"), "reject": ("r", "reject", "n", "no"), "edit": ("e", "edit"),
          "respond": ("s", "respond")}


def _ask_action(
    action: Mapping[str, Any], allowed: Sequence[str] = ("approve", "edit", "reject"), *, read: Read, out: TextIO
) -> dict[str, Any] | None:
    """One tool call's decision, in approval.py's format, of a type in ``allowed`` (None: end of input)."""
    name = str(action.get("name") or "")
    args = action.get("args") if isinstance(action.get("args"), Mapping) else {}
    print(f"\n⏸ {name} waits for your approval", file=out)
    print(f"  args: {json.dumps(args, ensure_ascii=False, sort_keys=True)}", file=out)
    if action.get("description"):
        print("  " + str(action["description"]).replace("\n", "\n  "), file=out)
    while True:
        print("  " + " / ".join(_CHOICES[d] for d in allowed if d in _CHOICES) + ": ", end="", file=out, flush=True)
        line = read()
        if not line:
            return None
        word, _, rest = line.strip().partition(" ")
        kind = next((d for d in allowed if word.lower() in _WORDS.get(d, ())), None)
        if kind == "approve":
            return {"type": "approve"}
        if kind == "reject":
            return {"type": "reject", "message": rest.strip()}
        if kind == "respond" and rest.strip():
            return {"type": "respond", "message": rest.strip()}
        if kind == "edit":
            edited = json.loads(rest) if rest.strip() and _is_json(rest) else edit_json(args, read=read, out=out)
            if isinstance(edited, Mapping):
                return {"type": "edit", "edited_action": {"name": name, "args": dict(edited)}}
            if edited is not None:
                print("  the arguments must be a JSON object; try again", file=out, flush=True)
            continue
        letters = [_WORDS[d][0] + (" TEXT" if d == "respond" else "") for d in allowed if d in _WORDS]
        said = ", ".join(letters[:-1]) + " or " + letters[-1] if len(letters) > 1 else "".join(letters)
        print(f"  answer {said} [message]", file=out, flush=True)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def ask_one(value: Any, *, read: Read, out: TextIO) -> tuple[bool, Any]:
    """The resume value for one interrupt, asked on the terminal: ``(True, value)``, or
    ``(False, None)`` at the end of input (the run stays paused)."""
    kind = interrupt_kind(value)
    if kind == "review":
        from ..runs.approval import allowed_of

        decisions = []
        for action, allowed in zip(action_requests(value), allowed_of(value), strict=True):
            decision = _ask_action(action, allowed, read=read, out=out)
            if decision is None:
                return False, None
            decisions.append(decision)
        return True, {"decisions": decisions}
    if kind == "plan":
        return True, prompt_for_approval(dict(value), read=read, out=out)
    if kind == "question":
        print(f"\n? {value['question']}\nanswer> ", end="", file=out, flush=True)
    else:
        print(f"\nthe run waits for input: {json.dumps(value, ensure_ascii=False, default=str)}", file=out)
        print("value (JSON, or text)> ", end="", file=out, flush=True)
    line = read()
    if not line:
        return False, None
    text = line.rstrip("\n")
    if kind == "other" and _is_json(text):
        return True, json.loads(text)
    return True, text


def ask_terminal(
    interrupts: Sequence[Any], *, read: Read | None = None, out: TextIO | None = None
) -> Any | None:
    """Ask about every pending interrupt on the terminal; the resume value, or None when
    the input ended first."""
    read = read or sys.stdin.readline
    out = out or sys.stderr
    answers = []
    for i in interrupts:
        ok, answer = ask_one(getattr(i, "value", None), read=read, out=out)
        if not ok:
            return None
        answers.append(answer)
    return resume_value(interrupts, answers)


def on_terminal(args: argparse.Namespace) -> bool:
    """Whether decisions are asked interactively: stdin and stdout are terminals, no --json."""
    return not getattr(args, "json", False) and sys.stdin.isatty() and sys.stdout.isatty()


# -- what a thread records for `resume` ------------------------------------------------------
def run_metadata(graph_name: str, flags: Mapping[str, Any]) -> dict[str, Any]:
    """Checkpoint metadata of a CLI run: the graph and the context fields its flags gave, so
    ``smart-agent resume`` continues the thread with the same graph and settings. One JSON
    text: LangGraph copies only scalar values of a run's metadata into its checkpoints."""
    return {RUN_METADATA: json.dumps({"graph": graph_name, "context": dict(flags)}, default=str)}


def recorded_run(metadata: Mapping[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """``(graph, context fields)`` recorded by :func:`run_metadata` (``(None, {})`` if none)."""
    try:
        record = json.loads((metadata or {}).get(RUN_METADATA) or "null")
    except (TypeError, ValueError):
        record = None
    if not isinstance(record, Mapping):
        return None, {}
    graph = record.get("graph") if isinstance(record.get("graph"), str) else None
    context = record.get("context")
    return graph, dict(context) if isinstance(context, Mapping) else {}
