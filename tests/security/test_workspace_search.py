"""Attack: the model uses the code and document tools - edit_file, glob, grep and read_file's
line windows - to reach outside the workspace (``..``, absolute paths, symbolic links inside
it pointing out, a link swapped in during a walk or an edit, a hard link to an outside file),
to read or change protected folders (.git, .smart-agent, the data and plugins folders), or to
exhaust the process (a huge file, a regular expression that backtracks exponentially).
The tools are called the way the tools node calls them (injected runtime)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from tool_support import function_of

from smart_agent.tools import file_search
from smart_agent.tools.file_edit import edit_file
from smart_agent.tools.file_search import glob_files, grep_files
from smart_agent.tools.files import read_file
from smart_agent.tools.guards import ToolError

from .test_workspace_races import OUTSIDE_SECRET, exchange, runtime

# The functions under the tools, called directly (the tools node injects the runtime the same way).
edit_file_fn = function_of(edit_file)
glob_files_fn = function_of(glob_files)
grep_files_fn = function_of(grep_files)
read_file_fn = function_of(read_file)

SWAP_ROUNDS = 300


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(OUTSIDE_SECRET + "\n")
    (outside / "victim.txt").write_text("original\n")
    (ws / "inside.txt").write_text("inside text\n")
    return ws, outside


def search_calls(rt: ToolRuntime) -> list[Any]:
    return [
        lambda: glob_files_fn("**/*", runtime=rt),
        lambda: glob_files_fn("**/secret.txt", runtime=rt),
        lambda: grep_files_fn("SECRE[T]|origina[l]", runtime=rt),
        lambda: grep_files_fn("SECRE[T]", glob="*.txt", runtime=rt),
    ]


@pytest.mark.unit
@pytest.mark.parametrize(
    "attempt",
    [
        lambda rt: glob_files_fn("../outside/*", runtime=rt),
        lambda rt: glob_files_fn("**/../../outside/*", runtime=rt),
        lambda rt: glob_files_fn("/etc/*", runtime=rt),
        lambda rt: glob_files_fn("*", path="..", runtime=rt),
        lambda rt: glob_files_fn("*", path="/etc", runtime=rt),
        lambda rt: grep_files_fn("root", path="/etc/passwd", runtime=rt),
        lambda rt: grep_files_fn("SECRET", path="../outside", runtime=rt),
        lambda rt: grep_files_fn("SECRET", glob="../outside/*", runtime=rt),
        lambda rt: grep_files_fn("SECRET", path="~", runtime=rt),
        lambda rt: edit_file_fn("../outside/victim.txt", "original", "pwned", runtime=rt),
        lambda rt: edit_file_fn("/etc/hostname", "a", "b", runtime=rt),
        lambda rt: read_file_fn("../outside/secret.txt", offset=1, limit=1, runtime=rt),
    ],
)
def test_traversal_and_absolute_paths_are_refused(dirs: tuple[Path, Path], attempt: Any) -> None:
    ws, outside = dirs
    with pytest.raises(ToolError, match="outside|absolute|Refused"):
        attempt(runtime(ws))
    assert (outside / "victim.txt").read_text() == "original\n"


@pytest.mark.unit
def test_symlinks_pointing_out_are_never_followed(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    rt = runtime(ws)
    (ws / "sub").mkdir()
    (ws / "sub" / "out").symlink_to(outside, target_is_directory=True)
    (ws / "out").symlink_to(outside, target_is_directory=True)
    (ws / "victim.txt").symlink_to(outside / "victim.txt")
    (ws / "secret.txt").symlink_to(outside / "secret.txt")
    listed = glob_files_fn("**/*", runtime=rt)
    assert listed.splitlines() == [
        "inside.txt", "out (symbolic link; not followed)", "secret.txt (symbolic link; not followed)", "sub/",
        "sub/out (symbolic link; not followed)", "victim.txt (symbolic link; not followed)",
    ]
    assert "[No paths match" in glob_files_fn("**/secret.txt/*", runtime=rt)
    assert "[No paths match" in glob_files_fn("out/*", runtime=rt)
    found = grep_files_fn("SECRET|original", runtime=rt)
    assert found.startswith("[No matches") and "[4 symbolic links not followed.]" in found
    for attempt in [
        lambda: grep_files_fn("SECRET", path="out", runtime=rt),
        lambda: grep_files_fn("SECRET", path="secret.txt", runtime=rt),
        lambda: grep_files_fn("SECRET", path="sub/out/secret.txt", runtime=rt),
        lambda: glob_files_fn("*", path="sub/out", runtime=rt),
        lambda: edit_file_fn("victim.txt", "original", "pwned", runtime=rt),
        lambda: edit_file_fn("out/victim.txt", "original", "pwned", runtime=rt),
        lambda: read_file_fn("secret.txt", offset=1, limit=1, runtime=rt),
    ]:
        with pytest.raises(ToolError, match="symbolic link; refused|outside the workspace"):
            attempt()
    assert (outside / "victim.txt").read_text() == "original\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "victim.txt"]


@pytest.mark.unit
def test_hard_link_to_an_outside_file_is_not_edited(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    os.link(outside / "victim.txt", ws / "notes.txt")
    with pytest.raises(ToolError, match="hard links"):
        edit_file_fn("notes.txt", "original", "pwned", runtime=runtime(ws))
    assert (outside / "victim.txt").read_text() == "original\n"
    assert (ws / "notes.txt").read_text() == "original\n"
    assert sorted(p.name for p in ws.iterdir()) == ["inside.txt", "notes.txt"]  # no temporary file left


@pytest.mark.unit
def test_protected_folders_are_never_searched_listed_or_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    for rel in [".git/config", ".GIT/hooks/x", "sub/.git/config", ".smart-agent/sessions.sqlite",
                "sub/.Smart-Agent/plugins/p.py", "state/memory.txt", "plugins-dir/evil.py"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("token = SECRET\n")
    (ws / "notes.txt").write_text("token = visible\n")
    monkeypatch.setenv("SMART_AGENT_HOME", str(ws / "state"))
    monkeypatch.setenv("SMART_AGENT_PLUGINS", str(ws / "plugins-dir"))
    rt = runtime(ws)
    assert glob_files_fn("**/*", runtime=rt) == "notes.txt\nsub/"
    assert glob_files_fn("**/config", runtime=rt).startswith("[No paths match")
    assert glob_files_fn(".git/*", runtime=rt).startswith("[No paths match")
    assert grep_files_fn("token", runtime=rt) == "notes.txt:1: token = visible"
    assert grep_files_fn("token", glob="**/*", runtime=rt) == "notes.txt:1: token = visible"
    for path in [".git", ".git/config", "sub/.git", ".smart-agent", "state", "plugins-dir", "sub/.smart-agent"]:
        with pytest.raises(ToolError, match="protected folder"):
            grep_files_fn("SECRET", path=path, runtime=rt)
        with pytest.raises(ToolError, match="protected folder"):
            glob_files_fn("*", path=path, runtime=rt)
    for path in [".git/config", "state/memory.txt", "plugins-dir/evil.py", ".smart-agent/sessions.sqlite"]:
        with pytest.raises(ToolError, match="protected folder"):
            edit_file_fn(path, "SECRET", "pwned", runtime=rt)
        with pytest.raises(ToolError, match="protected folder"):
            read_file_fn(path, offset=1, limit=1, runtime=rt)
    assert (ws / ".git" / "config").read_text() == "token = SECRET\n"
    assert (ws / "state" / "memory.txt").read_text() == "token = SECRET\n"


@pytest.mark.unit
def test_a_huge_file_is_searched_only_up_to_the_caps(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    ws, _ = dirs
    rt = runtime(ws)
    with open(ws / "huge.log", "w") as f:  # 6 MB of lines, the only match after the per-file cap
        f.write("filler line\n" * (6_000_000 // 12))
        f.write("NEEDLE at the end\n")
    out = grep_files_fn("NEEDLE", runtime=rt)
    assert out.startswith("[No matches") and f"at most {file_search.MAX_FILE_BYTES} bytes each" in out
    # read_file's line window reaches the end without returning the whole file
    last = read_file_fn("huge.log", offset=500_001, limit=5, runtime=rt)
    assert last == "NEEDLE at the end\n\n[Lines 500001-500001 of 500001 in huge.log; the end of the file.]"
    # the total cap: files after it are not read at all
    monkeypatch.setattr(file_search, "MAX_TOTAL_BYTES", 1_000_000)
    for name in ["a.txt", "b.txt", "c.txt"]:
        (ws / name).write_text("x" * 599_999 + "\nNEEDLE\n")
    out = grep_files_fn("NEEDLE", glob="?.txt", runtime=rt)
    assert out.splitlines()[0] == "a.txt:2: NEEDLE" and "c.txt" not in out
    assert "[Incomplete: stopped after reading 1000000 bytes" in out


PATHOLOGICAL = """
import sys
from langchain.tools import ToolRuntime
from smart_agent.config.context import Context
from smart_agent.tools.file_search import grep_files
rt = ToolRuntime(state={}, context=Context(workspace=sys.argv[1], memory=False, tool_timeout_s=1), config={},
                 stream_writer=lambda x: None, tool_call_id="c1", store=None)
print(grep_files.func(r"me$|(x+x+)+y", runtime=rt))
"""


@pytest.mark.e2e  # a separate process: a search that holds the GIL could not be timed out from a thread
def test_pathological_regex_is_stopped_before_the_tool_timeout(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    (ws / "a.txt").write_text("match me\n" + "x" * 5000 + "\n")
    try:  # the run's tool timeout is 1 s; 60 s only keeps a runaway search from hanging the suite
        done = subprocess.run([sys.executable, "-c", PATHOLOGICAL, str(ws)], capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("grep kept backtracking past the run's tool timeout")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("a.txt:1: match me\n\n[Incomplete: the pattern took too long (at a.txt:2)")


@pytest.mark.unit
def test_a_fifo_in_the_workspace_does_not_block_a_search(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    os.mkfifo(ws / "pipe.txt")
    rt = runtime(ws, tool_timeout_s=5)
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(out=grep_files_fn("text", runtime=rt)), daemon=True)
    thread.start()
    thread.join(timeout=5 + 10)
    try:
        assert not thread.is_alive(), "grep blocked on a FIFO"
        assert box["out"] == "inside.txt:1: inside text"
        assert glob_files_fn("*.txt", runtime=rt) == "inside.txt\npipe.txt"
    finally:
        if thread.is_alive():
            os.close(os.open(ws / "pipe.txt", os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.e2e  # 300 rounds of 5 calls against a swapping thread: ~5 s, so only in the full run
def test_symlink_swapped_during_walks_and_edits_never_leaks_or_writes_outside(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    rt = runtime(ws)
    real = ws / "real"
    real.mkdir()
    (real / "secret.txt").write_text("inside secret\n")
    (ws / "d").symlink_to(outside, target_is_directory=True)
    (ws / "f.txt").write_text("inside file\n")
    (ws / "f.link").symlink_to(outside / "victim.txt")
    stop = threading.Event()
    swaps, swap_errors = [0], []

    def swapper() -> None:  # atomically exchange a real folder / file with a link to the outside, over and over
        try:
            while not stop.is_set():
                exchange(ws / "d", real)
                exchange(ws / "f.txt", ws / "f.link")
                swaps[0] += 1
        except OSError as exc:
            swap_errors.append(exc)

    outcomes = {"ok": 0, "refused": 0, "edited": 0}
    leaks: list[str] = []
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen every race window
    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for _ in range(SWAP_ROUNDS):
            for call in [*search_calls(rt), lambda: edit_file_fn("f.txt", "\n", " x\n", runtime=rt)]:
                try:
                    result = call()
                except ToolError:
                    outcomes["refused"] += 1
                    continue
                outcomes["ok"] += 1
                outcomes["edited"] += result.startswith("Replaced")
                if any(word in result for word in (OUTSIDE_SECRET, "original", "victim")):  # only outside
                    leaks.append(result)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old_interval)

    assert swap_errors == []
    assert leaks == []
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "victim.txt"]
    assert (outside / "victim.txt").read_text() == "original\n"
    assert (outside / "secret.txt").read_text() == OUTSIDE_SECRET + "\n"
    # the race was really run: links were swapped while calls both succeeded and were refused, and edits landed
    assert swaps[0] > 0 and outcomes["ok"] > 0 and outcomes["refused"] > 0 and outcomes["edited"] > 0, (
        swaps, outcomes)
