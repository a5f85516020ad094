"""One readable line (or a few, for a plan) per event of every graph: :data:`LINES` maps each
event type the code emits to its renderer; :func:`event_line` picks it.

A renderer returns None for an event that is shown another way (``final_answer``: the answer
is printed at the end) or only under ``--json`` (``budget`` after each call). A type with no
renderer still reads as ``key=value`` pairs, never raw JSON; ``tests/unit/cli/test_lines.py``
collects every type the code emits and fails when one has no renderer here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..runs.events import clip


def short(value: Any, n: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return clip(text, n)


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def _args(args: Any, n: int = 60) -> str:
    if isinstance(args, dict):
        return ", ".join(f"{k}={short(v, n)}" for k, v in args.items())
    return short(args if args is not None else "", n)


# -- tools -------------------------------------------------------------------------------
#: What became of a call a person decided (a ``tool_call`` event's ``reviewed``): it did not run as a tool.
REVIEWED = {"answer": "answered by the user", "reject": "rejected: not run", "refuse": "refused: not run"}


def _tool_call(ev: dict) -> str:
    line = f"  → {ev.get('name')}({_args(ev.get('args') or {})})"
    reviewed = ev.get("reviewed")
    return f"{line} [{REVIEWED.get(str(reviewed), str(reviewed))}]" if reviewed else line


def _tool_result(ev: dict) -> str:
    status = "ok" if ev.get("ok") else f"error[{ev.get('error')}]"
    ms = _num(ev.get("duration_s")) * 1000
    return f"  ← {ev.get('name')} {status} {ms:.0f} ms: {short(ev.get('preview') or '')}"


def _tool_retry(ev: dict) -> str:
    return (
        f"  ↻ {ev.get('name')} failed ({ev.get('error')}): attempt {ev.get('attempt')} of {ev.get('of')} "
        f"in {_num(ev.get('delay_s')):.1f} s"
    )


def _tool_limit(ev: dict) -> str:
    return f"  ! tool-call limit reached ({ev.get('limit')}): the next turn must answer"


def _loop_detected(ev: dict) -> str:
    then = "the next turn must answer" if ev.get("action") == "finalize" else "the model is told so"
    cycle = ev.get("cycle")
    if isinstance(cycle, list) and len(cycle) > 1:
        return (
            f"  ! loop detected: the same {len(cycle)} calls ({', '.join(map(str, cycle))}) made "
            f"{ev.get('repeats')} times in a row with the same arguments: {then}"
        )
    return (
        f"  ! loop detected: {ev.get('tool')} called {ev.get('repeats')} times in a row with the same "
        f"arguments: {then}"
    )


def _pii(ev: dict) -> str:
    where = f"the result of {ev.get('tool')}" if ev.get("where") == "tool_result" else "the input"
    return f"  ⊘ personal data ({ev.get('type')}) in {where}: {ev.get('strategy')}"


def _tool_call_limit(ev: dict) -> str:
    tool = "every tool" if ev.get("tool") == "*" else ev.get("tool")
    stop = {"end": "; the run stops", "error": "; the run fails"}.get(str(ev.get("exit")), "")
    return f"  ⊘ tool-call limit of {tool}: {ev.get('blocked')} call(s) not run{stop}"


# -- model -------------------------------------------------------------------------------
def _usage(ev: dict) -> str:
    """``model turn N`` for the agent loop's turns (and the dual's decisions), ``model call (node)``
    for a graph's other calls (the planner's plan and answer, the fleet's split and answer)."""
    node, phase, turn = ev.get("node"), ev.get("phase"), ev.get("turn")
    label = f"model turn {turn}" if turn is not None else "model call"
    detail = ", ".join(str(x) for x in (node, phase) if x)
    label += f" ({detail})" if detail else ""
    return f"  · {label}: {ev.get('input_tokens', 0)} tokens in{cached_note(ev)}, {ev.get('output_tokens', 0)} out"


def cached_note(usage: Mapping[str, Any]) -> str:
    """`` (N cached)``, `` (N cached, M written to the cache)`` or nothing: the prompt cache's share
    of a usage record or event."""
    read, write = usage.get("cache_read_tokens") or 0, usage.get("cache_write_tokens") or 0
    if not read and not write:
        return ""
    parts = [f"{read} cached"] if read else []
    if write:
        parts.append(f"{write} written to the cache")
    return f" ({', '.join(parts)})"


def _model_fallback(ev: dict) -> str:
    return f"  ↻ model {ev.get('from')} failed ({short(ev.get('error') or '')}): trying {ev.get('to')}"


def _model_text(ev: dict) -> str:
    """What the model wrote beside its tool calls (nodes/agent.py)."""
    return f"  💬 {short(ev.get('text') or '', 400)}"


def _reasoning(ev: dict) -> str:
    if "action" in ev:  # the dual agent's decision (nodes/dual.py)
        action = ev.get("action")
        said = ev.get("objective") or ev.get("thought") or ev.get("answer") or ""
        verb = {"execute": "execute", "brainstorm": "think", "final": "answer"}.get(str(action), str(action))
        return f"  ✎ decision {ev.get('iteration', '?')}: {verb}: {short(said, 160)}"
    if ev.get("done"):  # two-phase reasoning (nodes/reasoning.py)
        return f"  ✎ reasoning: done: {short(ev.get('situation') or '', 160)}"
    plan = "; ".join(str(p) for p in _list(ev.get("plan")))
    tools = ", ".join(str(t) for t in _list(ev.get("tools")))
    parts = [short(ev.get("situation") or "(none given)", 120)]
    if plan:
        parts.append(f"plan: {short(plan, 120)}")
    if tools:
        parts.append(f"tools: {short(tools, 80)}")
    return "  ✎ reasoning: " + " · ".join(parts)


def _budget(ev: dict) -> str | None:
    if ev.get("action") != "finalize":  # one per model call: in --json only
        return None
    used, limit = _dict(ev.get("consumed")), _dict(ev.get("limit"))
    what = {
        "model_calls": f"{used.get('model_calls', 0)} of {limit.get('model_calls')} model calls",
        "tokens": f"{_num(used.get('input_tokens')) + _num(used.get('output_tokens')):.0f} of "
        f"{limit.get('tokens')} tokens",
        "cost": f"${_num(used.get('cost_usd')):.4f} of ${_num(limit.get('cost_usd')):.4f}",
    }.get(str(ev.get("reason")), str(ev.get("reason")))
    return f"  ! budget: {what} used: the next model call must answer"


def _error(ev: dict) -> str:
    if ev.get("memory") == "off":
        return f"  ◇ memory off: {short(ev.get('error') or '', 200)}"
    if ev.get("kind") == "structured_output":
        errors = "; ".join(str(e) for e in _list(ev.get("errors")))
        return (
            f"  ✗ the answer does not fit the output schema (retry {ev.get('retry')} of {ev.get('max_retries')}): "
            f"{short(errors, 200)}"
        )
    where = f"MCP server {ev.get('server')}" if ev.get("source") == "mcp" else str(ev.get("node") or "run")
    then = f" ({ev['fallback']})" if ev.get("fallback") else ""
    return f"  ✗ error in {where}: {short(ev.get('error') or '', 200)}{then}"


# -- plans and steps ---------------------------------------------------------------------
def format_plan(plan: dict[str, Any], args_chars: int | None = None) -> str:
    """A plan's steps, one line each: ``id: tool(args)  after ids`` (dependencies given and implied
    by ``${id}`` references) and the settings that differ from the defaults; ``args_chars``
    shortens the arguments' JSON (the approval prompt shows them whole)."""
    from ..nodes.planner.refs import referenced_steps

    lines = []
    for step in [s for s in _list(_dict(plan).get("steps")) if isinstance(s, dict)]:
        args = json.dumps(step.get("args") or {}, ensure_ascii=False, default=str)
        deps = list(dict.fromkeys([*_list(step.get("depends_on")), *referenced_steps(step.get("args") or {})]))
        extra = [f"on_fail: {step['on_fail']}"] if step.get("on_fail", "halt") != "halt" else []
        extra += [f"{k}: {step[k]}" for k in ("retries", "timeout_s") if step.get(k) is not None]
        lines.append(
            f"  {step.get('id')}: {step.get('tool')}({clip(args, args_chars) if args_chars else args})"
            + (f"  after {', '.join(deps)}" if deps else "")
            + (f"  ({', '.join(extra)})" if extra else "")
        )
    return "\n".join(lines) or "  (no steps)"


def _plan(ev: dict) -> str:
    if "subtasks" in ev:  # the fleet's split of the goal (nodes/fleet.py)
        items = _list(ev.get("subtasks"))
        rows = [f"      {t.get('id')}: {short(t.get('task') or '', 100)}" for t in items if isinstance(t, dict)]
        return "\n".join([f"  ☰ fleet: {len(items)} worker(s)", *rows])
    if "todos" in ev:  # the agent's todo list (tools/context_tools.py manage_todo_list)
        todos = [t for t in _list(ev.get("todos")) if isinstance(t, dict)]
        done = sum(1 for t in todos if t.get("status") == "done")
        change = ", ".join(
            f"{len(_list(ev.get(k)))} {word}" for k, word in (("added", "added"), ("updated", "changed"),
                                                              ("removed", "removed")) if _list(ev.get(k))
        )
        mark = {"done": "✓", "in_progress": "▶"}
        rows = [
            f"      {mark.get(str(t.get('status')), '·')} {t.get('id')}. {short(t.get('content') or '', 100)}"
            for t in todos
        ]
        return "\n".join([f"  ☰ todo list: {done}/{len(todos)} done" + (f" ({change})" if change else ""), *rows])
    # the planner (nodes/planner/plan.py, approve.py)
    which = "edited plan" if ev.get("source") == "edit" else ("revised plan" if ev.get("replan") else "plan")
    if not ev.get("valid"):
        errors = [str(e) for e in _list(ev.get("errors"))]
        attempt = f" (attempt {ev['attempt']})" if ev.get("attempt") else ""
        shown = "\n".join(f"      - {short(e, 160)}" for e in errors[:5])
        more = f"\n      … {len(errors) - 5} more" if len(errors) > 5 else ""
        return f"  ✗ {which} rejected{attempt}: {len(errors)} error(s)\n{shown}{more}".rstrip()
    steps = _list(_dict(ev.get("plan")).get("steps"))
    replan = f", replan {ev['replan']}" if ev.get("replan") else ""
    attempt = f" (attempt {ev['attempt']}{replan})" if _num(ev.get("attempt")) > 1 else (
        f" ({replan[2:]})" if replan else ""
    )
    return f"  ☰ {which}{attempt}: {len(steps)} step(s)\n" + "\n".join(
        "    " + line for line in format_plan(_dict(ev.get("plan")), 100).splitlines()
    )


def _step_start(ev: dict) -> str:
    """A planner step (its tool), a fleet worker (its task) or a dual execution (its objective)."""
    if ev.get("tool"):
        return f"  ▶ {ev.get('step')} {ev.get('tool')} running"
    what = ev.get("task") or ev.get("objective") or ""
    return f"  ▶ {ev.get('step')} running: {short(what, 100)}"


def _step_result(ev: dict) -> str:
    status = str(ev.get("status") or ("ok" if ev.get("ok") else "failed"))
    tool = f" {ev['tool']}" if ev.get("tool") else ""
    if status == "skipped":
        return f"  ⤼ {ev.get('step')}{tool} skipped: {short(ev.get('error') or '', 120)}"
    attempts = int(_num(ev.get("attempts")))
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    took = f" {_num(ev.get('duration_s')) * 1000:.0f} ms" if "duration_s" in ev else ""
    detail = ev.get("preview") if ev.get("ok") else ev.get("error")
    mark = "✓" if ev.get("ok") else "✗"
    return f"  {mark} {ev.get('step')}{tool} {status}{tries}{took}: {short(detail or '', 120)}"


# -- agents ------------------------------------------------------------------------------
def _handoff(ev: dict) -> str:
    ignored = [str(n) for n in _list(ev.get("ignored"))]
    why = f": {short(ev.get('reason'), 120)}" if ev.get("reason") else ""
    extra = f" (ignored: {', '.join(ignored)})" if ignored else ""
    return f"  ⇄ handoff {ev.get('from') or 'agent'} → {ev.get('to')}{why}{extra}"


def _sub_agent(ev: dict) -> str:
    who = ev.get("child") or ev.get("tool")
    if ev.get("phase") == "start":
        how = " in the background" if ev.get("background") else ""
        return f"  ⤷ sub-agent {who} started{how}: {short(ev.get('task') or '', 120)}"
    if ev.get("ok"):
        return f"  ⤶ sub-agent {who} answered: {short(ev.get('preview') or '', 120)}"
    if ev.get("error") == "cancelled":
        return f"  ◇ sub-agent {who} cancelled"
    return f"  ✗ sub-agent {who} failed: {short(ev.get('error') or '', 160)}"


def _warning(ev: dict) -> str:
    return f"  ! warning: {short(ev.get('message') or '', 300)}"


# -- human review ------------------------------------------------------------------------
def _call_text(call: Any, step: bool) -> str:
    call = call if isinstance(call, dict) else {}
    label = f"{call.get('id')}: " if step else ""  # a planner step's id
    return f"{label}{call.get('name')}({short(call.get('args') or {}, 80)})"


def _approval_requested(ev: dict) -> str:
    """The agent's calls (``calls``) or the planner's steps (``requests``)."""
    steps = "requests" in ev
    calls = ev.get("requests") if steps else ev.get("calls")
    return "  ⏸ waiting for approval: " + "; ".join(_call_text(c, steps) for c in _list(calls))


def _approval(ev: dict) -> str:
    decision, name = ev.get("decision"), ev.get("name")
    if decision == "reject":
        return f"  ✗ rejected {name}" + (f": {short(ev['message'])}" if ev.get("message") else "")
    if decision == "edit":
        return f"  ✎ approved {name} with edited arguments {_args(ev.get('args') or {}, 40)}"
    return f"  ✓ approved {name}"


def _question(ev: dict) -> str:
    return f"  ? the agent asks: {short(ev.get('question') or '', 200)}"


def _answer(ev: dict) -> str:
    return f"  ↳ answered: {short(ev.get('preview', ev.get('answer', '')) or '', 120)}"


# -- context and memory ------------------------------------------------------------------
def _summarization(ev: dict) -> str:
    if ev.get("action") == "archive":
        return f"  ⇣ archived {ev.get('tool')} output ({ev.get('chars')} chars) as {ev.get('execution_id')}"
    return (
        f"  ⇣ context {ev.get('action')}: {ev.get('tokens_before')} → {ev.get('tokens_after')} tokens"
        + (f" ({ev.get('strategy')}, {ev.get('compacted_messages')} messages)" if ev.get("strategy") else "")
    )


def _memory_recall(ev: dict) -> str:
    if ev.get("memory") == "off":
        return f"  ◇ memory off: {short(ev.get('error') or '', 200)}"  # the memory file was refused
    if "error" in ev:
        return f"  ◇ memory: recall failed ({short(ev.get('error') or '', 160)}); the run goes on without it"
    warning = f" ⚠ {ev['warning']}" if ev.get("warning") else ""  # damaged rows skipped
    return f"  ◇ memory: recalled {ev.get('count', 0)} ({_num(ev.get('took_ms')):.0f} ms){warning}"


def _memory_write(ev: dict) -> str:
    if ev.get("memory") == "off":
        return f"  ◇ memory off: {short(ev.get('error') or '', 200)}"
    if "skipped" in ev:
        return f"  ◇ memory: nothing stored ({short(ev.get('skipped') or '', 120)})"
    if "error" in ev:
        return f"  ◇ memory: write failed ({short(ev.get('error') or '', 160)})"
    if ev.get("deferred"):  # the FAISS store writes after the answer, on its memory thread
        return "  ◇ memory: the run's memory is written after the answer"
    return f"  ◇ memory: {ev.get('action', 'stored')} {ev.get('key', '')} ({_num(ev.get('took_ms')):.0f} ms)"


def _final_answer(ev: dict) -> None:
    return None  # the answer is printed once, at the end (streamed on a terminal)


#: Every event type's renderer (the types: events.EVENT_TYPES and what tests/unit/cli/test_lines.py finds).
LINES: dict[str, Callable[[dict], str | None]] = {
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "tool_retry": _tool_retry,
    "tool_limit": _tool_limit,
    "loop_detected": _loop_detected,
    "pii": _pii,
    "tool_call_limit": _tool_call_limit,
    "usage": _usage,
    "model_fallback": _model_fallback,
    "model_text": _model_text,
    "reasoning": _reasoning,
    "budget": _budget,
    "error": _error,
    "warning": _warning,
    "plan": _plan,
    "step_start": _step_start,
    "step_result": _step_result,
    "handoff": _handoff,
    "sub_agent": _sub_agent,
    "approval_requested": _approval_requested,
    "approval": _approval,
    "question": _question,
    "answer": _answer,
    "summarization": _summarization,
    "memory_recall": _memory_recall,
    "memory_write": _memory_write,
    "final_answer": _final_answer,
}


def event_line(ev: dict) -> str | None:
    """The event's line(s); an unknown type reads as ``key=value`` pairs (never raw JSON)."""
    kind = str(ev.get("event"))
    render = LINES.get(kind)
    if render is not None:
        return render(ev)
    payload = {k: v for k, v in ev.items() if k not in {"event", "ts", "agent"}}
    return f"  · {kind}: {_args(payload, 60)}"
