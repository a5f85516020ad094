"""``smart-agent eval`` in CLI processes against the scripted server: an independent suite
(written here) with mixed expectations, the server scripted to pass some cases and fail
others: each case's pass/fail, the results.json fields, report.md and trajectories,
``--min-pass-rate``; a recorded eval replays with the server stopped; ``--compare`` of two
graphs reports both columns and their ratios."""

from __future__ import annotations

import json
import sys

from conftest import cli_env, run_cli

from smart_agent.evaluation.judge import JUDGE_PROMPT
from smart_agent.testing.scripted_server import message_text, text, tool_call

SUITE = """
name: independent
cases:
  - id: mult
    task: What is 37*43?
    expect:
      contains: "1591"
      tools_called: [{name: calculator, args: {expression: "37*43"}}]
  - id: wrong-answer            # the server answers 41
    task: What is 6*7?
    expect: {contains: "42"}
  - id: no-tool                 # the server answers without the calculator
    task: Guess 2+2 without tools
    expect:
      tools_called: [calculator]
  - id: writes-file
    task: Save hello to out.txt
    files: {seed.txt: "seed"}
    expect:
      files: {out.txt: hello, seed.txt: seed}
      tools_not_called: [browse_url]
      regex: "^Saved"
  - id: too-many-calls
    task: What is 37*43?
    expect: {max_model_calls: 1}
  - id: judged-polite
    task: Say hi politely
    expect:
      judge: {rubric: "The answer is polite.", min_score: 0.5}
  - id: judged-rude
    task: Say hi rudely
    expect:
      judge: "The answer is rude."
  - id: custom
    task: Say hi politely
    expect:
      python: my_checks:mentions_hello
      not_contains: goodbye
"""
EXPECTED = {
    "mult": True, "wrong-answer": False, "no-tool": False, "writes-file": True, "too-many-calls": False,
    "judged-polite": True, "judged-rude": False, "custom": True,
}


def model(req):
    messages = req["messages"]
    system = " ".join(message_text(m.get("content")) for m in messages if m["role"] == "system")
    user = [message_text(m.get("content")) for m in messages if m["role"] == "user"][-1]
    results = [message_text(m.get("content")) for m in messages if m["role"] == "tool"]
    if JUDGE_PROMPT in system:
        score = 0.9 if "polite" in user.split("Task:")[0] else 0.2
        return text(json.dumps({"score": score, "reason": f"scored {score}"}))
    if "37*43" in user:
        return text(f"37*43 = {results[-1]}") if results else tool_call("calculator", {"expression": "37*43"})
    if "6*7" in user:
        return text("6*7 = 41") if results else tool_call("calculator", {"expression": "6*7"})
    if "out.txt" in user:
        return text("Saved hello to out.txt.") if results else tool_call(
            "write_file", {"path": "out.txt", "content": "hello\n"}
        )
    if "2+2" in user:
        return text("About 4.")
    return text("Hello there, nice to meet you!" if "politely" in user else "What do you want?")


def write_suite(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "my_checks.py").write_text(
        "def mentions_hello(result, case):\n    return 'hello' in result['answer'].lower() or 'no hello'\n"
    )
    return tmp_path / "suite.yaml"


def passed(results):
    return {c["id"]: c["passed"] for c in results["cases"]}


def test_independent_suite_pass_fail_results_and_exit_codes(scripted_server, tmp_path):
    srv = scripted_server(responder=model)
    suite, out = write_suite(tmp_path), tmp_path / "out"
    res = run_cli(["eval", str(suite), "--out", str(out), "--concurrency", "3"], env=cli_env(srv), timeout=300)
    assert res.returncode == 0, res.stderr  # no --min-pass-rate: the eval ran
    results = json.loads((out / "results.json").read_text())
    assert passed(results) == EXPECTED
    s = results["summary"]
    for key in ("cases", "runs", "passed", "failed", "pass_rate", "pass_at_1", "pass_at_k", "flaky", "tokens",
                "cost_usd", "seconds", "tool_calls", "model_calls", "wall_seconds"):
        assert key in s, key
    assert (s["cases"], s["passed"], s["failed"]) == (8, 4, 4) and s["pass_rate"] == 0.5
    by_id = {c["id"]: c for c in results["cases"]}
    assert by_id["wrong-answer"]["failed_check"].startswith("contains: no '42'")
    assert by_id["no-tool"]["failed_check"].startswith("tools_called: calculator was not called")
    assert by_id["too-many-calls"]["failed_check"] == "max_model_calls: 2 > 1"
    assert by_id["judged-rude"]["failed_check"].startswith("judge: score 0.20 < 0.70")
    run = by_id["mult"]["results"][0]
    for key in ("case", "passed", "checks", "status", "answer", "tools", "tool_calls", "model_calls", "tokens",
                "cost_usd", "seconds", "thread_id", "trajectory"):
        assert key in run, key
    assert run["answer"] == "37*43 = 1591" and run["tools"] == ["calculator"]
    assert (run["tool_calls"], run["model_calls"]) == (1, 2) and run["tokens"] > 0
    judged = by_id["judged-polite"]["results"][0]["checks"][-1]
    assert (judged["check"], judged["score"], judged["reason"]) == ("judge", 0.9, "scored 0.9")
    # every event and every message of a case
    trajectory = json.loads((out / run["trajectory"]).read_text())
    assert [m["role"] for m in trajectory["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert {"tool_call", "tool_result", "usage"} <= {e["event"] for e in trajectory["events"]}
    # each case in its own workspace, with its files
    assert (out / "workspaces" / "writes-file" / "out.txt").read_text() == "hello\n"
    assert not (out / "workspaces" / "mult" / "out.txt").exists()
    report = (out / "report.md").read_text()
    assert "4/8 cases passed" in report and "### wrong-answer" in report
    # the table: a row per case with its result and failed check
    rows = {line.split()[0]: line for line in res.stdout.splitlines()[2:] if line.strip()}
    assert "pass" in rows["mult"] and "FAIL" in rows["wrong-answer"] and "contains:" in rows["wrong-answer"]

    res = run_cli(["eval", str(suite), "--out", str(tmp_path / "o2"), "--min-pass-rate", "1.0"], env=cli_env(srv),
                  timeout=300)
    assert res.returncode == 1, res.stderr
    res = run_cli(["eval", str(suite), "--out", str(tmp_path / "o3"), "--min-pass-rate", "0.5"], env=cli_env(srv),
                  timeout=300)
    assert res.returncode == 0, res.stderr


def test_bad_suite_is_one_line_exit_2(tmp_path):
    suite = tmp_path / "bad.yaml"
    suite.write_text("cases:\n  - id: a\n    task: t\n    expect: {max_tool_calls: many}\n")
    res = run_cli(["eval", str(suite)], env=cli_env())
    assert res.returncode == 2
    line = f"smart-agent: {suite}: case 'a': expect.max_tool_calls: 'many' is not of type 'integer'"
    assert res.stderr.strip() == line

    suite.write_text("cases:\n  - id: a\n    task: t\n")  # a model with no key: one line before any case runs
    res = run_cli(["eval", str(suite), "--out", str(tmp_path / "out")], env=cli_env())
    assert res.returncode == 2
    assert res.stderr.startswith("smart-agent: model not available: ") and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "results.json").exists()


def test_recorded_eval_replays_with_the_server_stopped(scripted_server, tmp_path):
    srv = scripted_server(responder=model)
    suite, cassettes = write_suite(tmp_path), tmp_path / "cassettes"
    recorded = run_cli(["eval", str(suite), "--out", str(tmp_path / "rec"), "--record", str(cassettes), "--json"],
                       env=cli_env(srv), timeout=300)
    assert recorded.returncode == 0, recorded.stderr
    assert sorted(p.name for p in cassettes.iterdir()) == sorted(EXPECTED)
    srv.stop()
    offline = cli_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", SMART_AGENT_MODEL="openai:scripted-model",
                      OPENAI_API_KEY="x")
    replayed = run_cli(["eval", str(suite), "--out", str(tmp_path / "rep"), "--replay", str(cassettes), "--json"],
                       env=offline, timeout=300)
    assert replayed.returncode == 0, replayed.stderr
    a, b = json.loads(recorded.stdout), json.loads(replayed.stdout)
    assert passed(b) == passed(a) == EXPECTED

    def runs(results):
        return {c["id"]: (c["results"][0]["answer"], c["results"][0]["tools"]) for c in results["cases"]}

    assert runs(b) == runs(a)


def test_compare_two_graphs(scripted_server, tmp_path):
    def both(req):
        tools = {t["function"]["name"] for t in req.get("tools") or []}
        results = [m for m in req["messages"] if m["role"] == "tool"]
        if "submit_plan" in tools:
            return tool_call("submit_plan", {"steps": [{"id": "a", "tool": "calculator",
                                                        "args": {"expression": "37*43"}}]})
        if "calculator" in tools:
            return text(f"37*43 = {results[-1]['content']}") if results else tool_call(
                "calculator", {"expression": "37*43"}
            )
        return text("From the plan: " + ("1591" if "1591" in json.dumps(req["messages"]) else "unknown"))

    srv = scripted_server(responder=both)
    suite = tmp_path / "s.yaml"
    suite.write_text("cases:\n  - id: mult\n    task: What is 37*43?\n    expect: {contains: '1591'}\n"
                     "  - id: tools\n    task: What is 37*43 with a tool?\n    expect: {tools_called: [calculator]}\n")
    out = tmp_path / "out"
    res = run_cli(["eval", str(suite), "--graph", "agent", "--graph", "planner", "--out", str(out)], env=cli_env(srv),
                  timeout=300)
    assert res.returncode == 0, res.stderr
    top = json.loads((out / "results.json").read_text())
    cmp = top["compare"]
    assert (cmp["a"], cmp["b"]) == ("agent", "planner")
    assert [(c["id"], c["a"], c["b"]) for c in cmp["cases"]] == [("mult", True, True), ("tools", True, True)]
    assert set(cmp["totals"]) == {"pass_rate", "tokens", "cost_usd", "seconds", "tool_calls", "model_calls"}
    tokens = cmp["totals"]["tokens"]
    assert tokens["ratio"] == round(tokens["b"] / tokens["a"], 4)
    assert cmp["totals"]["pass_rate"] == {"a": 1.0, "b": 1.0, "ratio": 1.0}
    a = json.loads((out / "a" / "results.json").read_text())
    assert {r["graph"] for c in a["cases"] for r in c["results"]} == {"agent"}
    b = json.loads((out / "b" / "results.json").read_text())
    assert {r["graph"] for c in b["cases"] for r in c["results"]} == {"planner"}
    assert "A: agent" in res.stdout and "B: planner" in res.stdout and "B/A" in res.stdout
    assert f"{tokens['ratio']:.2f}x" in res.stdout


def test_repeat_reports_pass_at_k_and_flaky_cases(scripted_server, tmp_path):
    calls = []

    def coin(req):  # one model call per run: the first run says heads, the second tails
        calls.append(1)
        return text("heads" if len(calls) % 2 else "tails")

    srv = scripted_server(responder=coin)
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "coin", "task": "Toss a coin", "expect": {"contains": "heads"}}) + "\n"
                     + json.dumps({"id": "any", "task": "Toss again", "expect": {"regex": "heads|tails"}}) + "\n")
    out = tmp_path / "out"
    res = run_cli(["eval", str(suite), "--repeat", "2", "--concurrency", "1", "--out", str(out)], env=cli_env(srv),
                  timeout=300)
    assert res.returncode == 0, res.stderr
    s = json.loads((out / "results.json").read_text())["summary"]
    assert (s["runs"], s["repeat"], s["flaky"]) == (4, 2, ["coin"])
    assert (s["pass_at_1"], s["pass_at_2"], s["pass_at_k"]) == (0.75, 1.0, 1.0)
    assert sorted(p.name for p in (out / "trajectories").iterdir()) == [
        "any.r1.json", "any.r2.json", "coin.r1.json", "coin.r2.json"
    ]
    assert "flaky 1/2" in res.stdout and "flaky: coin" in res.stdout


def test_progress_bar_on_a_terminal(scripted_server, tmp_path):
    import threading
    from pathlib import Path

    import pexpect

    gate = threading.Event()

    def held(req):  # the first run waits until the bar has been seen
        gate.wait(60)
        return text("done")

    srv = scripted_server(responder=held)
    suite = tmp_path / "s.yaml"
    suite.write_text("cases:\n  - id: one\n    task: a\n  - id: two\n    task: b\n")
    exe = Path(sys.executable).with_name("smart-agent")
    child = pexpect.spawn(str(exe), ["eval", str(suite), "--out", str(tmp_path / "out"), "--concurrency", "1"],
                          env=cli_env(srv), encoding="utf-8", timeout=90, dimensions=(50, 200))
    child.expect_exact("0/2")  # the bar, while the first case waits for its model
    gate.set()
    child.expect_exact("2/2")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "[1/2]" not in child.before  # a terminal gets the bar, not the per-run lines of a pipe
