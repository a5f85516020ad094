"""An eval's numbers: per-case results over ``--repeat K`` runs (pass@1, pass@K, flaky
cases), the totals, the text table, ``report.md``, and the A/B comparison of two sides."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TOTALS", "compare", "compare_table", "markdown_report", "summarize", "table"]

# (key in a case row and the totals, header, format)
COLUMNS = [
    ("tool_calls", "tools", "{:.0f}"), ("model_calls", "model", "{:.0f}"), ("tokens", "tokens", "{:.0f}"),
    ("cost_usd", "cost $", "{:.4f}"), ("seconds", "seconds", "{:.2f}"),
]
TOTALS = ["pass_rate", "tokens", "cost_usd", "seconds", "tool_calls", "model_calls"]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _cost(values: Sequence[Any], combine: Any = sum) -> float | None:
    """The runs' cost (``combine``: sum or mean); None - unknown - when a run's is (a model
    without a price was called), never a made-up 0."""
    if any(v is None for v in values):
        return None
    return round(float(combine([float(v or 0) for v in values])), 6)


def _cell(key: str, value: Any, fmt: str) -> str:
    return "?" if value is None and key == "cost_usd" else fmt.format(value)


def summarize(runs: Sequence[Mapping[str, Any]], case_ids: Sequence[str], repeat: int) -> dict[str, Any]:
    """``{"summary": ..., "cases": [...]}`` from every run (``case``, ``passed``, ``tool_calls``,
    ``model_calls``, ``tokens``, ``cost_usd``, ``seconds``, ``checks`` ...). A case passes when
    all its runs pass; pass@1 is the mean share of passing runs per case, pass@K the share of
    cases with at least one passing run; a case is flaky when some runs pass and some fail."""
    cases = []
    for cid in case_ids:
        mine = sorted((r for r in runs if r["case"] == cid), key=lambda r: r.get("repeat", 0))
        passes = sum(1 for r in mine if r["passed"])
        failed = next((r for r in mine if not r["passed"]), None)
        row: dict[str, Any] = {
            "id": cid,
            "passed": bool(mine) and passes == len(mine),
            "passes": passes,
            "runs": len(mine),
            "flaky": 0 < passes < len(mine),
            "failed_check": failed.get("failed_check") if failed else None,
        }
        for key, _, _ in COLUMNS:
            row[key] = _mean([float(r.get(key) or 0) for r in mine]) if key != "cost_usd" else _cost(
                [r.get(key) for r in mine], _mean
            )
        row["results"] = list(mine)
        cases.append(row)
    n = len(cases) or 1
    summary = {
        "cases": len(cases),
        "runs": len(runs),
        "repeat": repeat,
        "passed": sum(1 for c in cases if c["passed"]),
        "failed": sum(1 for c in cases if not c["passed"]),
        "pass_rate": sum(c["passes"] / (c["runs"] or 1) for c in cases) / n,
        "pass_at_1": sum(c["passes"] / (c["runs"] or 1) for c in cases) / n,
        f"pass_at_{repeat}": sum(1 for c in cases if c["passes"]) / n,
        "pass_at_k": sum(1 for c in cases if c["passes"]) / n,
        "flaky": [c["id"] for c in cases if c["flaky"]],
        "errors": sum(1 for r in runs if r.get("error")),
        "tool_calls": sum(int(r.get("tool_calls") or 0) for r in runs),
        "model_calls": sum(int(r.get("model_calls") or 0) for r in runs),
        "tokens": sum(int(r.get("tokens") or 0) for r in runs),
        "cached_tokens": sum(int(r.get("cached_tokens") or 0) for r in runs),
        "cost_usd": _cost([r.get("cost_usd") for r in runs]),
        "seconds": round(sum(float(r.get("seconds") or 0) for r in runs), 3),
    }
    return {"summary": summary, "cases": cases}


def _result(case: Mapping[str, Any]) -> str:
    if case["runs"] > 1 and case["flaky"]:
        return f"flaky {case['passes']}/{case['runs']}"
    if case["runs"] > 1:
        return f"{'pass' if case['passed'] else 'fail'} {case['passes']}/{case['runs']}"
    return "pass" if case["passed"] else "FAIL"


def _rows(results: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for c in results["cases"]:
        check = c.get("failed_check") or ""
        rows.append([
            c["id"], _result(c), check if len(check) <= 60 else check[:57] + "...",
            *[_cell(key, c[key], fmt) for key, _, fmt in COLUMNS],
        ])
    return rows


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=False)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)


def _summary_line(s: Mapping[str, Any]) -> str:
    line = f"{s['passed']}/{s['cases']} cases passed (pass rate {s['pass_rate']:.0%})"
    if s["repeat"] > 1:
        line += f", pass@1 {s['pass_at_1']:.0%}, pass@{s['repeat']} {s['pass_at_k']:.0%}"
        line += f", flaky: {', '.join(s['flaky'])}" if s["flaky"] else ", no flaky case"
    cost = "cost unknown" if s["cost_usd"] is None else f"${s['cost_usd']:.4f}"
    return line + f"; {s['tokens']} tokens, {cost}, {s['seconds']:.1f} s of runs"


def table(results: Mapping[str, Any]) -> str:
    """The text table printed after a run, and its summary line."""
    header = ["case", "result", "failed check", *[h for _, h, _ in COLUMNS]]
    return _text_table(header, _rows(results)) + "\n\n" + _summary_line(results["summary"])


def markdown_report(results: Mapping[str, Any]) -> str:
    """``report.md``: the summary, the table, each failure's checks."""
    s = results["summary"]
    header = ["case", "result", "failed check", *[h for _, h, _ in COLUMNS]]
    md = [f"# Eval: {results.get('suite_name', '')}", "", _summary_line(s), ""]
    config = results.get("config") or {}
    if config:
        md += ["Config: " + ", ".join(f"{k} `{v}`" for k, v in config.items() if v not in (None, {}, "")), ""]
    md += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(x.replace("|", "\\|") for x in row) + " |" for row in _rows(results)]
    failures = [(c, r) for c in results["cases"] for r in c["results"] if not r["passed"]]
    if failures:
        md += ["", "## Failures", ""]
        for case, run in failures:
            md.append(f"### {case['id']} (run {run.get('repeat', 1)})")
            md.append("")
            for check in run.get("checks") or []:
                if not check["passed"]:
                    md.append(f"- `{check['check']}`: {check.get('detail', '')}")
            if run.get("error") and not any(c["check"] == "error" for c in run.get("checks") or []):
                md.append(f"- error: {run['error']}")
            md.append(f"- answer: {str(run.get('answer') or '')[:300]!r}")
            if run.get("trajectory"):
                md.append(f"- trajectory: `{run['trajectory']}`")
            md.append("")
    return "\n".join(md).rstrip() + "\n"


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(b / a, 4) if a and b is not None else None


def compare(a: Mapping[str, Any], b: Mapping[str, Any], labels: tuple[str, str]) -> dict[str, Any]:
    """Both sides on the same cases: per case each side's result and numbers (``differs`` when
    one passes and the other does not), and the totals side by side with the ratio B/A."""
    by_b = {c["id"]: c for c in b["cases"]}
    cases = []
    for ca in a["cases"]:
        cb = by_b.get(ca["id"])
        if cb is None:
            continue
        row: dict[str, Any] = {
            "id": ca["id"], "a": ca["passed"], "b": cb["passed"], "differs": ca["passed"] != cb["passed"],
        }
        for key, _, _ in COLUMNS:
            row[f"a_{key}"], row[f"b_{key}"] = ca[key], cb[key]
        cases.append(row)
    sa, sb = a["summary"], b["summary"]
    totals = {k: {"a": sa[k], "b": sb[k], "ratio": _ratio(sa[k], sb[k])} for k in TOTALS}
    return {"a": labels[0], "b": labels[1], "cases": cases, "totals": totals}


def _fmt(key: str, value: Any) -> str:
    if key == "pass_rate":
        return f"{value:.0%}"
    if value is None:
        return "?"
    return f"{value:.4f}" if key == "cost_usd" else f"{value:.2f}" if key == "seconds" else f"{value:.0f}"


def compare_table(comparison: Mapping[str, Any]) -> str:
    """Per-case A vs B and the totals with B/A ratios, as text."""
    a, b = comparison["a"], comparison["b"]
    header = ["case", f"A: {a}", f"B: {b}", "A tokens", "B tokens", "A s", "B s", ""]
    rows = [[
        c["id"], "pass" if c["a"] else "FAIL", "pass" if c["b"] else "FAIL", f"{c['a_tokens']:.0f}",
        f"{c['b_tokens']:.0f}", f"{c['a_seconds']:.2f}", f"{c['b_seconds']:.2f}", "differs" if c["differs"] else "",
    ] for c in comparison["cases"]]
    totals = [[
        k, _fmt(k, t["a"]), _fmt(k, t["b"]), "n/a" if t["ratio"] is None else f"{t['ratio']:.2f}x",
    ] for k, t in comparison["totals"].items()]
    return (
        _text_table(header, rows) + "\n\n" + _text_table(["total", f"A: {a}", f"B: {b}", "B/A"], totals)
    )
