"""Eval expectations (smart_agent/evaluation/checks.py, judge.py): each kind passes on a
result that meets it and fails, with a detail, on one that does not; suite files are checked
with one-line errors naming the file, the case and the field; the numbers of an eval."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import REPO

from smart_agent.evaluation import load_suite, summarize
from smart_agent.evaluation.checks import args_match, check_result
from smart_agent.evaluation.judge import parse_verdict
from smart_agent.evaluation.report import compare
from smart_agent.evaluation.schema import SCHEMA
from smart_agent.evaluation.suite import SuiteError, load_config

RESULT = {
    "answer": "37*43 = 1591. Saved to answer.txt.",
    "status": "completed",
    "tool_calls": [
        {"name": "calculator", "args": {"expression": "37*43"}},
        {"name": "write_file", "args": {"path": "answer.txt", "content": "1591", "mode": {"append": False}}},
    ],
    "tool_calls_made": 2,
    "usage": {"model_calls": 3, "total_tokens": 900, "cost_usd": 0.0},
}


def one(expect, result=RESULT, **kw):
    checks = check_result(expect, result, **kw)
    assert len(checks) == 1, checks
    return checks[0]


@pytest.mark.parametrize(("expect", "passed"), [
    ({"contains": "1591"}, True),
    ({"contains": ["1591", "ANSWER.TXT"]}, True),  # case-insensitive, every text
    ({"contains": ["1591", "42"]}, False),
    ({"not_contains": "sorry"}, True),
    ({"not_contains": ["sorry", "1591"]}, False),
    ({"regex": r"=\s*1591\b"}, True),
    ({"regex": r"^1591$"}, False),
    ({"regex": "("}, False),  # an invalid pattern fails, saying so
    ({"equals": "37*43 = 1591. Saved to answer.txt."}, True),
    ({"equals": "1591"}, False),
    ({"tools_called": ["calculator"]}, True),
    ({"tools_called": ["calculator", "browse_url"]}, False),
    ({"tools_called": [{"name": "calculator", "args": {"expression": "37*43"}}]}, True),
    ({"tools_called": [{"name": "calculator", "args": {"expression": "6*7"}}]}, False),
    ({"tools_called": [{"name": "write_file", "args": {"path": "answer.txt", "mode": {"append": False}}}]}, True),
    ({"tools_not_called": ["browse_url"]}, True),
    ({"tools_not_called": ["write_file"]}, False),
    ({"max_tool_calls": 2}, True),
    ({"max_tool_calls": 1}, False),
    ({"max_model_calls": 3}, True),
    ({"max_model_calls": 2}, False),
    ({"max_tokens": 900}, True),
    ({"max_tokens": 899}, False),
    ({"status": "completed"}, True),
    ({"status": "interrupted"}, False),
])
def test_each_expectation_kind(expect, passed):
    check = one(expect)
    assert check["check"] == next(iter(expect))
    assert check["passed"] is passed
    assert bool(check["detail"]) is not passed  # a failure says why


def test_failed_run_fails_unless_its_status_is_expected():
    failed = {**RESULT, "status": "failed", "error": "model error"}
    checks = check_result({"contains": "1591"}, failed)
    assert [(c["check"], c["passed"]) for c in checks] == [("status", False), ("contains", True)]
    assert "model error" in checks[0]["detail"]
    assert [c["passed"] for c in check_result({"status": "failed"}, failed)] == [True]


def test_structured_response_checks():
    result = {**RESULT, "answer": "", "structured_response": {"city": "Paris", "population": 2100000}}
    schema = {"type": "object", "required": ["city", "population"], "properties": {"population": {"type": "integer"}}}
    assert one({"json_schema": schema}, result)["passed"]
    bad = one({"json_schema": {**schema, "properties": {"population": {"type": "string"}}}}, result)
    assert not bad["passed"] and bad["detail"].startswith("population:")
    assert one({"equals": {"city": "Paris", "population": 2100000}}, result)["passed"]
    assert not one({"equals": {"city": "Rome"}}, result)["passed"]
    assert one({"contains": "Paris"}, result)["passed"]  # no answer: the text checks read the structured response
    both = {**result, "answer": "The capital."}
    assert not one({"contains": "Paris"}, both)["passed"]
    assert one({"contains": "Paris", "on": "structured_response"}, both)["passed"]
    # an answer holding JSON is validated as JSON
    assert one({"json_schema": {"type": "object", "required": ["a"]}}, {**RESULT, "answer": '{"a": 1}'})["passed"]


def test_files_expectation(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("total: 1591\n")
    result = {**RESULT, "workspace": str(tmp_path)}
    assert one({"files": {"notes/a.txt": "1591"}}, result)["passed"]
    assert one({"files": {"notes/a.txt": ""}}, result)["passed"]  # exists
    missing = one({"files": {"notes/b.txt": ""}}, result)
    assert not missing["passed"] and "does not exist" in missing["detail"]
    assert not one({"files": {"notes/a.txt": ["1591", "42"]}}, result)["passed"]


def test_python_expectation(tmp_path, monkeypatch):
    (tmp_path / "my_checks.py").write_text(
        "def short(result, case):\n    return len(result['answer']) < 100\n"
        "def reason(result, case):\n    return 'too polite' if 'please' in result['answer'] else None\n"
        "def pair(result, case):\n    return (False, 'case ' + case['id'])\n"
        "def boom(result, case):\n    raise RuntimeError('bad check')\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    base = str(tmp_path)
    assert one({"python": "my_checks:short"}, base=base)["passed"]
    assert one({"python": ["my_checks:short", "my_checks:reason"]}, base=base)["passed"]
    assert one({"python": "my_checks:reason"}, {**RESULT, "answer": "please"}, base=base)["detail"].endswith(
        "too polite"
    )
    assert one({"python": "my_checks:pair"}, case={"id": "c1"}, base=base)["detail"] == "my_checks:pair: case c1"
    assert "RuntimeError: bad check" in one({"python": "my_checks:boom"}, base=base)["detail"]
    assert "cannot load" in one({"python": "my_checks:nope"}, base=base)["detail"]


def test_args_subset():
    assert args_match({"a": 1}, {"a": 1, "b": 2})
    assert not args_match({"a": 1, "c": 3}, {"a": 1, "b": 2})
    assert args_match({"n": 5}, {"n": "5"})  # a number the model sent as text
    assert not args_match({"a": {"x": 1}}, {"a": {"x": 2}})


def test_judge_verdict_parsing():
    assert parse_verdict('{"score": 0.8, "reason": "good"}') == (0.8, "good")
    assert parse_verdict('Here: ```json\n{"score": 7, "reason": "ok"}\n```') == (0.7, "ok")  # a 0-10 scale
    with pytest.raises(ValueError, match="no score"):
        parse_verdict("I think it is fine")


def write(tmp_path, text, name="suite.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "message"), [
    ("cases:\n  - id: a\n    task: t\n    expect: {contains: 5}\n", "case 'a': expect.contains: 5 is not one of"),
    ("cases:\n  - id: a\n    task: t\n    expect: {conains: x}\n", "case 'a': expect: Additional properties"),
    ("cases:\n  - id: a\n    expect: {contains: x}\n", "case 'a': task: required, missing"),
    ("cases:\n  - id: a\n    task: t\n    expect: {regex: \"(\"}\n",
     "case 'a': expect.regex: /(/ is not a valid pattern"),
    ("cases:\n  - id: a\n    task: t\n    expect: {json_schema: {type: 5}}\n",
     "case 'a': expect.json_schema: not a valid JSON Schema"),
    ("cases:\n  - id: a\n    task: t\n    expect: {python: no_such_module_k17:f}\n",
     "case 'a': expect.python: no_such_module_k17:f: cannot import no_such_module_k17"),
    ("cases:\n  - id: a\n    task: t\n    expect: {python: json:no_such_function}\n",
     "case 'a': expect.python: json:no_such_function: json has no function no_such_function"),
    ("cases:\n  - id: a\n    task: t\n    settings: {max_tool_cals: 3}\n",
     "case 'a': settings.max_tool_cals: not a run setting of the agent graph"),
    ("cases:\n  - id: a\n    task: t\n    settings: {max_tool_calls: -1}\n", "case 'a': settings.max_tool_calls:"),
    ("cases:\n  - id: a\n    task: t\n    graph: nope\n", "case 'a': graph: unknown graph 'nope'"),
    ("cases:\n  - id: a\n    task: t\n  - id: a\n    task: u\n", "case 'a': id: another case has this id"),
    ("cases:\n  - id: a\n    task: t\n    files: {../x: y}\n", "case 'a': files: '../x' must be a relative path"),
    ("cases:\n  - id: a\n    task: t\n    expect: {judge: {rubric: r, model: gpt}}\n",
     "case 'a': expect.judge.model: \"gpt\" is not provider:model"),
    ("cases:\n  - id: a b\n    task: t\n", "case 'a b': id: \"a b\" is not an id"),
    ("cases: [\n", "line 2: not valid YAML"),
    ("cases: []\n", "cases: [] should be non-empty"),
])
def test_suite_errors_are_one_line_naming_file_case_field(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}: ")
    assert message in line


def test_suite_yaml_and_jsonl_load_the_same_cases(tmp_path):
    yaml_suite = load_suite(write(tmp_path, (
        "name: s\ndefaults:\n  settings: {max_tool_calls: 4}\n  expect: {max_model_calls: 5}\n"
        "cases:\n  - id: mult\n    task: What is 37*43?\n    expect:\n      contains: '1591'\n"
        "      tools_called: [calculator]\n  - id: two\n    task: [hi, again]\n    settings: {max_tool_calls: 2}\n"
    )))
    assert [c.id for c in yaml_suite.cases] == ["mult", "two"]
    mult, two = yaml_suite.cases
    assert mult.expect == {"max_model_calls": 5, "contains": "1591", "tools_called": ["calculator"]}
    assert mult.settings == {"max_tool_calls": 4} and two.settings == {"max_tool_calls": 2}
    assert two.turns == ["hi", "again"]
    lines = [{"id": "mult", "task": "What is 37*43?", "expect": {"contains": "1591"}}]
    jsonl = load_suite(write(tmp_path, "\n".join(json.dumps(x) for x in lines) + "\n", "s.jsonl"))
    assert jsonl.cases[0].turns == ["What is 37*43?"] and jsonl.cases[0].expect == {"contains": "1591"}
    with pytest.raises(SuiteError, match=r"s2.jsonl: line 2: not valid JSON"):
        load_suite(write(tmp_path, '{"id": "a", "task": "t"}\n{oops\n', "s2.jsonl"))


def test_config_files(tmp_path):
    cfg = load_config(write(tmp_path, "name: base\ngraph: planner\nsettings: {max_tool_calls: 3}\n", "a.yaml"))
    assert (cfg.label, cfg.graph, cfg.settings) == ("base", "planner", {"max_tool_calls": 3})
    with pytest.raises(SuiteError, match=r"b.yaml: model:"):
        load_config(write(tmp_path, "model: nocolon\n", "b.yaml"))


def test_published_schema_is_generated():
    published = json.loads((REPO / "docs" / "eval.schema.json").read_text())
    assert published == SCHEMA, "regenerate: python -m smart_agent.evaluation.schema docs/eval.schema.json"


def run(case, passed, tokens=100, seconds=1.0, repeat=1):
    return {"case": case, "passed": passed, "repeat": repeat, "tokens": tokens, "seconds": seconds,
            "tool_calls": 1, "model_calls": 2, "cost_usd": 0.001, "failed_check": None if passed else "contains: x"}


def test_pass_at_k_and_flaky_cases():
    runs = [run("a", True, repeat=1), run("a", True, repeat=2), run("b", True, repeat=1), run("b", False, repeat=2),
            run("c", False, repeat=1), run("c", False, repeat=2)]
    out = summarize(runs, ["a", "b", "c"], 2)
    s = out["summary"]
    assert s["pass_at_1"] == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    assert s["pass_at_k"] == pytest.approx(2 / 3) and s["pass_at_2"] == s["pass_at_k"]
    assert s["flaky"] == ["b"] and (s["passed"], s["failed"]) == (1, 2)
    assert s["tokens"] == 600 and s["runs"] == 6
    assert [c["failed_check"] for c in out["cases"]] == [None, "contains: x", "contains: x"]


def test_compare_totals_and_ratios():
    a = summarize([run("x", True, 100, 1.0), run("y", False, 300, 3.0)], ["x", "y"], 1)
    b = summarize([run("x", True, 50, 2.0), run("y", True, 150, 2.0)], ["x", "y"], 1)
    cmp = compare(a, b, ("agent", "planner"))
    assert (cmp["a"], cmp["b"]) == ("agent", "planner")
    assert [c["differs"] for c in cmp["cases"]] == [False, True]
    assert cmp["totals"]["pass_rate"] == {"a": 0.5, "b": 1.0, "ratio": 2.0}
    assert cmp["totals"]["tokens"] == {"a": 400, "b": 200, "ratio": 0.5}
    assert cmp["totals"]["seconds"]["ratio"] == 1.0


def test_an_unknown_cost_stays_unknown_in_the_report():
    from smart_agent.evaluation.report import table

    priced = summarize([run("x", True), run("y", True)], ["x", "y"], 1)
    assert priced["summary"]["cost_usd"] == 0.002 and "$0.0020" in table(priced)
    unpriced = summarize([run("x", True), {**run("y", True), "cost_usd": None}], ["x", "y"], 1)
    assert unpriced["summary"]["cost_usd"] is None  # a model without a price: not a made-up 0
    assert [c["cost_usd"] for c in unpriced["cases"]] == [0.001, None]
    assert "cost unknown" in table(unpriced) and "?" in table(unpriced).splitlines()[3]
    assert compare(priced, unpriced, ("a", "b"))["totals"]["cost_usd"] == {"a": 0.002, "b": None, "ratio": None}


def test_a_run_error_is_in_the_report_once_and_whole_in_the_progress_line(capsys, monkeypatch):
    from smart_agent.cli.eval import _Progress
    from smart_agent.evaluation.report import markdown_report

    miss = ("ReplayMiss: replay: no recorded response in cass/mult (2 recorded) for chat/completions model=m "
            "with 2 messages, last user message 'What is 99*99?' (exact key 3df2, tolerant key 33c7)")
    failed = {**run("mult", False), "failed_check": f"error: {miss}", "error": miss,
              "checks": [{"check": "error", "passed": False, "detail": miss}]}
    report = markdown_report({"suite_name": "s", **summarize([failed], ["mult"], 1)})
    assert report.count(miss) == 1
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    _Progress(1, "default").on_done(failed)
    line = capsys.readouterr().err
    assert "last user message 'What is 99*99?'" in line and line.count("\n") == 1
