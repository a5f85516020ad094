"""``smart-agent eval SUITE``: run an eval suite and score it (docs/eval.md).

    smart-agent eval SUITE [--graph G] [--model M] [--repeat K] [--concurrency N] [--out DIR]
                           [--min-pass-rate R] [--record DIR | --replay DIR]
    smart-agent eval SUITE --compare a.yaml b.yaml      (or two --graph / two --model values)

Prints a table (case, result, failed check, tool calls, model calls, tokens, cost, seconds)
and writes ``results.json``, ``report.md`` and ``trajectories/`` under ``--out`` (with A/B:
``a/`` and ``b/`` each, and the comparison in the top ``results.json``). Exit 0 when every
side's pass rate reaches ``--min-pass-rate`` (default 0), 1 below it, 2 for a bad suite or flag.
The cases run in cli/eval_run.py; suites, checks and numbers are smart_agent/evaluation."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .cassette import add_cassette_args
from .middleware import add_middleware_args

EVAL_EXAMPLES = """examples:
  smart-agent eval evals/smoke.yaml --replay evals/cassettes      offline, deterministic (CI)
  smart-agent eval my_suite.yaml --model openai:gpt-4o --repeat 3 --out results/
  smart-agent eval my_suite.yaml --record cassettes/               record once against the real model
  smart-agent eval my_suite.yaml --graph agent --graph planner     A/B: two graphs on the same cases
  smart-agent eval my_suite.yaml --compare base.yaml candidate.yaml --min-pass-rate 0.9

exit codes: 0 pass rate reached, 1 below --min-pass-rate, 2 bad suite, config or flag"""


def _count(name: str, least: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number (got {text!r})") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}")
        return value

    parse.__name__ = name
    return parse


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1 (got {text!r})") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1 (got {text})")
    return value


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    from ..graphs import BUILDERS

    p = subparsers.add_parser(
        "eval", help="run an eval suite: pass/fail per case, tokens, cost; A/B two configs",
        description="Run every case of a suite (YAML or JSONL, docs/eval.schema.json) in its own workspace "
        "and thread, check its expectations, and report.", epilog=EVAL_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("suite", help="the suite file (.yaml, .yml or .jsonl)")
    p.add_argument("--graph", action="append", choices=list(BUILDERS), help="the graph of every case; twice: A/B")
    p.add_argument("--model", action="append", metavar="SPEC", help="provider:model of every case; twice: A/B")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="A/B: two config files (name, graph, model, settings)")
    p.add_argument("--repeat", type=_count("count", 1), default=1, metavar="K",
                   help="run every case K times: pass@1, pass@K, flaky cases (default 1)")
    p.add_argument("--concurrency", type=_count("count", 1), default=4, metavar="N",
                   help="cases running at once (default 4)")
    p.add_argument("--out", metavar="DIR", help="results folder (default eval-results/<suite>-<time>)")
    p.add_argument("--min-pass-rate", type=_rate, default=0.0, metavar="R",
                   help="exit 1 when the pass rate (pass@1) is below R, 0 to 1 (default 0)")
    p.add_argument("--json", action="store_true", help="print results.json on stdout instead of the table")
    add_middleware_args(p)
    add_cassette_args(p)
    p.set_defaults(handler=eval_command)
    return p


def _sides(args: argparse.Namespace) -> list[Any]:
    from ..evaluation.suite import RunConfig, SuiteError, load_config

    graphs, models = args.graph or [], args.model or []
    if len(graphs) > 2 or len(models) > 2:
        raise SuiteError("eval: give --graph and --model at most twice (two values: an A/B comparison)")
    if args.compare:
        if graphs or models:
            raise SuiteError("eval: --compare takes the graph and model from its two config files, not --graph/--model")
        return [load_config(args.compare[0]), load_config(args.compare[1])]
    if len(graphs) == 2 or len(models) == 2:
        pick = lambda values, i: values[i] if len(values) == 2 else (values[0] if values else None)  # noqa: E731
        return [RunConfig(graph=pick(graphs, i), model=pick(models, i)) for i in (0, 1)]
    return [RunConfig(graph=graphs[0] if graphs else None, model=models[0] if models else None)]


class _Progress:
    """A progress bar on a terminal (rich), else one line per finished run on stderr."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.done, self.label = total, 0, label
        self.bar: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(file=sys.stderr), transient=True,
            )
            self.task = self.bar.add_task(f"eval {label}", total=total)
            self.bar.start()

    def on_done(self, record: dict[str, Any]) -> None:
        self.done += 1
        verdict = "pass" if record["passed"] else f"FAIL ({record.get('failed_check') or 'failed'})"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=f"eval {self.label}: {record['case']} {verdict[:40]}")
        else:
            # the whole verdict (a replay miss names its request at the end), on one line
            verdict = " ".join(verdict.split())
            print(f"[{self.done}/{self.total}] {record['case']}: {verdict} ({record['seconds']:.1f} s)",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _middleware(args: argparse.Namespace) -> list[Any]:
    """``--middleware``: loaded (a bad reference: one line, exit 2)."""
    from ..policies.middleware import MiddlewareError, load_middleware

    try:
        return load_middleware(getattr(args, "middleware", None) or [])
    except MiddlewareError as exc:
        raise ValueError(str(exc)) from None


async def _run_side(suite: Any, config: Any, out: Path, args: argparse.Namespace, sub: str | None) -> dict:
    from ..evaluation.report import markdown_report, summarize
    from ..runs.redact import redact_value
    from .eval_run import EvalRun, run_cases

    def folder(base: str | None) -> str | None:
        return None if base is None else str(Path(base) / sub) if sub else base

    run = EvalRun(
        suite=suite, config=config, out=out, repeat=args.repeat, concurrency=args.concurrency,
        record=folder(args.record), replay=folder(args.replay), middleware=_middleware(args),
    )
    out.mkdir(parents=True, exist_ok=True)
    progress = _Progress(len(suite.cases) * args.repeat, config.label)
    started = time.perf_counter()
    try:
        runs = await run_cases(run, progress.on_done)
    finally:
        progress.close()
    results = {
        "suite": suite.path, "suite_name": suite.name,
        "config": {"name": config.label, "graph": config.graph, "model": config.model, "settings": config.settings,
                   "repeat": args.repeat, "concurrency": args.concurrency, "record": run.record, "replay": run.replay},
        **summarize(runs, [c.id for c in suite.cases], args.repeat),
    }
    results["summary"]["wall_seconds"] = round(time.perf_counter() - started, 3)
    results = redact_value(results)  # results.json, report.md and stdout hold no credential (redact.py)
    (out / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    (out / "report.md").write_text(markdown_report(results), encoding="utf-8")
    return results


async def eval_command(args: argparse.Namespace) -> int:
    from ..evaluation.report import compare, compare_table, table
    from ..evaluation.suite import load_suite
    from ..runs.redact import redact_value

    suite = load_suite(args.suite)
    sides = _sides(args)
    out = Path(args.out or Path("eval-results") / f"{Path(args.suite).stem}-{time.strftime('%Y%m%d-%H%M%S')}")
    if len(sides) == 1:
        results = await _run_side(suite, sides[0], out, args, None)
        print(json.dumps(results, default=str) if args.json else table(results), flush=True)
        if not args.json:
            print(f"results: {out / 'results.json'}, report: {out / 'report.md'}", file=sys.stderr)
        return 0 if results["summary"]["pass_rate"] >= args.min_pass_rate else 1
    a = await _run_side(suite, sides[0], out / "a", args, "a")
    b = await _run_side(suite, sides[1], out / "b", args, "b")
    comparison = compare(a, b, (sides[0].label, sides[1].label))
    top = {"suite": suite.path, "compare": comparison, "a": a["summary"], "b": b["summary"],
           "results": {"a": str(out / "a" / "results.json"), "b": str(out / "b" / "results.json")}}
    top = redact_value(top)
    (out / "results.json").write_text(json.dumps(top, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    (out / "report.md").write_text(
        f"# A/B: {sides[0].label} vs {sides[1].label}\n\n```text\n{compare_table(comparison)}\n```\n", encoding="utf-8"
    )
    if args.json:
        print(json.dumps(top, default=str), flush=True)
    else:
        print(f"A: {sides[0].label}\n{table(a)}\n\nB: {sides[1].label}\n{table(b)}\n\n{compare_table(comparison)}",
              flush=True)
        print(f"results: {out / 'results.json'}", file=sys.stderr)
    worst = min(a["summary"]["pass_rate"], b["summary"]["pass_rate"])
    return 0 if worst >= args.min_pass_rate else 1
