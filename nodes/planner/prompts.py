"""Prompts of the planner graph (snapshot-tested: a change here is a visible diff)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...replies.feedback import error_list
from ...runs.events import clip as shorten
from ...tools.registry import ToolRegistry
from .refs import as_text

PLANNER_SYSTEM = """\
You are the planner of smart-agent. You do not run tools and you do not answer the task yourself: \
you compile the task into a plan, a DAG of tool calls that a deterministic executor runs exactly as \
written. Afterwards a separate step writes the final answer from the results, so the plan only has \
to gather, compute or produce what that answer needs.

## Tools
{tools}

## Plan format
A JSON object {{"steps": [...]}}. Each step:
- "id": unique id such as "s1" (letters, digits, "_" or "-"; no dots)
- "tool": one of the tool names above
- "args": an object matching that tool's arguments
- "depends_on": ids of steps that must finish first (optional, default [])
- "retries": extra attempts after a failure (optional)
- "timeout_s": seconds one attempt may take (optional)
- "on_fail": "halt" (default: stop and report) or "continue" (record the failure, skip the \
steps that depend on it, run the rest)

## Using earlier results
- "${{s1}}" as a whole argument value is replaced by the output of step s1.
- "${{s1.key}}" (or "${{s1.items[0].url}}") is a field of s1's JSON output.
- "${{s1}}" inside a longer string is inserted as text, e.g. "Summarize: ${{s1}}".
- A reference makes the step depend on the referenced step; write "$${{" for a literal "${{".

## Rules
- Use only the tools listed, with arguments that match their schemas.
- Steps that do not depend on each other run in parallel: do not chain independent steps.
- No cycles; a step can only use the outputs of steps it depends on.
- Use "on_fail": "continue" for steps the answer can do without.
- If no tool is needed, submit {{"steps": []}}.

Submit the plan by calling the submit_plan tool once. If you cannot call tools, reply with the \
JSON object only."""

TASK_PROMPT = "Task: {task}"

HISTORY_PROMPT = """\
Conversation so far (earlier turns of this thread; the task below is the latest request):
{history}

"""


def with_history(prompt: str, history: str) -> str:
    """A planning prompt preceded by the thread's earlier turns (Assistant mode), when there are any."""
    return HISTORY_PROMPT.format(history=history) + prompt if history else prompt

FEEDBACK_PROMPT = """\
The plan was rejected and nothing was executed. Fix every problem below and submit the complete \
corrected plan:
{errors}"""

REPLAN_PROMPT = """\
Task: {task}

The plan below was executed and halted on a failure.

Plan:
{plan}

Execution so far:
{trace}

Failure: {failure}

Finished steps are kept and will not run again: depend on them and reference their outputs by id \
(for example ${{{example}}}). Submit a revised plan for the remaining work only, using new step ids \
({used}). Submit {{"steps": []}} if nothing more can or should be done."""

SYNTHESIZE_SYSTEM = """\
You write the final answer to the user's task from the execution trace of a plan of tool calls. \
Use only what the trace shows; do not invent results. If steps failed, were skipped or never ran, \
say what is missing and why. Answer the task directly and concisely."""

SYNTHESIZE_PROMPT = """\
Task: {task}

Execution trace ({summary}):
{trace}
{notes}
Write the final answer."""

OUTPUT_CHARS = 4000


def compact_schema(schema: Any) -> Any:
    """A JSON schema without ``title`` noise (property names are kept)."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                out[key] = {name: compact_schema(sub) for name, sub in value.items()}
            else:
                out[key] = compact_schema(value)
        return out
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]
    return schema


def describe_tools(registry: ToolRegistry) -> str:
    if not len(registry):
        return "(no tools are available: submit {\"steps\": []})"
    lines = []
    for item in registry.describe():
        meta = item.get("meta")
        notes = []
        if getattr(meta, "side_effects", False):
            notes.append("has side effects")
        if timeout_s := getattr(meta, "timeout_s", None):
            notes.append(f"timeout {timeout_s:g} s")
        suffix = f" [{', '.join(notes)}]" if notes else ""
        schema = compact_schema(item["parameters"])
        if isinstance(schema, dict):
            schema.pop("description", None)  # the tool's description, already shown
        params = json.dumps(schema, ensure_ascii=False, sort_keys=True)
        description = " ".join(str(item.get("description") or "").split())
        lines.append(f"- {item['name']}: {description}{suffix}\n  arguments: {params}")
    return "\n".join(lines)


def planner_system_prompt(registry: ToolRegistry) -> str:
    return PLANNER_SYSTEM.format(tools=describe_tools(registry))


def feedback_prompt(errors: list[str]) -> str:
    return FEEDBACK_PROMPT.format(errors=error_list(errors))


def clip(text: str, limit: int = OUTPUT_CHARS) -> str:
    """``events.clip`` with the planner's default length and its marker (pinned by the snapshots)."""
    return shorten(text, limit, "... [{cut} more characters]", within=False)


def format_trace(trace: Sequence[Mapping[str, Any]], *, output_chars: int = OUTPUT_CHARS) -> str:
    if not trace:
        return "(no steps)"
    lines = []
    for entry in trace:
        args = clip(json.dumps(entry.get("args") or {}, ensure_ascii=False, default=str), 600)
        head = f"- {entry['id']} {entry['tool']}({args}): {entry['status']}"
        if entry.get("attempts", 0) and entry["attempts"] > 1:
            head += f" after {entry['attempts']} attempts"
        lines.append(head)
        if entry["status"] == "ok":
            lines.append("  output: " + clip(as_text(entry.get("output")), output_chars).replace("\n", "\n  "))
        elif entry.get("error"):
            lines.append("  error: " + clip(str(entry["error"]), 1000))
    return "\n".join(lines)


def format_plan_json(plan: Mapping[str, Any] | None) -> str:
    """A plan as JSON with one step per line."""
    steps = list((plan or {}).get("steps") or [])
    if not steps:
        return '{"steps": []}'
    body = ",\n".join("  " + json.dumps(step, ensure_ascii=False) for step in steps)
    return '{"steps": [\n' + body + "\n]}"


def replan_prompt(
    task: str,
    plan: Mapping[str, Any] | None,
    trace: Sequence[Mapping[str, Any]],
    halt: Mapping[str, Any] | None,
    used_ids: list[str],
) -> str:
    finished = [e["id"] for e in trace if e["status"] == "ok"]
    errors = (halt or {}).get("errors") or {}
    failure = "; ".join(f"step {sid!r}: {err}" for sid, err in errors.items()) or "unknown"
    return REPLAN_PROMPT.format(
        task=task,
        plan=format_plan_json(plan),
        trace=format_trace(trace),
        failure=failure,
        example=finished[0] if finished else "s1",
        used="not " + ", ".join(used_ids) if used_ids else "any",
    )


def synthesize_prompt(task: str, trace: Sequence[Mapping[str, Any]], notes: list[str]) -> str:
    tally: dict[str, int] = {}
    for e in trace:
        tally[e["status"]] = tally.get(e["status"], 0) + 1
    summary = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in tally.items()) or "no steps"
    note_text = ("\n" + "\n".join(f"Note: {n}" for n in notes) + "\n") if notes else ""
    return SYNTHESIZE_PROMPT.format(task=task, summary=summary, trace=format_trace(trace), notes=note_text)
