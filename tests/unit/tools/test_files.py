"""read_file's line windows, edit_file, glob and grep, invoked the way the tools node invokes them."""

from __future__ import annotations

import functools
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool
from tool_support import call as call_tool
from tool_support import make_runtime

from smart_agent.cli import main
from smart_agent.nodes.planner.prompts import describe_tools
from smart_agent.tools import file_search
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.file_edit import edit_file
from smart_agent.tools.file_search import GlobMatcher, glob_files, grep_files, parse_glob
from smart_agent.tools.files import read_file
from smart_agent.tools.guards import ToolError
from smart_agent.tools.safe_walk import WalkLimits


def call(tool: BaseTool, runtime: ToolRuntime, **args: Any) -> str:
    """The text of ``tool``'s result for a model tool call (``rt``: the runtime, tool_support.py)."""
    return str(call_tool(tool, runtime, **args).content)


# -- read_file: line windows ---------------------------------------------------------
@pytest.fixture
def fifty(tmp_path: Path) -> Path:
    path = tmp_path / "fifty.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 51)))
    return path


def test_read_file_window_of_lines(rt: ToolRuntime, fifty: Path) -> None:
    assert call(read_file, rt, path="fifty.txt", offset=10, limit=3) == (
        "line 10\nline 11\nline 12\n\n[Lines 10-12 of 50 in fifty.txt. Call read_file with offset=13 to read more.]"
    )
    assert call(read_file, rt, path="fifty.txt", offset=49) == (
        "line 49\nline 50\n\n[Lines 49-50 of 50 in fifty.txt; the end of the file.]"
    )
    assert call(read_file, rt, path="fifty.txt", limit=2) == (  # limit alone: from the first line
        "line 1\nline 2\n\n[Lines 1-2 of 50 in fifty.txt. Call read_file with offset=3 to read more.]"
    )
    assert call(read_file, rt, path="fifty.txt", offset=48, limit=3) == (  # the window stops at the end
        "line 48\nline 49\nline 50\n\n[Lines 48-50 of 50 in fifty.txt; the end of the file.]"
    )
    assert call(read_file, rt, path="fifty.txt", offset=51) == (
        "[Nothing to read at line 51: fifty.txt has only 50 lines.]"
    )


def test_read_file_line_numbers(rt: ToolRuntime, fifty: Path) -> None:
    assert call(read_file, rt, path="fifty.txt", offset=9, limit=2, line_numbers=True) == (
        "     9\tline 9\n    10\tline 10\n\n"
        "[Lines 9-10 of 50 in fifty.txt. Call read_file with offset=11 to read more.]"
    )


def test_read_file_without_window_keeps_its_format(rt: ToolRuntime, fifty: Path) -> None:
    whole = fifty.read_text()
    assert call(read_file, rt, path="fifty.txt") == whole
    assert call(read_file, rt, path="fifty.txt", offset=0) == whole
    assert call(read_file, rt, path="fifty.txt", offset=1) == whole  # line 1 without limit: the whole text


def test_read_file_window_within_max_chars(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "w.txt").write_text("aaaa\nbbbb\ncccc\n")
    # whole lines that fit; the next call starts at the first line that did not
    assert call(read_file, rt, path="w.txt", offset=1, limit=3, max_chars=12) == (
        "aaaa\nbbbb\n\n[Lines 1-2 of 3 in w.txt. Call read_file with offset=3 to read more.]"
    )
    (tmp_path / "long.txt").write_text("x" * 50 + "\nnext\n")
    assert call(read_file, rt, path="long.txt", offset=1, limit=5, max_chars=10) == (
        "xxxxxxxxxx\n\n[Lines 1-1 of 2 in long.txt (line 1 is longer than 10 characters: only its beginning is "
        "shown). Call read_file with offset=2 to read more.]"
    )
    assert call(read_file, rt, path="long.txt", max_chars=10).endswith(
        "[Truncated: line 1 of long.txt is longer than 10 characters; showed its beginning. "
        "Call read_file with offset=2 to read the lines after it.]"
    )


def test_read_file_window_line_endings(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "crlf.txt").write_bytes(b"a\r\nb\r\nc")  # CRLF lines, no newline at the end; a lone \r is no line end
    assert call(read_file, rt, path="crlf.txt", offset=2) == (
        "b\r\nc\n\n[Lines 2-3 of 3 in crlf.txt; the end of the file.]"
    )
    (tmp_path / "cr.txt").write_bytes(b"a\rb\nc\n")
    assert call(read_file, rt, path="cr.txt", offset=2) == "c\n\n[Lines 2-2 of 2 in cr.txt; the end of the file.]"
    (tmp_path / "empty.txt").write_text("")
    assert call(read_file, rt, path="empty.txt", offset=1, limit=5) == "[The file is empty.]"


def test_read_file_window_of_a_long_file_skips_in_bounded_reads(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 200_001)))
    out = call(read_file, rt, path="big.txt", offset=150_000, limit=2)
    assert out == "150000\n150001\n\n[Lines 150000-150001 of 200000 in big.txt. Call read_file with offset=150002 " \
        "to read more.]"


# -- edit_file -------------------------------------------------------------------------
def test_edit_file_replaces_one_exact_occurrence(tmp_path: Path, rt: ToolRuntime) -> None:
    target = tmp_path / "a.py"
    target.write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    target.chmod(0o640)
    inode = target.stat().st_ino
    assert call(edit_file, rt, path="a.py", old="    return 1\n", new="    x = 1\n    return x\n") == (
        "Replaced 1 occurrence in a.py at line 2 (1 line(s) replaced by 2)."
    )
    assert target.read_text() == "def f():\n    x = 1\n    return x\n\n\ndef g():\n    return 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # permissions kept
    assert target.stat().st_ino != inode  # replaced by a rename, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]  # no temporary file left
    assert call(edit_file, rt, path="a.py", old="\n\n\ndef g", new="") == (
        "Replaced 1 occurrence in a.py at line 3 (4 line(s) replaced by 0)."
    )


def test_edit_file_several_occurrences(tmp_path: Path, rt: ToolRuntime) -> None:
    target = tmp_path / "n.md"
    target.write_text("TODO a\nok\nTODO b\nTODO c\n")
    with pytest.raises(ToolError, match=r"old text occurs 3 times in 'n.md'; nothing changed\. Give more context"):
        call(edit_file, rt, path="n.md", old="TODO", new="DONE")
    assert target.read_text() == "TODO a\nok\nTODO b\nTODO c\n"
    assert call(edit_file, rt, path="n.md", old="TODO", new="DONE", replace_all=True) == (
        "Replaced 3 occurrences in n.md (the first at line 1)."
    )
    assert target.read_text() == "DONE a\nok\nDONE b\nDONE c\n"


@pytest.mark.parametrize(
    ("content", "old", "hint"),
    [
        (b"def f():\n    return 1\n", "retrun 1", r"the closest line is 2: 'return 1'"),
        (b"a = 1\nb = 2\n", "  b = 2  ", r"it occurs at line 2 without the leading/trailing whitespace"),
        (b"one\r\ntwo\r\n", "one\ntwo", r"Windows line endings"),
        (b"alpha\n", "zzzzzz", r"read the file again and copy the text exactly"),
    ],
)
def test_edit_file_old_text_not_found(tmp_path: Path, rt: ToolRuntime, content: bytes, old: str, hint: str) -> None:
    (tmp_path / "f.txt").write_bytes(content)
    with pytest.raises(ToolError, match=r"old text not found in 'f.txt'; nothing changed \(.*" + hint):
        call(edit_file, rt, path="f.txt", old=old, new="x")
    assert (tmp_path / "f.txt").read_bytes() == content


def test_edit_file_errors(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "t.txt").write_text("text")
    (tmp_path / "bin.dat").write_bytes(b"ab\x00cd")
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    (tmp_path / "dir").mkdir()
    cases = [
        ({"path": "t.txt", "old": "", "new": "x"}, "old is empty"),
        ({"path": "t.txt", "old": "text", "new": "text"}, "old and new are the same"),
        ({"path": "missing.txt", "old": "a", "new": "b"}, "does not exist"),
        ({"path": "dir", "old": "a", "new": "b"}, "is a directory"),
        ({"path": "bin.dat", "old": "ab", "new": "x"}, "binary file; edit_file only edits text"),
        ({"path": "latin.txt", "old": "caf", "new": "x"}, "not UTF-8 text"),
        ({"path": "../t.txt", "old": "a", "new": "b"}, "outside the workspace"),
    ]
    for args, error in cases:
        with pytest.raises(ToolError, match=error):
            call(edit_file, rt, **args)
    assert (tmp_path / "t.txt").read_text() == "text"
    assert (tmp_path / "latin.txt").read_bytes() == "café".encode("latin-1")


def test_edit_file_respects_max_write_bytes(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path, max_write_bytes=20)
    (tmp_path / "small.txt").write_text("0123456789")
    with pytest.raises(ToolError, match=r"the edited content is 28 bytes, more than this run's max_write_bytes \(20\)"):
        call(edit_file, runtime, path="small.txt", old="9", new="9" * 19)
    assert (tmp_path / "small.txt").read_text() == "0123456789"
    (tmp_path / "big.txt").write_text("x" * 21)
    with pytest.raises(ToolError, match=r"'big.txt' is 21 bytes, more than this run's max_write_bytes \(20\)"):
        call(edit_file, runtime, path="big.txt", old="x", new="y", replace_all=True)
    assert (tmp_path / "big.txt").read_text() == "x" * 21


# -- glob -------------------------------------------------------------------------------
@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ["a.py", "b.txt", ".hidden.py", "src/c.py", "src/pkg/d.py", "src/pkg/e.md", "docs/f.md"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"content of {rel}\n")
    return tmp_path


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", ".", [".hidden.py", "a.py"]),
        ("**/*.py", ".", [".hidden.py", "a.py", "src/c.py", "src/pkg/d.py"]),
        ("src/**/*.py", ".", ["src/c.py", "src/pkg/d.py"]),
        ("**/*.md", "src", ["src/pkg/e.md"]),
        ("*", "src", ["src/c.py", "src/pkg/"]),
        ("src/*", ".", ["src/c.py", "src/pkg/"]),
        ("?.txt", ".", ["b.txt"]),
        ("[ab].*", ".", ["a.py", "b.txt"]),
        ("**/pkg", ".", ["src/pkg/"]),
        ("./docs//*.md", ".", ["docs/f.md"]),
    ],
)
def test_glob_matches(tree: Path, rt: ToolRuntime, pattern: str, path: str, expected: list[str]) -> None:
    assert call(glob_files, rt, pattern=pattern, path=path).splitlines() == expected


def test_glob_no_match_and_errors(tree: Path, rt: ToolRuntime) -> None:
    assert call(glob_files, rt, pattern="*.rs") == "[No paths match '*.rs' in the workspace.]"
    assert call(glob_files, rt, pattern="*.rs", path="src") == "[No paths match '*.rs' in 'src'.]"
    for pattern, error in [("", "Empty glob pattern"), ("../*", r"outside the folder \('..'\)"),
                           ("src/../../x", "outside the folder"), ("/etc/*", "is absolute"), ("~/x", "is absolute")]:
        with pytest.raises(ToolError, match=error):
            call(glob_files, rt, pattern=pattern)
    with pytest.raises(ToolError, match="does not exist"):
        call(glob_files, rt, pattern="*", path="nope")
    with pytest.raises(ToolError, match="'a.py' is a file, not a folder"):
        call(glob_files, rt, pattern="*", path="a.py")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(glob_files, rt, pattern="*", path="..")


def test_glob_caps_its_output(tmp_path: Path, rt: ToolRuntime) -> None:
    for i in range(file_search.MAX_GLOB_RESULTS + 7):
        (tmp_path / f"f{i:04d}.txt").touch()
    lines = call(glob_files, rt, pattern="*.txt").split("\n")
    assert lines[:2] == ["f0000.txt", "f0001.txt"] and len(lines) == file_search.MAX_GLOB_RESULTS + 2
    assert lines[-1] == "[... and 7 more matches not shown; use a narrower pattern.]"


def test_glob_matcher_prunes_folders() -> None:
    m = GlobMatcher(parse_glob("src/*/test_*.py"))
    assert m.matches(("src", "pkg", "test_a.py")) and not m.matches(("src", "test_a.py"))
    assert m.may_match_below(("src",)) and m.may_match_below(("src", "pkg"))
    assert not m.may_match_below(("docs",)) and not m.may_match_below(("src", "pkg", "deeper"))
    anywhere = GlobMatcher(parse_glob("**/x"))
    assert anywhere.matches(("x",)) and anywhere.matches(("a", "b", "x")) and anywhere.may_match_below(("a", "b"))
    assert parse_glob("a/**/**/b") == ("a", "**", "b")


# -- grep -------------------------------------------------------------------------------
def test_grep_lines(tree: Path, rt: ToolRuntime) -> None:
    (tree / "src" / "pkg" / "d.py").write_text("import os\n\ndef read_file(path):\n    return OPEN(path)\n")
    assert call(grep_files, rt, pattern=r"def \w+\(") == "src/pkg/d.py:3: def read_file(path):"
    assert call(grep_files, rt, pattern="open", ignore_case=True) == "src/pkg/d.py:4:     return OPEN(path)"
    assert call(grep_files, rt, pattern="content of").splitlines() == [
        ".hidden.py:1: content of .hidden.py", "a.py:1: content of a.py", "b.txt:1: content of b.txt",
        "docs/f.md:1: content of docs/f.md", "src/c.py:1: content of src/c.py",
        "src/pkg/e.md:1: content of src/pkg/e.md",
    ]
    assert call(grep_files, rt, pattern="content", glob="*.md").splitlines() == [
        "docs/f.md:1: content of docs/f.md", "src/pkg/e.md:1: content of src/pkg/e.md",
    ]
    assert call(grep_files, rt, pattern="content", path="src", glob="pkg/*").splitlines() == [
        "src/pkg/e.md:1: content of src/pkg/e.md",
    ]
    assert call(grep_files, rt, pattern="^import", path="src/pkg/d.py") == "src/pkg/d.py:1: import os"
    assert call(grep_files, rt, pattern="nothing here") == "[No matches for 'nothing here' in the workspace.]"


def test_grep_bounds_its_output(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 30)
    out = call(grep_files, rt, pattern="hit", max_results=5)
    assert out.split("\n\n")[0].splitlines() == [f"many.txt:{i}: hit" for i in range(1, 6)]
    assert "[Showing the first 5 matches; there are more." in out
    assert call(grep_files, rt, pattern="hit", max_results=30).count("many.txt:") == 30
    assert "Showing the first" not in call(grep_files, rt, pattern="hit", max_results=30)
    (tmp_path / "wide.txt").write_text("a" * 1000 + "NEEDLE" + "b" * 1000 + "\n")
    shown = call(grep_files, rt, pattern="NEEDLE", path="wide.txt").split(": ", 1)[1]
    assert shown.startswith("…a") and shown.endswith("b…") and "NEEDLE" in shown
    assert len(shown) == file_search.MAX_SHOWN_LINE_CHARS + 2


def test_grep_skips_binary_and_reads_crlf_and_bad_utf8(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "a.bin").write_bytes(b"key\x00key")
    (tmp_path / "b.txt").write_bytes(b"key=1\r\nother\r\n")
    (tmp_path / "c.txt").write_bytes(b"caf\xe9 key\n")
    assert call(grep_files, rt, pattern=r"key\S*$") == (
        "b.txt:1: key=1\nc.txt:1: caf\ufffd key\n\n[1 binary files skipped.]"
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"pattern": "("}, r"Invalid regular expression '\(': missing \)"),
        ({"pattern": "a{2,1}"}, "Invalid regular expression"),
        ({"pattern": ""}, "Empty pattern"),
        ({"pattern": "x" * 1001}, "at most 1000"),
        ({"pattern": "x", "glob": "../*"}, "outside the folder"),
        ({"pattern": "x", "path": "/etc"}, "outside the workspace"),
    ],
)
def test_grep_errors(tmp_path: Path, rt: ToolRuntime, args: dict[str, Any], error: str) -> None:
    with pytest.raises(ToolError, match=error):
        call(grep_files, rt, **args)


# -- registry, planner, CLI ---------------------------------------------------------------------
def test_planner_and_cli_list_the_new_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    registry = default_registry(plugins_folder=tmp_path / "none", entry_points=False)
    listing = describe_tools(registry)
    for name, argument in [("edit_file", '"replace_all"'), ("glob", '"pattern"'), ("grep", '"ignore_case"'),
                           ("read_file", '"limit"')]:
        line = next(i for i, text in enumerate(listing.splitlines()) if text.startswith(f"- {name}:"))
        assert argument in listing.splitlines()[line + 1]
    assert "- edit_file: Edit a text file" in listing and "[has side effects]" in listing.split("- edit_file:")[1]
    assert main(["tools", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["edit_file"]["meta"]["side_effects"] is True
    assert rows["glob"]["meta"]["side_effects"] is False and rows["grep"]["meta"]["side_effects"] is False


def test_grep_and_glob_on_a_walk_that_is_cut_short(tmp_path: Path, rt: ToolRuntime,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        (tmp_path / f"f{i:02d}.txt").write_text("x\n")
    monkeypatch.setattr(file_search, "WalkLimits", functools.partial(WalkLimits, max_entries=10))
    out = call(glob_files, rt, pattern="*.txt")
    assert out.splitlines()[:10] == [f"f{i:02d}.txt" for i in range(10)] and "f10.txt" not in out
    assert out.endswith("[Incomplete: the walk stopped after 10 entries; search a smaller folder.]")
    out = call(grep_files, rt, pattern="x")
    assert out.count(": x") == 10 and "f10.txt" not in out
    assert out.endswith("[Incomplete: the walk stopped after 10 entries; search a smaller folder.]")
