"""Running an eval's cases (``smart-agent eval``, cli/eval.py): each case in its own fresh
workspace and thread, in parallel up to ``--concurrency`` (asyncio tasks in this process),
each graph run in-process exactly as ``smart-agent run`` runs it (cli/run.py ``run_once``,
the same backends), under its own cassette session with ``--record`` / ``--replay``
(``DIR/<case id>``). Each run's result is checked (evaluation/checks.py, judge.py) and its
trajectory (every event and every message) written under ``--out``, its credentials redacted
(redact.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..evaluation.checks import check_result, tool_call_count
from ..evaluation.judge import judge_check
from ..evaluation.suite import Case, RunConfig, Suite
from ..runs.redact import redact_value

__all__ = ["EvalRun", "run_cases"]


@dataclass
class EvalRun:
    """One side of an eval: the suite under one config, where its files go."""

    suite: Suite
    config: RunConfig
    out: Path
    repeat: int = 1
    concurrency: int = 4
    record: str | None = None
    replay: str | None = None
    middleware: list[Any] = field(default_factory=list)  # --middleware (cli/middleware.py), every case's graph


def _context(case: Case, config: RunConfig, graph_name: str, workspace: Path) -> Any:
    """The case's context: its settings, the config's over them, its own workspace; the
    model of the config, else the case's, else the default."""
    from ..config.context import GRAPH_CONTEXTS, Context

    schema = GRAPH_CONTEXTS.get(graph_name, Context)
    names = {f.name for f in fields(schema)}
    values = {**case.settings, **config.settings, "workspace": str(workspace)}
    model = config.model or case.model
    if model:
        values["model"] = model
    return schema(**{k: v for k, v in values.items() if k in names})


def _ask(case: Case) -> Callable[[list[Any]], Any] | None:
    """``review:``: every pause answered with the case's decision (else the run stops there)."""
    if not case.review:
        return None
    from .resume import flag_decision
    from .review import resume_value

    review = case.review

    def ask(pending: list[Any]) -> Any:
        decisions = [
            flag_decision(i.value, approve=bool(review.get("approve")), reject=review.get("reject"),
                          answer=review.get("answer"))
            for i in pending
        ]  # fmt: skip
        return resume_value(pending, decisions)

    return ask


def _graph(
    graphs: dict[str, Any], graph_name: str, agents: str | None, backends: Any, middleware: list[Any] | None = None
) -> Any:
    """The compiled graph of that name (and agents file), built once and shared by the runs."""
    from .run import build_graph

    key = f"{graph_name} {agents or ''}"
    if key not in graphs:  # --agents: only the agent graph runs a team
        graphs[key] = build_graph(graph_name, backends.checkpointer, store=backends.store,
                             agents_file=agents if graph_name == "agent" else None, middleware=middleware)
    return graphs[key]


def _warm_up(run: EvalRun, graphs: dict[str, Any], backends: Any) -> None:
    """Before any run is timed: build the graphs and create the model clients, so the first runs
    (and side A of a comparison) do not pay the process's one-time start-up. A model that cannot
    be configured stops the eval here (``ModelConfigError``: one line, exit 2)."""
    from ..models.chat import ModelConfigError, load_chat_model

    for case in run.suite.cases:
        _graph(graphs, run.config.graph or case.graph or "agent", case.agents, backends, run.middleware)
    for model in sorted({run.config.model or c.model or _default_model() for c in run.suite.cases}):
        try:
            load_chat_model(model)
        except ModelConfigError:  # no key, no integration package: one line, exit 2, before any case runs
            if not run.replay:  # (a replay needs no key)
                raise
        except Exception:  # anything else fails the model's cases, each with the reason
            pass


def _default_model() -> str:
    from ..config.context import Context

    return Context().model


def _workspace(run: EvalRun, case: Case, repeat: int) -> Path:
    ws = run.out / "workspaces" / (case.id if run.repeat == 1 else f"{case.id}.r{repeat}")
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    for name, content in case.files.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return ws


def _session(run: EvalRun, case: Case) -> Any:
    from ..cassette import recording, replaying

    if run.replay:
        return replaying(Path(run.replay) / case.id)
    if run.record:
        return recording(Path(run.record) / case.id)
    return contextlib.nullcontext()


def _failed_check(checks: Sequence[dict[str, Any]]) -> str | None:
    bad = next((c for c in checks if not c["passed"]), None)
    if bad is None:
        return None
    return f"{bad['check']}: {bad['detail']}" if bad.get("detail") else bad["check"]


async def run_case(run: EvalRun, case: Case, repeat: int, graphs: dict[str, Any], backends: Any) -> dict[str, Any]:
    """Run one case once and check it: its run record (also written as a trajectory)."""
    from .outcome import result_json
    from .review import run_metadata
    from .run import run_once
    from .summary import RunSummary
    from .threads import message_record

    graph_name = run.config.graph or case.graph or "agent"
    workspace = _workspace(run, case, repeat)
    thread_id = f"eval-{case.id}-{uuid.uuid4().hex[:8]}"
    summary = RunSummary()
    messages: list[dict[str, Any]] = []
    result: dict[str, Any]
    checks: list[dict[str, Any]] = []
    started = time.perf_counter()
    ctx = None
    ran: float | None = None
    try:
        ctx = _context(case, run.config, graph_name, workspace)
        graph = _graph(graphs, graph_name, case.agents, backends, run.middleware)
        async with _session(run, case):
            final: dict[str, Any] = {}
            for turn in case.turns:
                final = await run_once(
                    graph, {"task": turn}, context=ctx, thread_id=thread_id, on_event=summary.add, ask=_ask(case),
                    metadata=run_metadata(graph_name, {**case.settings, **run.config.settings}),
                )
                if final.get("__interrupt__"):
                    break
            ran = time.perf_counter() - started  # the run's seconds: not the checks', not the judge's
            state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
            messages = [message_record(m) for m in (state.values or {}).get("messages", [])]
            result = result_json(final, thread_id, summary)
            result["workspace"] = str(workspace)
            checks = check_result(case.expect, result, case.as_dict(), base=str(Path(run.suite.path).parent))
            if "judge" in case.expect:
                checks.append(await judge_check(case.expect["judge"], case.as_dict(), result, ctx.model))
    except Exception as exc:  # the case fails with the error; the others go on
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        result = {"answer": "", "status": "failed", "error": error, "tool_calls": summary.tool_calls,
                  "usage": {**summary.usage, "cost_usd": None}, "workspace": str(workspace)}
        checks = [{"check": "error", "passed": False, "detail": error}]
    seconds = ran if ran is not None else time.perf_counter() - started
    usage = result.get("usage") or {}
    record: dict[str, Any] = {
        "case": case.id,
        "repeat": repeat,
        "graph": graph_name,
        "model": getattr(ctx, "model", None),
        "passed": all(c["passed"] for c in checks),
        "failed_check": _failed_check(checks),
        "checks": checks,
        "status": result.get("status"),
        "answer": result.get("answer", ""),
        "structured_response": result.get("structured_response"),
        "error": result.get("error") if result.get("status") != "completed" else None,
        "tools": [c.get("name") for c in result.get("tool_calls") or []],
        "tool_calls": tool_call_count(result),
        "model_calls": int(usage.get("model_calls") or 0),
        "tokens": int(usage.get("total_tokens") or 0),
        # input tokens read from the provider's prompt cache (cost_usd prices them at cached_input)
        "cached_tokens": int(usage.get("cache_read_tokens") or 0),
        "cost_usd": None if usage.get("cost_usd") is None else float(usage["cost_usd"]),  # None: unknown
        "seconds": round(seconds, 3),
        "thread_id": thread_id,
        "workspace": str(workspace),
        "trajectory": f"trajectories/{case.id if run.repeat == 1 else f'{case.id}.r{repeat}'}.json",
    }
    # no credential reaches the output folder (redact.py): an error quoting the base URL, a tool's URL argument
    record = redact_value(record)
    trajectory = redact_value({**record, "result": result, "events": summary.events, "messages": messages})
    path = run.out / record["trajectory"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trajectory, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return record


async def run_cases(run: EvalRun, on_done: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """Every case ``run.repeat`` times, up to ``run.concurrency`` at once; ``on_done(record)``
    after each run. The records in suite order."""
    from .backends import open_run_backends

    limit = asyncio.Semaphore(max(1, run.concurrency))
    graphs: dict[str, Any] = {}  # one compiled graph per name, shared by the runs
    async with open_run_backends() as backends:
        await asyncio.to_thread(_warm_up, run, graphs, backends)

        async def one(case: Case, repeat: int) -> dict[str, Any]:
            async with limit:
                record = await run_case(run, case, repeat, graphs, backends)
            on_done(record)
            return record

        jobs = [one(case, r) for case in run.suite.cases for r in range(1, run.repeat + 1)]
        return list(await asyncio.gather(*jobs))
