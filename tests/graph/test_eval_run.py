"""cli/eval_run.py in-process through the real langchain-openai client against the scripted
server: what a case's numbers count."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from smart_agent.cli import eval_run
from smart_agent.evaluation import load_suite
from smart_agent.evaluation.suite import RunConfig
from smart_agent.testing.scripted_server import text


async def test_a_cases_seconds_and_tokens_leave_out_the_judge(openai_server, tmp_path, monkeypatch):
    clock = {"judged": 0.0}
    monkeypatch.setattr(eval_run, "time", SimpleNamespace(perf_counter=lambda: time.perf_counter() + clock["judged"]))

    def model(request):
        if "rubric" in request["messages"][0]["content"].lower():  # the judge: 1000 s pass on eval_run's clock
            clock["judged"] += 1000.0
            return text('{"score": 0.9, "reason": "warm"}')
        return text("Hello there!")

    srv = openai_server(responder=model)
    suite_file = tmp_path / "s.yaml"
    suite_file.write_text(
        "defaults: {settings: {memory: false, tools: [calculator]}}\n"
        "cases:\n  - id: hi\n    task: Greet me.\n    expect: {judge: {rubric: A greeting., model: openai:judge}}\n"
    )
    run = eval_run.EvalRun(suite=load_suite(suite_file), config=RunConfig(model="openai:scripted-model"),
                           out=tmp_path / "out", concurrency=1)
    [record] = await eval_run.run_cases(run, lambda record: None)
    assert record["passed"] and record["checks"][0]["score"] == 0.9
    assert clock["judged"] == 1000.0 and record["seconds"] < 1000.0  # the run's time, not the judge's
    assert record["model_calls"] == 1  # the judge's call is not the case's
    assert [r["model"] for r in srv.requests] == ["scripted-model", "judge"]


async def test_concurrency_runs_that_many_cases_at_once(openai_server, tmp_path):
    cond, seen = threading.Condition(), {"active": 0, "peak": 0, "arrived": 0}

    def model(request):  # requests go in pairs: each waits for its partner to arrive (at most 10 s)
        with cond:
            seen["active"] += 1
            seen["arrived"] += 1
            seen["peak"] = max(seen["peak"], seen["active"])
            partner = seen["arrived"] + seen["arrived"] % 2
            cond.notify_all()
            cond.wait_for(lambda: seen["arrived"] >= partner, timeout=10)
            if partner == 2:  # the first pair also gives a third case 1 s to come in (it must not)
                cond.wait_for(lambda: seen["arrived"] > 2, timeout=1)
        with cond:
            seen["active"] -= 1
        return text("done")

    srv = openai_server(responder=model)
    suite_file = tmp_path / "s.yaml"
    suite_file.write_text("defaults: {settings: {memory: false, tools: [calculator]}}\ncases:\n" + "".join(
        f"  - id: c{i}\n    task: Task {i}.\n    expect: {{contains: done}}\n" for i in range(4)
    ))
    run = eval_run.EvalRun(suite=load_suite(suite_file), config=RunConfig(model="openai:scripted-model"),
                           out=tmp_path / "out", concurrency=2)
    records = await eval_run.run_cases(run, lambda record: None)
    assert seen["peak"] == 2 and len(srv.requests) == 4
    assert [r["case"] for r in records] == ["c0", "c1", "c2", "c3"] and all(r["passed"] for r in records)
