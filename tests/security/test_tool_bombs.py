"""Attack: a grep pattern and a calculator expression that cost unbounded memory or CPU
before any timeout can apply (issue 34).

grep: ``regex.compile`` unrolls repeats, so the ten characters ``x{5000000}`` took 1.46 GB
(``x{100000000}``: 20 GB) in one C call; the tool timeout does not stop it and the
abandoned thread kept allocating. Now the pattern is bounded before it is compiled
(tools/regex_bounds.py): repeat counts at most 1000, at most 10000 characters once the
repeats are unrolled, and what ``regex`` reads differently from ``re`` refused.

calculator: ``round(7, -10**9)`` computed ``10**1000000000`` in one C call holding the
GIL, so the tool timeout never fired and Ctrl-C was ignored. Now each operation's
operands are bounded before it runs.

A bomb runs in a child process with an address-space limit (``RLIMIT_AS``) and a CPU
limit, so a regression fails the test instead of eating the machine's memory."""

from __future__ import annotations

import ast
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env
from tool_support import call, function_of, make_runtime

from smart_agent.testing.scripted_server import text, tool_call
from smart_agent.tools import calculator as calc
from smart_agent.tools.calculator import MAX_INT_BITS, MAX_ROUND_DIGITS, calculator, format_number
from smart_agent.tools.file_search import glob_files, grep_files
from smart_agent.tools.guards import ToolError
from smart_agent.tools.regex_bounds import MAX_REPEAT, MAX_UNROLLED, check_regex_bounds

# The functions under the tools, called directly (the tools node injects the runtime the same way).
calculator_fn = function_of(calculator)

CHILD_AS_BYTES = 2 << 30  # a regression hits MemoryError at 2 GB instead of taking 20 GB
CHILD_CPU_S = 60  # hang guard: SIGXCPU ends a child stuck in one C call
MB = 1 << 20

GREP_BOMBS = [
    "x{5000000}",
    "x{100000000}",
    "x{5000000}?",
    "x{5000000}+",
    "(?i)x{5000000}",
    "x{5000000,}",
    "x{0,5000000}",
    "x{,5000000}",
    r"\d{4294967294}",
    ".{100000}",
    "[ab]{100000}",
    "(?:ab){100000}",
    "(x{1000}){1000}",
    "(?:(?:x{30}){30}){30}",
    "(?:x{1000}|y){1000}",
    "(?=(?:x{1000}){1000})",
    "(?<!x{100000})",
    "(?P<a>x{999})(?:(?P=a)|y{999}){999}",
    "(x)(?(1)x{100000}|y)",
    r"\N{LATIN SMALL LETTER A}{5000000}",
    "x(?#comment){5000000}",
    "(?:abc){e<=3}",  # fuzzy matching in regex, a literal in re
    "(?:abc){1i+1d<5}",
    "(?x)x{1 000 000}",  # regex reads x{1000000}
    "(?ix:x{5 000 000})",
    "[[:alpha:]]{5000000}",  # a POSIX class in regex, a set and a literal ']' in re
    "x{1001}",
]
# regex-only syntax: refused by re's validation before anything else
REGEX_ONLY = [r"(?r)x{5000000}", r"\L<words>", r"(?V1)x{5000000}", r"\p{L}{5000000}", r"(?(DEFINE)x{5000000})",
              r"(?|a|b){5000000}", r"(?&a)", r"(?R)", r"\g<1>{5000000}", r"(?f)x{5000000}", r"(?b)(?:x){e<=1}"]

CALC_BOMBS = [
    "round(7, -10**9)",
    "round(1, -2**63)",
    "round(7, -10**7)",
    "round(-7, -2**62)",
    "round(7.5, -10**9)",
    "round(7, 10**9)",
    "round(2**4000, -10**6)",
    "round(1, -(2**4000))",
    "round(1, -(9**9**2))",
    "9**9**9",
    "10**10**10",
    "2**4097",
    "2**(2**4000)",
    "(-3)**(2**4000)",
    "(2**4000)**2",
    "(2**4000)*(2**4000)",
    "(10**1000)*(10**1000)*(10**1000)",
    "floor(1e308)**5",
    "ceil(1e308)*ceil(1e308)*ceil(1e308)*ceil(1e308)*ceil(1e308)",
    "min(2**4000*2**4000, 1)",
    "abs(-(2**4096))",
    "2**-(2**4000)",
    "1.0000001**(2**4000)",
    "exp(10**9)",
    "sqrt(2**4000)",
    "log(2**4000*2**4000)",
]


def _limits() -> None:  # in the child, before it runs anything
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS_BYTES, CHILD_AS_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_S, CHILD_CPU_S))


CHILD = r'''
import json, resource, sys, tracemalloc
tool_name, inputs = json.loads(sys.argv[1])
from smart_agent.tools.calculator import calculator
from smart_agent.tools.file_search import grep_files
from smart_agent.tools.guards import ToolError
run = {"grep": lambda s: grep_files.func(pattern=s), "calculator": calculator.func}[tool_name]
run({"grep": "warm", "calculator": "1+1"}[tool_name])  # imports and caches before measuring
results = []
for item in inputs:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    try:
        out, error = run(item), None
    except ToolError as exc:
        out, error = None, str(exc)
    except MemoryError:
        out, error = None, "MemoryError escaped"
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
    results.append({"input": item, "out": out, "error": error, "peak": peak, "rss_growth_kb": grew})
    print(json.dumps(results[-1]), flush=True)
'''


def run_in_child(tool_name: str, inputs: list[str], cwd: Path) -> list[dict]:
    """Each input through the tool in a child with bounded memory and CPU: one result per input."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps([tool_name, inputs])],
            cwd=cwd, env={**os.environ, "SMART_AGENT_WORKSPACE": str(cwd)}, capture_output=True, text=True,
            timeout=180, preexec_fn=_limits,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the {tool_name} child hung; its last results: {exc.stdout!r}") from None
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and len(results) == len(inputs), (
        f"the {tool_name} child died (exit {proc.returncode}) after {len(results)} of {len(inputs)} inputs, "
        f"at {inputs[len(results)] if len(results) < len(inputs) else None!r}: {proc.stderr[-2000:]}"
    )
    return results


# -- grep -----------------------------------------------------------------------------------
@pytest.mark.unit
def test_grep_bombs_are_refused_before_compiling_with_bounded_memory(tmp_path):
    (tmp_path / "a.txt").write_text("x" * 50 + "\nwarm\n")
    results = run_in_child("grep", GREP_BOMBS + REGEX_ONLY, tmp_path)
    for r in results[: len(GREP_BOMBS)]:
        assert r["error"] and r["error"].startswith("pattern refused: "), r
    for r in results[len(GREP_BOMBS):]:
        assert r["error"] and r["error"].startswith("Invalid regular expression"), r
    for r in results:
        # refused before regex.compile: kilobytes (x{5000000} alone took 1.46 GB)
        assert r["peak"] < 2 * MB and r["rss_growth_kb"] * 1024 < 200 * MB, r
    by_input = {r["input"]: r["error"] for r in results}
    assert by_input["x{5000000}"] == f"pattern refused: repeat count 5000000 over {MAX_REPEAT}."
    assert by_input["x{,5000000}"] == f"pattern refused: repeat count 5000000 over {MAX_REPEAT}."
    assert f"unroll to more than {MAX_UNROLLED} characters" in by_input["(x{1000}){1000}"]
    assert "fuzzy matching" in by_input["(?:abc){e<=3}"] and r"write '\{'" in by_input["(?:abc){e<=3}"]
    assert "verbose flag (?x)" in by_input["(?x)x{1 000 000}"]
    assert r"write '\['" in by_input["[[:alpha:]]{5000000}"]


@pytest.mark.unit
def test_grep_patterns_within_the_bounds_still_work(tmp_path):
    (tmp_path / "code.txt").write_text(
        "{5000000} and {}\nif (x) {\n" + "a" * 40 + "\n" + "x" * 1000 + "\nsha " + "0f" * 20 + "\n"
    )
    found = {
        r"\{5000000\}": "code.txt:1:",
        "[{]5000000}": "code.txt:1:",
        "{}": "code.txt:1:",
        "x{,}": "code.txt:1:",
        r"if \(x\) {$": "code.txt:2:",
        r"\N{LATIN SMALL LETTER A}{40}": "code.txt:3:",
        "(?#a{9999999})a{3}": "code.txt:3:",
        "^x{1000}$": "code.txt:4:",
        "(?:x{10}){99}": "code.txt:4:",
        "(?:(?:x{10}){10}){9}": "code.txt:4:",
        "sha [0-9a-f]{40}": "code.txt:5:",
        "(?i)SHA [0-9A-F]{2,40}+": "code.txt:5:",
        "x{3": "[No matches",
    }
    results = run_in_child("grep", list(found), tmp_path)
    for r in results:
        assert r["error"] is None and r["out"].startswith(found[r["input"]]), r
        assert r["peak"] < 50 * MB, r


@pytest.mark.unit
@pytest.mark.parametrize(
    "pattern",
    ["(" * 400 + "x" + ")" * 400, "(?:x{1000})" * 90, "[" + "a-z" * 300 + "]{1000}", "(?:a|b|c|d){999}x{999}"],
)
def test_grep_bounds_hold_for_long_and_deep_patterns(pattern):
    # within the 1000 characters: either under the unrolled bound or refused, never a crash
    try:
        check_regex_bounds(pattern)
    except ToolError as exc:
        assert str(exc).startswith("pattern refused: ")


@pytest.mark.unit
def test_glob_patterns_are_bounded_in_length(tmp_path):
    # fnmatch compiles (and caches) each glob segment with re: it gets the same length bound as grep
    with pytest.raises(ToolError, match="at most 1000"):
        call(glob_files, make_runtime(tmp_path), pattern="*" + "a" * 1000)
    with pytest.raises(ToolError, match="at most 1000"):
        call(grep_files, make_runtime(tmp_path), pattern="a", glob="*" + "a" * 1000)


# -- calculator ------------------------------------------------------------------------------
CHEAP_BITS = 10_000  # an operation on integers this size takes microseconds


def _cost_bits(name: str, args: tuple) -> int:
    """The most bits an integer operand or the exact result of ``name(*args)`` has (before computing it)."""
    ints = [abs(a) for a in args if isinstance(a, int)]
    bits = max((a.bit_length() for a in ints), default=0)
    if name == "Pow" and len(ints) == 2 and ints[0] > 1 and args[1] > 0:
        bits = max(bits, math.ceil(args[1] * math.log2(ints[0])) if args[1] < 10**6 else 10**9)
    if name == "Mult" and len(ints) == 2:
        bits = max(bits, ints[0].bit_length() + ints[1].bit_length())
    if name == "round" and len(args) == 2 and isinstance(args[1], int):
        bits = max(bits, abs(args[1]) * 4 if args[1] < 0 else 0)  # computes 10**-n
    return bits


@pytest.fixture
def spied(monkeypatch):
    """Every operation the calculator runs, checked before it runs: a costly one fails the test
    (instead of hanging it) and ``spied`` holds the largest cost seen."""
    seen: list[int] = []

    def spy(name, fn):
        def run(*args):
            cost = _cost_bits(name, args)
            assert cost <= CHEAP_BITS, f"the calculator ran {name} on operands costing {cost} bits"
            seen.append(cost)
            return fn(*args)

        return run

    for op, fn in list(calc._BINARY_OPS.items()):
        monkeypatch.setitem(calc._BINARY_OPS, op, spy(op.__name__, fn))
    for name, fn in list(calc.FUNCTIONS.items()):
        monkeypatch.setitem(calc.FUNCTIONS, name, spy(name, fn))
    return seen


@pytest.mark.unit
@pytest.mark.parametrize("expression", CALC_BOMBS)
def test_calculator_bombs_are_refused_before_computing(expression, spied):
    with pytest.raises(ToolError, match="(?i)too large|beyond|overflow") as refused:
        calculator_fn(expression)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 300
    assert max(spied, default=0) <= CHEAP_BITS


@pytest.mark.unit
def test_calculator_refusals_name_the_limit(spied):
    for expression, message in [
        ("round(7, -10**9)", f"round's digit count -1000000000 is beyond ±{MAX_ROUND_DIGITS}"),
        ("round(1, -(2**4000))", "round's digit count -(a number of about 1205 digits) is beyond"),
        ("(2**4000)*(2**4000)", f"the product has more than {MAX_INT_BITS} bits"),
        ("2**(2**4000)", f"the power has more than {MAX_INT_BITS} bits"),
    ]:
        with pytest.raises(ToolError) as refused:
            calculator_fn(expression)
        assert message in str(refused.value)


@pytest.mark.unit
def test_calculator_still_computes_at_the_limits(spied):
    assert calculator_fn(f"round(7, -{MAX_ROUND_DIGITS})") == "0"
    assert calculator_fn("round(123456, -3)") == "123000"
    assert calculator_fn(f"round(1.5, {MAX_ROUND_DIGITS})") == "1.5"
    assert calculator_fn("round(2**4000, -1000)") == str(round(2**4000, -1000))
    assert calculator_fn("(2**2000)*(2**2000)") == str(2**4000)
    assert calculator_fn("2**4095") == str(2**4095)
    assert calculator_fn("(-1)**(2**4000)") == "1"
    assert calculator_fn("2**-2") == "0.25"


@pytest.mark.unit
def test_huge_integers_are_shown_or_refused_with_one_line():
    with pytest.raises(ToolError, match="too large"):
        format_number(10**5000)  # past the interpreter's 4300-digit str() limit
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        with pytest.raises(ToolError, match="Cannot show the result"):
            format_number(10**1000)  # 3322 bits: within MAX_INT_BITS, over this interpreter's limit
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.unit
def test_calculator_bombs_end_with_bounded_memory_in_a_child(tmp_path):
    results = run_in_child("calculator", CALC_BOMBS, tmp_path)
    for r in results:
        assert r["error"] and r["out"] is None, r
        assert r["peak"] < 2 * MB and r["rss_growth_kb"] * 1024 < 200 * MB, r


@pytest.mark.unit
def test_every_operation_the_calculator_allows_is_bounded():
    # A new operator or function must come with its bound here (and in _check_binary/_check_call).
    assert {op.__name__ for op in calc._BINARY_OPS} == {"Add", "Sub", "Mult", "Div", "FloorDiv", "Mod", "Pow"}
    assert set(calc.FUNCTIONS) == {
        "sqrt", "log", "log10", "log2", "exp", "sin", "cos", "tan", "abs", "round", "min", "max", "floor", "ceil"
    }
    for op in (ast.LShift, ast.RShift, ast.BitOr, ast.BitAnd, ast.MatMult):
        assert op not in calc._BINARY_OPS


# -- through the real client against a scripted server -----------------------------------------
def run_cli_bounded(args: list[str], env: dict, out_dir: Path) -> tuple[subprocess.CompletedProcess, int]:
    """The CLI in a child with bounded memory and CPU: (its result, its own peak RSS in bytes)."""
    exe = Path(sys.executable).with_name("smart-agent")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smart_agent.cli"]
    out_path, err_path = out_dir / "stdout", out_dir / "stderr"
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(
            cmd + args, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=_limits
        )
        deadline = time.monotonic() + 120  # hang guard only
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise AssertionError(f"the CLI did not end: {err_path.read_text()[-2000:]}")
            time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)
    done = subprocess.CompletedProcess(cmd + args, proc.returncode, out_path.read_text(), err_path.read_text())
    return done, usage.ru_maxrss * 1024


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("tool", "args", "error"),
    [
        ("grep", {"pattern": "x{100000000}"}, "pattern refused: repeat count 100000000 over 1000."),
        ("calculator", {"expression": "round(7, -10**9)"}, "round's digit count -1000000000 is beyond ±1300"),
    ],
)
def test_cli_bomb_ends_with_the_tool_error_and_the_answer(scripted_server, workspace, tmp_path, tool, args, error):
    (workspace / "notes.txt").write_text("xxxx\n")
    srv = scripted_server([tool_call(tool, args, id="bomb"), text("The tool refused that.")])
    env = cli_env(srv, SMART_AGENT_TOOL_TIMEOUT_S=5)
    res, peak = run_cli_bounded(["run", "use the tool", "--json", "--workspace", str(workspace)], env, tmp_path)

    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["answer"] == "The tool refused that."
    assert out["tool_calls"][0]["name"] == tool and out["tool_calls"][0]["ok"] is False
    (result,) = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert result["tool_call_id"] == "bomb"
    assert result["content"].startswith(f"Tool {tool!r} failed: ") and error in result["content"]
    # x{100000000} alone took 20 GB; the whole CLI run stays far below the child's 2 GB limit
    assert peak < 1 << 30, f"peak RSS {peak // MB} MB"
