"""The plan format, references, JSON repair and validation (pure, no graph)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO
from planner_support import make_registry

from smart_agent.nodes.planner.refs import (
    ReferenceResolutionError,
    find_refs,
    malformed_placeholders,
    referenced_steps,
    resolve,
)
from smart_agent.nodes.planner.schema import Plan, inline_refs, plan_json_schema, submit_plan_tool
from smart_agent.nodes.planner.validate import find_cycles, validate_plan
from smart_agent.replies.parse import ReplySyntaxError as PlanSyntaxError
from smart_agent.replies.parse import extract_json, repair_json


@pytest.fixture
def registry():
    return make_registry()[0]


def codes(errors):
    return sorted({e.split(":", 1)[0] for e in errors})


# -- schema ----------------------------------------------------------------------
def test_minimal_step_needs_only_id_tool_args():
    plan = Plan.model_validate({"steps": [{"id": "s1", "tool": "echo", "args": {"text": "hi"}}]})
    step = plan.steps[0]
    assert (step.depends_on, step.retries, step.timeout_s, step.on_fail) == ([], None, None, "halt")


def test_published_schema_is_generated_from_the_model():
    schema = plan_json_schema()
    assert schema["properties"]["steps"]["items"]["$ref"] == "#/$defs/Step"
    step = schema["$defs"]["Step"]
    assert sorted(step["required"]) == ["args", "id", "tool"]
    assert step["properties"]["on_fail"]["enum"] == ["halt", "continue"]
    published = json.loads((REPO / "docs" / "plan.schema.json").read_text())
    assert published == json.loads(json.dumps(schema)), (
        "regenerate: python -m smart_agent.nodes.planner.schema docs/plan.schema.json"
    )


def test_submit_plan_tool_has_no_refs():
    tool = submit_plan_tool()
    assert tool["function"]["name"] == "submit_plan"
    assert "$ref" not in json.dumps(tool) and "$defs" not in json.dumps(tool)
    assert inline_refs(plan_json_schema())["properties"]["steps"]["items"]["required"] == ["id", "tool", "args"]


# -- references ------------------------------------------------------------------
OUTPUTS = {
    "s1": "plain text",
    "s2": {"title": "T", "items": [{"url": "u0"}, {"url": "u1"}], "n": 3},
    "s3": '{"nested": {"k": [10, 20]}}',
    "s4": [1, 2, 3],
}


@pytest.mark.parametrize(
    "value, expected",
    [
        ("${s1}", "plain text"),
        ("${s2}", OUTPUTS["s2"]),
        ("${s2.title}", "T"),
        ("${s2.n}", 3),
        ("${s2.items[1].url}", "u1"),
        ("${s2.items.0.url}", "u0"),
        ("${s3.nested.k[1]}", 20),
        ("${s4[-1]}", "${s4[-1]}"),  # negative indices are not reference syntax: left as text
        ("${s4.2}", 3),
        ("Title: ${s2.title} / ${s1}", "Title: T / plain text"),
        ("n=${s2.n} items=${s2.items[0]}", 'n=3 items={"url":"u0"}'),
        ("literal $${s1}", "literal ${s1}"),
        ({"a": ["${s2.title}", {"b": "${s2.n}"}]}, {"a": ["T", {"b": 3}]}),
        (42, 42),
    ],
)
def test_resolve(value, expected):
    assert resolve(value, OUTPUTS) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        ("${s2.missing}", "no key 'missing'"),
        ("${s2.items[5]}", "out of range"),
        ("${s1.key}", "not JSON"),
        ("${s4.x}", "not an index"),
        ("${s9}", "has no output"),
    ],
)
def test_resolve_errors(value, message):
    with pytest.raises(ReferenceResolutionError, match=message):
        resolve(value, OUTPUTS)


def test_resolution_copies_values():
    out = resolve("${s2}", OUTPUTS)
    out["title"] = "changed"
    assert OUTPUTS["s2"]["title"] == "T"


def test_find_refs_and_malformed():
    args = {"a": "${s1.x[0]} and ${s2}", "b": ["${s3}", "$${s4}"], "c": "${bad id}"}
    assert [r.step for r in find_refs(args)] == ["s1", "s2", "s3"]
    assert find_refs(args)[0].path == ("x", 0)
    assert referenced_steps(args) == ["s1", "s2", "s3"]
    assert malformed_placeholders(args) == ["${bad id}"]
    assert malformed_placeholders({"x": "${s1.}"}) == ["${s1.}"]


# -- JSON extraction and repair --------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"steps": [{"id": "s1", "tool": "echo", "args": {"text": "hi"}}]}',
        (
            'Here is the plan:\n```json\n'
            '{"steps": [{"id": "s1", "tool": "echo", "args": {"text": "hi"}}]}\n```\nGood luck.'
        ),
        "Plan: {'steps': [{'id': 's1', 'tool': 'echo', 'args': {'text': 'hi'}}]}",
        '{"steps": [{"id": "s1", "tool": "echo", "args": {"text": "hi"},},],}',
        '{"steps": [ // the only step\n {"id": "s1", "tool": "echo", /* inline */ "args": {"text": "hi"}}]}',
        '{steps: [{id: "s1", tool: "echo", args: {text: "hi"}}]}',
        '{"steps": [{"id": "s1", "tool": "echo", "args": {"text": "hi"}}',  # cut short
        '[{"id": "s1", "tool": "echo", "args": {"text": "hi"}}]',  # a bare list of steps
        "{“steps”: [{“id”: “s1”, “tool”: “echo”, “args”: {“text”: “hi”}}]}",
        '```\n{"steps": [{"id": "s1" "tool": "echo" "args": {"text": "hi"}}]}\n```',  # missing commas
    ],
)
def test_plan_text_is_extracted_and_repaired(text, registry):
    result = validate_plan(text, registry)
    assert result.ok, result.errors
    assert result.plan.steps[0].args == {"text": "hi"}


def test_python_literals_are_repaired():
    assert json.loads(repair_json("{'a': True, 'b': None, 'c': False,}")) == {"a": True, "b": None, "c": False}
    assert json.loads(repair_json('{"a": "True stays a string"}')) == {"a": "True stays a string"}
    assert json.loads(repair_json("{'q': 'it\\'s'}")) == {"q": "it's"}


def test_strictly_valid_candidate_wins():
    assert extract_json('Plan [final]: {"steps": []}') == {"steps": []}


@pytest.mark.parametrize(
    "text, message",
    [("", "empty"), ("I cannot plan this.", "no JSON object"), ('{"steps": [{"id": @@}]}', "invalid JSON")],
)
def test_unreadable_text(text, message):
    with pytest.raises(PlanSyntaxError, match=message):
        extract_json(text)


def test_syntax_error_is_a_validation_error(registry):
    result = validate_plan("no plan here", registry)
    assert not result.ok and codes(result.errors) == ["syntax"]


# -- validation: every kind of error ---------------------------------------------
def step(id, tool="echo", args=None, **kw):
    return {"id": id, "tool": tool, "args": {"text": "x"} if args is None else args, **kw}


def test_valid_plan_is_normalised_with_implied_dependencies(registry):
    plan = {
        "steps": [step("a"), step("b", args={"text": "${a}"}), step("c", args={"text": "${a} ${b}"}, depends_on=["a"])]
    }
    result = validate_plan(plan, registry)
    assert result.ok, result.errors
    assert [s.depends_on for s in result.plan.steps] == [[], ["a"], ["a", "b"]]


def test_empty_plan_is_valid(registry):
    assert validate_plan({"steps": []}, registry).ok


@pytest.mark.parametrize(
    "payload, code",
    [
        ("[1, 2]", "schema"),
        ({"stepz": []}, "schema"),
        ({"steps": "s1"}, "schema"),
        ({"steps": [{"id": "s1", "tool": "echo"}]}, "schema"),  # args missing
        ({"steps": [{"id": "s.1", "tool": "echo", "args": {}}]}, "schema"),  # dot in id
        ({"steps": [step("s1", on_fail="explode")]}, "schema"),
        ({"steps": [step("s1", depend_on=["x"])]}, "schema"),  # unknown field
        ({"steps": [step("s1", retries=-1)]}, "schema"),
        ({"steps": [step("s1", timeout_s=0)]}, "schema"),
        ({"steps": [step(f"s{i}") for i in range(201)]}, "schema"),  # too many steps
        ({"steps": [step("s1"), step("s1")]}, "duplicate_id"),
        ({"steps": [step("s1", tool="browse")]}, "unknown_tool"),
        ({"steps": [step("s1", tool="add", args={"a": 1})]}, "invalid_args"),  # missing b
        ({"steps": [step("s1", tool="add", args={"a": "one", "b": 2})]}, "invalid_args"),  # wrong type
        ({"steps": [step("s1", tool="add", args={"a": 1, "b": 2, "c": 3})]}, "invalid_args"),  # unknown arg
        ({"steps": [step("s1", depends_on=["nope"])]}, "unknown_dependency"),
        ({"steps": [step("s1", args={"text": "${nope}"})]}, "invalid_reference"),
        ({"steps": [step("s1", args={"text": "${s1}"})]}, "invalid_reference"),  # own output
        ({"steps": [step("s1", args={"text": "${s1 .x}"})]}, "invalid_reference"),  # malformed
        ({"steps": [step("s1", depends_on=["s1"])]}, "cycle"),
        ({"steps": [step("a", depends_on=["b"]), step("b", depends_on=["a"])]}, "cycle"),
        (
            {
                "steps": [
                    step("a", args={"text": "${b}"}),
                    step("b", args={"text": "${c}"}),
                    step("c", args={"text": "${a}"}),
                ]
            },
            "cycle",
        ),
        ({"steps": [step("a", args={"text": "${b}"}), step("b", depends_on=["a"])]}, "not_ancestor"),
    ],
)
def test_each_validation_error(payload, code, registry):
    result = validate_plan(payload, registry)
    assert not result.ok
    assert code in codes(result.errors), result.errors


def test_all_errors_are_reported_together(registry):
    plan = {
        "steps": [
            step("s1", tool="nope"),
            step("s1"),
            step("s2", tool="add", args={"a": "x"}),
            step("s3", depends_on=["ghost"]),
            step("s4", depends_on=["s5"]),
            step("s5", depends_on=["s4"]),
            {"id": "s6", "tool": "echo"},
        ]
    }
    result = validate_plan(plan, registry)
    assert codes(result.errors) == [
        "cycle",
        "duplicate_id",
        "invalid_args",
        "schema",
        "unknown_dependency",
        "unknown_tool",
    ]
    text = "\n".join(result.errors)
    assert "s4 -> s5 -> s4" in text and "'ghost'" in text and "Available tools" in text
    # a step whose schema failed still counts as a known id (no cascade of unknown dependencies)
    assert (
        validate_plan({"steps": [{"id": "a", "tool": "echo"}, step("b", depends_on=["a"])]}, registry)
        .errors[0]
        .startswith("schema")
    )


def test_unknown_tool_suggests_the_closest_name(registry):
    (error,) = validate_plan({"steps": [step("s1", tool="ecoh")]}, registry).errors
    assert "Did you mean 'echo'?" in error


def test_placeholders_are_valid_argument_values(registry):
    plan = {
        "steps": [
            step("s1", tool="add", args={"a": 1, "b": 2}),
            step("s2", tool="add", args={"a": "${s1.sum}", "b": "${s1.sum}"}),  # ints from a reference
            step("s3", tool="echo", args={"text": "sum is ${s2.sum}"}),
        ]
    }
    assert validate_plan(plan, registry).ok
    # a reference does not excuse a missing argument or a wrong literal next to it
    bad = {"steps": [step("s1", tool="add", args={"a": 1, "b": 2}), step("s2", tool="add", args={"a": "${s1.sum}"})]}
    assert "missing required argument 'b'" in validate_plan(bad, registry).errors[0]


def test_json_schema_tools_are_validated_too(registry):
    from langchain_core.tools import StructuredTool

    def lookup(**kwargs):
        return kwargs

    tool = StructuredTool.from_function(
        lookup,
        name="lookup",
        description="Look up a key.",
        args_schema={
            "type": "object",
            "properties": {"key": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["key"],
        },
    )
    registry.register(tool)
    assert validate_plan({"steps": [step("s1", tool="lookup", args={"key": "k", "n": 2})]}, registry).ok
    errors = validate_plan({"steps": [step("s1", tool="lookup", args={"n": "two", "x": 1})]}, registry).errors
    text = "\n".join(errors)
    assert "missing required argument 'key'" in text and "unknown argument 'x'" in text and "'n'" in text
    assert validate_plan(
        {"steps": [step("s0"), step("s1", tool="lookup", args={"key": "k", "n": "${s0}"})]}, registry
    ).ok


def test_replan_validation_knows_finished_and_failed_steps(registry):
    finished, used = ["s1"], ["s1", "s2", "s3"]
    ok = {"steps": [step("r1", args={"text": "${s1}"}, depends_on=["s1"])]}
    result = validate_plan(ok, registry, finished=finished, used_ids=used)
    assert result.ok and result.plan.steps[0].depends_on == ["s1"]
    reuse = validate_plan({"steps": [step("s2")]}, registry, finished=finished, used_ids=used)
    assert codes(reuse.errors) == ["duplicate_id"]
    ref_failed = validate_plan(
        {"steps": [step("r1", args={"text": "${s2}"})]}, registry, finished=finished, used_ids=used
    )
    assert codes(ref_failed.errors) == ["invalid_reference"] and "failed or was skipped" in ref_failed.errors[0]
    dep_failed = validate_plan({"steps": [step("r1", depends_on=["s3"])]}, registry, finished=finished, used_ids=used)
    assert codes(dep_failed.errors) == ["unknown_dependency"]


def test_find_cycles_reports_each_cyclic_group_once():
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["e"], "e": ["d"], "f": []}
    assert find_cycles(["a", "b", "c", "d", "e", "f"], edges) == [["a", "b", "c", "a"], ["d", "e", "d"]]


# -- prompts are snapshot-tested: a change is a visible diff ----------------------------
SNAPSHOTS = Path(__file__).parent / "snapshots"


def _check_snapshot(name: str, text: str) -> None:
    import os

    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    # A missing snapshot fails: a run that creates its own reference proves nothing.
    assert path.exists(), f"no snapshot {path}; create it with UPDATE_SNAPSHOTS=1, review it and commit it"
    assert text == path.read_text(encoding="utf-8"), (
        f"prompt changed; review and rerun with UPDATE_SNAPSHOTS=1 ({path})"
    )


def test_planner_prompt_snapshot(registry):
    from smart_agent.nodes.planner.prompts import planner_system_prompt

    _check_snapshot("planner_system_prompt.txt", planner_system_prompt(registry))


def test_replan_and_synthesis_prompt_snapshot():
    from smart_agent.nodes.planner.prompts import replan_prompt, synthesize_prompt

    trace = [
        {
            "id": "s1",
            "tool": "echo",
            "args": {"text": "a"},
            "status": "ok",
            "output": "a",
            "error": None,
            "attempts": 1,
        },
        {"id": "s2", "tool": "fail", "args": {}, "status": "failed", "output": None, "error": "boom", "attempts": 2},
        {
            "id": "s3",
            "tool": "echo",
            "args": {"text": "${s2}"},
            "status": "not_run",
            "output": None,
            "error": None,
            "attempts": 0,
        },
    ]
    plan = {"steps": [{"id": "s1", "tool": "echo", "args": {"text": "a"}}]}
    text = replan_prompt("the task", plan, trace, {"steps": ["s2"], "errors": {"s2": "boom"}}, ["s1", "s2", "s3"])
    text += "\n\n-----\n\n" + synthesize_prompt("the task", trace, ["Execution halted."])
    _check_snapshot("planner_replan_synthesis_prompts.txt", text)


def test_a_missing_snapshot_fails_and_is_not_written(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "SNAPSHOTS", tmp_path)  # what _check_snapshot reads
    monkeypatch.delenv("UPDATE_SNAPSHOTS", raising=False)
    with pytest.raises(AssertionError, match="UPDATE_SNAPSHOTS=1"):
        _check_snapshot("new.txt", "text")
    assert not (tmp_path / "new.txt").exists()
    monkeypatch.setenv("UPDATE_SNAPSHOTS", "1")
    _check_snapshot("new.txt", "text")  # written on request, then compared
    assert (tmp_path / "new.txt").read_text() == "text"
