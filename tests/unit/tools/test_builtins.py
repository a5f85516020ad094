"""The built-in tools, invoked the way the tools node invokes them (no network needed)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool
from pydantic import BaseModel
from tool_support import call, call_text, function_of, make_runtime

from smart_agent.tools.builtins import BUILTIN_TOOLS, default_registry
from smart_agent.tools.calculator import calculator
from smart_agent.tools.files import MAX_LIST_ENTRIES, list_files, read_file, write_file
from smart_agent.tools.guards import ToolError
from smart_agent.tools.registry import ToolMeta
from smart_agent.tools.web import browse_effect

# The functions under the tools, called directly (the tools node injects the runtime the same way).
calculator_fn = function_of(calculator)
list_files_fn = function_of(list_files)
read_file_fn = function_of(read_file)
write_file_fn = function_of(write_file)

BUILTIN_NAMES = [
    "calculator",
    "read_file",
    "list_files",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "browse_url",
    "web_search",
    "ask_user",
    "remember",
    "search_memory",
]


# -- schemas and registry ---------------------------------------------------------
@pytest.mark.parametrize("tool", [t for t, _ in BUILTIN_TOOLS], ids=lambda t: t.name)
def test_schemas_hide_runtime_and_describe_every_argument(tool: BaseTool) -> None:
    assert isinstance(tool.args_schema, type) and issubclass(tool.args_schema, BaseModel)
    call_schema = tool.tool_call_schema
    assert isinstance(call_schema, type) and issubclass(call_schema, BaseModel)
    schema = call_schema.model_json_schema()
    assert "runtime" not in schema["properties"]
    assert "runtime" not in tool.args
    assert schema["properties"], tool.name
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tool.description and len(tool.description) < 600


def test_default_registry(tmp_path: Path) -> None:
    registry = default_registry(plugins_folder=tmp_path / "no-plugins", entry_points=False)
    assert registry.names() == BUILTIN_NAMES
    assert registry.meta("write_file").side_effects is True
    assert registry.meta("remember").side_effects is True
    assert registry.meta("edit_file").side_effects is True
    writers = ("write_file", "edit_file", "remember")
    assert all(not registry.meta(n).side_effects for n in BUILTIN_NAMES if n not in writers)
    assert registry.meta("browse_url") == ToolMeta(timeout_s=30, retries=1, tags=("web",), canonical=browse_effect)
    assert registry.meta("web_search").timeout_s == 20
    assert registry.meta("calculator").source == "builtin"
    other = default_registry(plugins_folder=tmp_path / "no-plugins", entry_points=False)
    registry.unregister("calculator")
    assert "calculator" in other  # a new registry every time


PLUGIN = '''
from langchain_core.tools import tool

@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()

TOOLS = [shout]
'''


def test_default_registry_loads_folder_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "shout.py").write_text(PLUGIN)
    registry = default_registry(plugins_folder=tmp_path / "plugins", entry_points=False)
    assert registry.names() == [*BUILTIN_NAMES, "shout"]
    assert registry.meta("shout").source == "plugin:shout.py"
    assert registry.get("shout").invoke({"text": "hi"}) == "HI"

    home = tmp_path / "home"
    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / "shout.py").write_text(PLUGIN)
    monkeypatch.delenv("SMART_AGENT_PLUGINS", raising=False)
    monkeypatch.setenv("SMART_AGENT_HOME", str(home))
    assert "shout" not in default_registry(entry_points=False)  # never implicitly from the data folder
    monkeypatch.setenv("SMART_AGENT_PLUGINS", str(home / "plugins"))  # only from a configured folder
    assert "shout" in default_registry(entry_points=False)
    monkeypatch.delenv("SMART_AGENT_HOME")
    monkeypatch.delenv("SMART_AGENT_PLUGINS")
    monkeypatch.chdir(tmp_path / "home")  # default home: ./.smart-agent
    assert "shout" not in default_registry(entry_points=False)


# -- calculator -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("37*43", "1591"),
        ("7/2", "3.5"),
        ("10/2", "5"),
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("-3 ** 2", "-9"),
        ("2 ** -1", "0.5"),
        ("17 // 5", "3"),
        ("17 % 5", "2"),
        ("+-+4", "-4"),
        ("0.1 + 0.2", "0.3"),
        ("2**100", "1267650600228229401496703205376"),
        ("sqrt(16)", "4"),
        ("log(e)", "1"),
        ("log(8, 2)", "3"),
        ("exp(0)", "1"),
        ("sin(0) + cos(0)", "1"),
        ("tan(pi/4)", "1"),
        ("abs(-5.5)", "5.5"),
        ("round(2.567, 2)", "2.57"),
        ("min(3, 1, 2) + max(3, 1, 2)", "4"),
        ("floor(7.9) + ceil(0.1)", "8"),
        ("pi", "3.14159265358979"),
        ("1e20", "1e+20"),
    ],
)
def test_calculator_arithmetic(expression: str, expected: str) -> None:
    assert calculator_fn(expression) == expected


def test_calculator_through_a_tool_call() -> None:
    message = call(calculator, expression="37*43")
    assert message.content == "1591"


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("__import__('os')", "Unknown function '__import__'"),
        ("__import__('os').system('echo hi')", "attribute access"),
        ("(1).__class__", "attribute access"),
        ("().__class__.__bases__[0]", "indexing"),
        ("().__class__.__bases__", "attribute access"),
        ("open('/etc/passwd')", "Unknown function 'open'"),
        ("x + 1", "Unknown name 'x'"),
        ("__builtins__", "Unknown name"),
        ("(lambda: 1)()", "lambda"),
        ("[1, 2][0]", "indexing"),
        ("'a' * 3", "only numbers"),
        ("True + 1", "only numbers"),
        ("1 < 2", "comparisons"),
        ("2 ^ 3", "use '\\*\\*'"),
        ("9**9**9", "too large"),
        ("10**10000", "too large"),
        ("2**5000", "too large"),
        ("(2**4000) * (2**4000)", "too large"),
        ("1e308 * 10", "not a finite"),
        ("exp(1000)", "overflow"),
        ("1/0", "Division by zero"),
        ("log(0)", "math domain"),
        ("(-8) ** 0.5", "complex"),
        ("1 +", "Invalid expression"),
        ("", "Empty"),
        ("1+" * 300 + "1", "too long"),
        ("round(2.5, ndigits=1)", "Keyword"),
        ("1, 5", "tuple"),
    ],
)
def test_calculator_refusals(expression: str, error: str) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match=error):
        calculator_fn(expression)
    assert time.monotonic() - started < 1


def test_calculator_error_through_a_tool_call_raises_tool_error() -> None:
    # The tools node turns the exception into an error ToolMessage.
    with pytest.raises(ToolError, match="Unknown function"):
        call(calculator, expression="__import__('os')")


# -- file tools --------------------------------------------------------------------
def test_file_round_trip(tmp_path: Path, rt: ToolRuntime) -> None:
    assert (
        call(write_file, rt, path="notes/a.txt", content="hello world!").content == "Wrote 12 characters to notes/a.txt"
    )
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello world!"
    assert call(read_file, rt, path="notes/a.txt").content == "hello world!"
    call(write_file, rt, path="b.txt", content="x")
    assert call(list_files, rt).content == "b.txt\nnotes/"
    assert call(list_files, rt, path="notes").content == "a.txt"
    # overwrite; text is written as-is (no newline translation)
    call(write_file, rt, path="notes/a.txt", content="line1\r\nline2\n")
    assert (tmp_path / "notes" / "a.txt").read_bytes() == b"line1\r\nline2\n"
    assert call(read_file, rt, path="notes/a.txt").content == "line1\r\nline2\n"


def test_file_tools_called_directly(tmp_path: Path, rt: ToolRuntime) -> None:
    assert write_file_fn("d/e.txt", "ünïcode", runtime=rt) == "Wrote 7 characters to d/e.txt"
    assert read_file_fn("d/e.txt", runtime=rt) == "ünïcode"
    assert list_files_fn("d", runtime=rt) == "e.txt"


def test_file_tools_accept_a_dict_context(tmp_path: Path) -> None:
    runtime: ToolRuntime[dict[str, str], dict[str, Any]] = ToolRuntime(
        state={},
        context={"workspace": str(tmp_path)},
        config={},
        stream_writer=lambda x: None,
        tool_call_id="c1",
        store=None,
    )
    call(write_file, runtime, path="x.txt", content="dict")
    assert (tmp_path / "x.txt").read_text() == "dict"


def test_file_tools_without_runtime_use_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SMART_AGENT_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert call(write_file, path="cwd.txt", content="here").content == "Wrote 4 characters to cwd.txt"
    assert (tmp_path / "cwd.txt").read_text() == "here"
    assert read_file_fn("cwd.txt") == "here"


def test_read_file_pages(tmp_path: Path, rt: ToolRuntime) -> None:
    # without offset/limit: the text up to max_chars; the note names the line to read on from (offset is a line)
    (tmp_path / "long.txt").write_text("0123456789\n" * 3)
    first = call_text(read_file, rt, path="long.txt", max_chars=16)
    assert first.startswith("0123456789\n01234\n\n[Truncated")
    assert "showed line 1 and the beginning of line 2 of long.txt" in first and "offset=2" in first
    second = call(read_file, rt, path="long.txt", offset=2, max_chars=16).content
    assert second == "0123456789\n\n[Lines 2-2 of 3 in long.txt. Call read_file with offset=3 to read more.]"
    third = call(read_file, rt, path="long.txt", offset=3, max_chars=16).content
    assert third == "0123456789\n\n[Lines 3-3 of 3 in long.txt; the end of the file.]"
    assert "Nothing to read at line 99: long.txt has only 3 lines" in call(
        read_file, rt, path="long.txt", offset=99).content
    (tmp_path / "empty.txt").write_text("")
    assert call(read_file, rt, path="empty.txt").content == "[The file is empty.]"


def test_read_file_replaces_invalid_utf8(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    assert call(read_file, rt, path="latin.txt").content == "caf\ufffd"


def test_read_file_errors(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match="does not exist"):
        call(read_file, rt, path="missing.txt")
    with pytest.raises(ToolError, match="is a directory"):
        call(read_file, rt, path="dir")
    with pytest.raises(ToolError, match="binary"):
        call(read_file, rt, path="img.png")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(read_file, rt, path="../../etc/passwd")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(read_file, rt, path="/etc/passwd")


def test_list_files_errors_and_cap(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ToolError, match="is a file"):
        call(list_files, rt, path="f.txt")
    with pytest.raises(ToolError, match="does not exist"):
        call(list_files, rt, path="nope")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(list_files, rt, path="..")
    assert call(list_files, rt, path="empty").content == "[The folder is empty.]"
    many = tmp_path / "many"
    many.mkdir()
    for i in range(MAX_LIST_ENTRIES + 20):
        (many / f"f{i:04d}").touch()
    lines = call_text(list_files, rt, path="many").splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert lines[0] == "f0000" and lines[-1] == "[... and 20 more entries not shown.]"


def test_write_file_refuses_escapes(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("original")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "linkfile").symlink_to(outside / "victim.txt")
    runtime = make_runtime(workspace)
    for path in ["linkdir/new.txt", "linkdir/sub/new.txt", "linkfile", "../outside/new.txt", str(outside / "new.txt")]:
        with pytest.raises(ToolError, match="outside the workspace"):
            call(write_file, runtime, path=path, content="pwned")
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "original"
    with pytest.raises(ToolError, match="NUL"):
        call(write_file, runtime, path="a\x00b", content="x")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(write_file, runtime, path="linkdir/..", content="x")  # '..' applies after the link
    (workspace / "sub").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        call(write_file, runtime, path="sub", content="x")
