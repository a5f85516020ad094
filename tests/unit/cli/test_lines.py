"""Every event type the code can emit has a readable line (cli/lines.py), never raw JSON.

The event types and their fields are collected from the source (every ``emit("type", ...)``,
``make_event("type", ...)`` and ``functools.partial(emit, "type", ...)``): a new event type
without a renderer fails here, and so does a renderer that breaks on the fields it is sent."""

from __future__ import annotations

import ast
import functools

import pytest
from conftest import REPO, package_files

from smart_agent.cli.lines import LINES, format_plan
from smart_agent.cli.render import format_event
from smart_agent.runs.events import EVENT_TYPES

pytestmark = pytest.mark.unit

EMITTERS = {"emit", "make_event"}
# Calls whose type is not a literal, and the types they send (nodes/human.py emits its
# decisions after the review: ``later.append(("approval", ...))``).
DYNAMIC = {"nodes/human.py": {"approval", "answer"}, "nodes/tools.py": {"tool_call", "tool_result"}}
# Shown another way: the answer is printed at the end; budget bookkeeping after each call is in --json.
SILENT = {("final_answer", None), ("budget", "ok")}


def _name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


@functools.cache
def emitted() -> tuple[tuple[str, str, dict], ...]:
    """``(file, type, fields)`` of each emitting call in the package: literal field values as written,
    others named (read once for every test here)."""
    sites: list[tuple[str, str, dict]] = []
    for path in package_files():
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            args = list(node.args)
            if _name(node.func) == "partial" and args and _name(args[0]) in EMITTERS:
                args = args[1:]  # functools.partial(emit, "type", ...)
            elif _name(node.func) not in EMITTERS or rel == "runs/events.py":
                continue
            if not args:
                continue
            fields: dict = {}
            for kw in node.keywords:
                if kw.arg is None:  # **payload: its keys are not known here
                    if isinstance(kw.value, ast.Dict):
                        for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                                fields[k.value] = v.value if isinstance(v, ast.Constant) else f"<{k.value}>"
                    continue
                fields[kw.arg] = kw.value.value if isinstance(kw.value, ast.Constant) else f"<{kw.arg}>"
            if isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                sites.append((rel, args[0].value, fields))
            else:
                assert rel in DYNAMIC, f"{rel}:{node.lineno}: an event type that is not a literal: list it in DYNAMIC"
                sites.extend((rel, kind, {}) for kind in DYNAMIC[rel])
    return tuple(sites)


def test_the_scan_finds_the_emitters():
    kinds = {kind for _file, kind, _f in emitted()}
    # a sample of each graph's events, so a broken scan cannot pass silently
    assert {"tool_call", "plan", "step_result", "reasoning", "handoff", "sub_agent", "error", "approval",
            "approval_requested", "question", "budget", "memory_recall", "model_text", "model_fallback"} <= kinds


def test_every_emitted_type_has_a_renderer_and_is_documented():
    kinds = {kind for _file, kind, _f in emitted()}
    assert not kinds - set(LINES), f"event types without a renderer in cli/lines.py: {sorted(kinds - set(LINES))}"
    undocumented = sorted(kinds - set(EVENT_TYPES))
    assert not undocumented, f"event types missing from events.EVENT_TYPES: {undocumented}"


def test_every_emitting_call_renders_as_readable_lines():
    """Each call site's fields (values it does not write literally become placeholder strings)
    render without an error, as lines of text with no JSON object in them."""
    for file, kind, fields in emitted():
        ev = {"event": kind, "ts": 1.0, **fields}
        line = format_event(ev)
        if (kind, fields.get("action")) in SILENT or (kind, None) in SILENT:
            continue
        assert line, f"{file}: {kind} {sorted(fields)} renders as nothing"
        assert '{"' not in line and "{'" not in line, f"{file}: {kind} renders as raw JSON: {line}"
        assert not line.lstrip().startswith(("[", f"· {kind}:")), f"{file}: {kind} fell back: {line}"


PLAN = {"steps": [
    {"id": "s1", "tool": "read_file", "args": {"path": "notes.txt"}},
    {"id": "s2", "tool": "calculator", "args": {"expression": "${s1}"}, "retries": 2},
    {"id": "s3", "tool": "write_file", "args": {"path": "o", "content": "x"}, "depends_on": ["s2"],
     "on_fail": "continue"},
]}


def test_planner_plan_shows_steps_tools_and_dependencies():
    line = format_event({"event": "plan", "valid": True, "plan": PLAN, "attempt": 1, "replan": 0})
    assert "0/0" not in line
    rows = line.splitlines()
    assert rows[0] == "  ☰ plan: 3 step(s)"
    assert rows[1].strip() == 's1: read_file({"path": "notes.txt"})'
    assert rows[2].strip() == 's2: calculator({"expression": "${s1}"})  after s1  (retries: 2)'  # implied by ${s1}
    assert rows[3].strip().endswith("after s2  (on_fail: continue)")
    revised = format_event({"event": "plan", "valid": True, "plan": PLAN, "attempt": 2, "replan": 1})
    assert revised.startswith("  ☰ revised plan (attempt 2, replan 1): 3 step(s)")
    rejected = format_event({"event": "plan", "valid": False, "errors": ["s9: unknown tool 'nope'"], "attempt": 1})
    assert rejected.splitlines() == ["  ✗ plan rejected (attempt 1): 1 error(s)",
                                     "      - s9: unknown tool 'nope'"]
    assert format_plan(PLAN).count("\n") == 2


def test_step_states():
    start = format_event({"event": "step_start", "step": "s1", "tool": "read_file", "depends_on": []})
    assert start == "  ▶ s1 read_file running"
    ok = {"event": "step_result", "step": "s1", "tool": "read_file", "status": "ok", "ok": True, "attempts": 1,
          "duration_s": 0.012, "preview": "hello"}
    assert format_event(ok) == "  ✓ s1 read_file ok 12 ms: hello"
    dual = {"event": "step_result", "step": "a1", "ok": True, "status": "ok", "preview": "4"}  # no duration sent
    assert format_event(dual) == "  ✓ a1 ok: 4"
    failed = {**ok, "status": "failed", "ok": False, "attempts": 3, "error": "timeout", "preview": None}
    assert format_event(failed) == "  ✗ s1 read_file failed after 3 attempts 12 ms: timeout"
    skipped = {"event": "step_result", "step": "s2", "tool": "calculator", "status": "skipped", "ok": False,
               "error": "s1 failed"}
    assert format_event(skipped) == "  ⤼ s2 calculator skipped: s1 failed"


def test_model_calls_of_every_graph_are_named():
    assert format_event({"event": "usage", "turn": 2, "input_tokens": 5, "output_tokens": 1}) == (
        "  · model turn 2: 5 tokens in, 1 out"
    )
    for node in ("plan", "synthesize", "decompose", "aggregate"):
        line = format_event({"event": "usage", "node": node, "input_tokens": 5, "output_tokens": 1})
        assert line == f"  · model call ({node}): 5 tokens in, 1 out"
    assert "?" not in format_event({"event": "usage", "node": "decide", "turn": 1})


def test_workers_and_sub_agents_carry_their_name_on_every_line():
    fleet_plan = format_event({"event": "plan", "agent": "w1", "valid": True, "plan": PLAN})
    assert all(row.startswith("  [w1] ") for row in fleet_plan.splitlines())
    assert '  [w1]     s1: read_file({"path": "notes.txt"})' in fleet_plan.splitlines()  # its indentation kept
    assert format_event({"event": "tool_call", "agent": "w2", "name": "calculator", "args": {"expression": "1"}}) == (
        "  [w2] → calculator(expression=1)"
    )


def test_error_reasoning_handoff_and_text_beside_calls_read_as_sentences():
    assert format_event({"event": "error", "node": "decide", "error": "no JSON", "iteration": 2}) == (
        "  ✗ error in decide: no JSON"
    )
    assert format_event({"event": "handoff", "from": "triage", "to": "math", "reason": "sums"}) == (
        "  ⇄ handoff triage → math: sums"
    )
    assert format_event({"event": "reasoning", "action": "execute", "iteration": 1, "objective": "add"}) == (
        "  ✎ decision 1: execute: add"
    )
    assert format_event({"event": "model_text", "text": "Let me check.", "turn": 1}) == "  💬 Let me check."


def test_memory_writes_read_as_sentences_whether_done_or_queued():
    queued = {"event": "memory_write", "deferred": True, "action": "queued", "namespace": ["memories"], "importance": 1}
    assert format_event(queued) == "  ◇ memory: the run's memory is written after the answer"
    done = {"event": "memory_write", "action": "stored", "key": "k1", "took_ms": 3.2}
    assert format_event(done) == "  ◇ memory: stored k1 (3 ms)"
